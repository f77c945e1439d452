#pragma once
// kiln.Attention as cuDNN's fused attention (cuda_sdpa_attention.cpp): one SDPA operation graph
// (cudnn_sdpa_graph.h) whose engine configs are offered beside the flash kernel's tactics and the
// two-product step; cuda_attention.cpp registers the op and hands these tactics to this file's step.
#include "../../backend.h"
#include "../cuda_device.h"

#include <memory>
#include <vector>

namespace kiln::cuda {

// "cudnn.sdpa.<fp16|bf16>.c<i>": the heuristics' engine configs for the layer's graph (up to
// inputs.candidateBudget), the payload the engine choice, so a plan runs the config its build timed.
// Where cuDNN cannot take an fp16 / bf16 layer (a mask, head dims, a layout), one tactic
// "cudnn.sdpa.<prec>" marked unavailable with the reason; nothing for fp32 / tf32 layers.
std::vector<Tactic> sdpaAttentionTactics(const Layer& layer, Precision precision, const LayerInputs& inputs,
                                         CudaDevice& device);
bool isSdpaAttentionTactic(const Tactic& tactic);
std::unique_ptr<Step> makeSdpaAttentionStep(const Layer& layer, const Tactic& tactic, const LayerSignature& signature,
                                            CudaDevice& device);

}  // namespace kiln::cuda
