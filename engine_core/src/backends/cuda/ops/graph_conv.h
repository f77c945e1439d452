#pragma once
// Conv and kiln.FusedConv in float16 / bfloat16 (float32 in TF32 builds) as one cuDNN operation
// graph each (conv + bias + residual + activation, cudnn_conv_graph.h), channels-last. The tactics are the heuristics'
// engine configs ("cudnn.graph.conv.fp16.c0", ...), each timed by the builder; the payload keeps the engine and knobs,
// so a plan runs the config its build timed. The step takes its input, output and residual linear or channels-last as
// the plan says (re-laying out a linear one in its workspace), so it runs anywhere; the engine keeps chains of these
// convolutions channels-last.
#include "../../backend.h"
#include "../cuda_device.h"

#include <memory>
#include <string>
#include <vector>

namespace kiln::cuda {

// The graph tactics for this layer at these input dims, best guess first; empty where the graph
// does not apply (another precision, groups, 1-D / 3-D, a weight that is not constant, channel
// counts cuDNN's fused engines do not take, or no engine config cuDNN accepts).
std::vector<Tactic> graphConvTactics(const Layer& layer, Precision precision, const LayerInputs& inputs,
                                     CudaDevice& device);

bool isGraphConvTactic(const std::string& tacticId);

std::unique_ptr<Step> makeGraphConvStep(const Layer& layer, const Tactic& tactic, const LayerSignature& signature,
                                        CudaDevice& device);

}  // namespace kiln::cuda
