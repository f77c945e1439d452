#pragma once
// kiln.QuantizedConv in int8 or fp8 e4m3 as one cuDNN operation graph (cudnn_conv_graph.h),
// channels-last: an implicit-GEMM 8-bit convolution (int8 sums exact in int32, fp8 in fp32),
// dequantized per output channel with the bias, residual and activation in the same kernel, written
// as float32 / float16 / bfloat16 or as the 8-bit type again. No im2col copy of the input and no
// sums in memory, which is what the cuBLASLt form pays. Symmetric only (no zero points; uint8
// activations keep the cuBLASLt form). The tactics are the heuristics' engine configs
// ("cudnn.int8conv.<storage>.c0", "cudnn.fp8conv.<storage>.c0", ...), timed by the builder against
// the cuBLASLt ones; the payload keeps the engine and knobs.
#include "../../backend.h"
#include "../cuda_device.h"

#include <memory>
#include <string>
#include <vector>

namespace kiln::cuda {

// The graph tactics for this layer at these input dims, best guess first; empty where they do not
// apply or cuDNN has no engine for the graph.
std::vector<Tactic> quantizedGraphConvTactics(const Layer& layer, const LayerInputs& inputs, CudaDevice& device);

bool isQuantizedGraphConvTactic(const std::string& tacticId);

std::unique_ptr<Step> makeQuantizedGraphConvStep(const Layer& layer, const Tactic& tactic,
                                                 const LayerSignature& signature, CudaDevice& device);

}  // namespace kiln::cuda
