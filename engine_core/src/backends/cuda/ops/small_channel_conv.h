#pragma once
// Conv and kiln.FusedConv with few input channels (C <= 8: the RGB stem of ResNet and its kin) on
// Kiln's own tensor-core kernel (kernels/cuda/conv/small_channel_conv.h), float16 and bfloat16,
// bias and activation fused (no residual). cuDNN pads such an input to 8 channels and multiplies
// mostly zeros; the builder times this tactic against cuDNN's and the faster wins. The step reads
// X linear or channels-last and writes Y either way as the plan says, with no workspace.
#include "../../backend.h"
#include "../cuda_device.h"

#include <memory>
#include <string>
#include <vector>

namespace kiln::cuda {

// "kiln.conv.smallc.<fp16|bf16>" where the kernel takes the layer at these dims, else nothing.
std::vector<Tactic> smallChannelConvTactics(const Layer& layer, Precision precision, const LayerInputs& inputs);

bool isSmallChannelConvTactic(const std::string& tacticId);

std::unique_ptr<Step> makeSmallChannelConvStep(const Layer& layer, const Tactic& tactic,
                                               const LayerSignature& signature, CudaDevice& device);

}  // namespace kiln::cuda
