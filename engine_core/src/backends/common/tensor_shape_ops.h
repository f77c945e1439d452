#pragma once
// How a tensor_shape layer's attributes choose its kernel's mode (Pad's mode, the scatter
// reduction, Resize's interpolation and coordinate rules), read once with ONNX's defaults and opset
// differences, shared by every backend so that the CPU and CUDA kernels compute the same thing.
#include <kiln/network.h>

#include <kernels/cpu/layout/gather_scatter.h>
#include <kernels/cpu/layout/pad.h>
#include <kernels/cpu/resize/resize.h>

namespace kiln {

// Pad's 'mode' (constant, reflect, edge, wrap; constant by default).
kernels::PadMode padModeOf(const Layer& layer);

// ScatterND / ScatterElements' 'reduction' (none, add, mul, max, min; none by default).
kernels::ScatterReduction scatterReductionOf(const Layer& layer);

// Resize / Upsample: mode, coordinate_transformation_mode, nearest_mode, cubic_coeff_a,
// exclude_outside and antialias. Upsample and Resize before opset 11 have none of the coordinate
// attributes: asymmetric coordinates and the floor / ceil nearest rule.
kernels::ResizeOptions resizeOptionsOf(const Layer& layer);

// Compress and Unique select along 'axis', or over the flattened input when it is absent: the
// dims they see ([elements] when flattened) and the axis in them (made non-negative; the schema
// has range-checked it). Also the sizes before and after the axis.
struct SelectionAxis {
  std::vector<int64_t> dims;
  size_t axis = 0;
  int64_t outer = 1, inner = 1;
};
SelectionAxis selectionAxisOf(const Layer& layer, const std::vector<int64_t>& dims);

}  // namespace kiln
