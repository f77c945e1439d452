#pragma once
// The geometry of a convolution layer from its input dims, shared by every backend so that the CPU
// and device kernels compute the same window (pads resolved from auto_pad, output sizes).
#include <kiln/network.h>

#include <kernels/cpu/conv/conv.h>
#include <kernels/cpu/pool/pool.h>

#include <cstdint>
#include <vector>

namespace kiln {

// Conv / ConvInteger / QLinearConv (and a FusedConv's base) over X[N, C, in...] and
// W[M, C/group, k...].
kernels::ConvShape forwardConvShape(const Layer& layer, const std::vector<int64_t>& xDims,
                                    const std::vector<int64_t>& wDims);

// ConvTranspose over X[N, C, in...] and W[C, M/group, k...]: the window is the forward convolution
// from Y back to X (window.in = Y's spatial dims, window.out = X's, padBegin = the padding the
// transposed output drops at the start; padEnd is not set).
kernels::ConvShape transposeConvShape(const Layer& layer, const std::vector<int64_t>& xDims,
                                      const std::vector<int64_t>& wDims);

// RoiAlign's attributes with ONNX's defaults (the tensor sizes are left to the caller): opset 16
// added coordinate_transformation_mode with half_pixel as default; before, coordinates were
// output_half_pixel.
kernels::RoiAlignParams roiAlignAttributes(const Layer& layer);

}  // namespace kiln
