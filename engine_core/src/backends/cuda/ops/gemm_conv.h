#pragma once
// Pointwise convolutions (1x1 filter, no padding, one group: ResNet's bottleneck reductions and
// expansions, MobileNet's and EfficientNet's projections) as one cuBLASLt product on channels-last
// activations: Y[N·H·W, K] = X[N·H·W, C] · Wᵀ. A strided one (ResNet's downsampling shortcuts) or a
// patch embedding (ViT's 16x16 stride-16 stem: unpadded windows that do not overlap) first gathers
// each output pixel's patch into a dense [N·H'·W', C·kh·kw] copy in the workspace (ids
// "cublaslt.conv.patch.*" for patches wider than 1x1), with the bias, ReLU / GELU and a
// residual added before the activation inside cuBLASLt's epilogue (the residual as its C). cuDNN's
// fused graphs run these memory-bound layers well below the bandwidth a GEMM's persistent kernels
// reach; the builder times both. The tactics are cublaslt_candidates.h's algorithms at the layer's
// dims ("cublaslt.conv1x1.fp16.h0", "...h0.k4"; their algorithm in the payload) and, for fp16 / bf16
// layers of 8 to 128 input channels, Kiln's narrow pointwise kernel ("kiln.conv1x1.narrow.fp16",
// kernels/cuda/conv/narrow_pointwise_conv.h: every activation and the residual fused, where
// cuBLASLt's epilogue lacks SiLU and HardSwish). A linear input, residual or output goes through an NHWC copy in the
// workspace, so the step is right whatever formats the plan gives it.
#include "../../backend.h"
#include "../cuda_device.h"

#include <memory>
#include <string>
#include <vector>

namespace kiln::cuda {

// The product's tactics for this layer at these input dims; empty where the layer is not a
// pointwise or patch forward convolution with a constant filter, or neither cuBLASLt nor the narrow kernel
// takes it.
std::vector<Tactic> gemmConvTactics(const Layer& layer, Precision precision, const LayerInputs& inputs,
                                    CudaDevice& device);

// A cuBLASLt 1x1 or patch tactic or the narrow kernel's (all are this step's).
bool isGemmConvTactic(const std::string& tacticId);

std::unique_ptr<Step> makeGemmConvStep(const Layer& layer, const Tactic& tactic, const LayerSignature& signature,
                                       CudaDevice& device);

}  // namespace kiln::cuda
