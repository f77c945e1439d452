#pragma once
// Depthwise Conv and kiln.FusedConv (group = input channels = output channels, 2-D, a constant
// filter) on Kiln's own channels-last kernel with the epilogue fused
// (kernels/cuda/conv/depthwise_conv.h), in every float precision. Timed against cuDNN's
// channels-first convolution, it keeps MobileNet's and EfficientNet's NHWC chains unbroken. The
// step takes input, residual and output linear or channels-last as the plan says (re-laying out a
// linear one in its workspace), as the graph convolutions do.
#include "../../backend.h"
#include "../cuda_device.h"

#include <memory>
#include <string>
#include <vector>

namespace kiln::cuda {

// "cuda.conv.depthwise.<precision>" where the layer is depthwise at these dims, else nothing.
std::vector<Tactic> depthwiseConvTactics(const Layer& layer, Precision precision, const LayerInputs& inputs);

bool isDepthwiseConvTactic(const std::string& tacticId);

std::unique_ptr<Step> makeDepthwiseConvStep(const Layer& layer, const Tactic& tactic, const LayerSignature& signature,
                                            CudaDevice& device);

}  // namespace kiln::cuda
