#pragma once
// Sliding-window attributes shared by Conv, ConvTranspose and the pools: read and validated once,
// then used both by shape inference (symbolic dims) and by the CPU kernels (known dims).
#include <kernels/cpu/common/spatial_window.h>
#include <kiln/network.h>

#include <string>
#include <vector>

namespace kiln {

struct WindowAttributes {
  std::vector<int64_t> kernel;  // -1 where the kernel size is not known yet (weights of unknown shape)
  std::vector<int64_t> strides, dilations;
  std::vector<int64_t> pads;  // begins, then ends (2 * rank)
  std::string autoPad = "NOTSET";
  bool ceilMode = false;
  size_t rank() const { return kernel.size(); }
};

// Reads kernel_shape (falling back to `kernelFromWeights` when the attribute is absent), strides,
// dilations, pads, auto_pad and ceil_mode. Throws kiln::Error naming the layer when they are
// malformed or do not have `spatialRank` entries.
WindowAttributes readWindowAttributes(const Layer& layer, size_t spatialRank,
                                      const std::vector<int64_t>& kernelFromWeights = {});

// Output size on spatial axis `axis` of a convolution or pool (unknown when the input or kernel is).
// When known, padBegin/padEnd receive the padding actually applied (auto_pad resolved).
Dim windowOutputDim(const Layer& layer, const WindowAttributes& attrs, size_t axis, const Dim& input,
                    int64_t* padBegin = nullptr, int64_t* padEnd = nullptr);

// Output size on `axis` of a ConvTranspose and the begin padding it implies (output_shape,
// output_padding and auto_pad resolved).
Dim convTransposeOutputDim(const Layer& layer, const WindowAttributes& attrs, size_t axis, const Dim& input,
                           int64_t* padBegin = nullptr);

// MaxUnpool's default output size on `axis`: the input size of the MaxPool it inverts.
int64_t maxUnpoolOutputSize(const WindowAttributes& attrs, size_t axis, int64_t input);

// The kernels' 3-D window of a convolution or pool over known input spatial dims.
kernels::SpatialWindow makeSpatialWindow(const Layer& layer, const WindowAttributes& attrs,
                                         const std::vector<int64_t>& inputSpatial);

}  // namespace kiln
