#pragma once
// Helpers shared by the conv_pool and normalization CPU kernels: float16 / bfloat16 tensors are
// computed in float32, and small parameter tensors are read as float vectors.
#include "../../common/conv_geometry.h"
#include "../cpu_kernel.h"
#include "../dispatch.h"

#include <kernels/cpu/conv/conv.h>

#include <type_traits>
#include <vector>

namespace kiln {

// A float tensor converted to `type` (float16, bfloat16, float32 or float64); shares storage when it
// already has that type.
HostTensor convertFloatTensor(const HostTensor& t, DataType type);
// Converts into an allocated tensor of the same shape.
void convertFloatInto(const HostTensor& t, HostTensor& out);

// Conv / ConvInteger / QLinearConv geometry for X[N, C, in...] and W[M, C/group, k...] (also used
// by the fused convolution kernel); the dims form is in backends/common/conv_geometry.h.
kernels::ConvShape forwardConvShape(const Layer& layer, const HostTensor& x, const HostTensor& w);

// All values as float32 (per-channel parameters, rois, scales).
std::vector<float> floatValues(const HostTensor& t);

// Allocates output i (a float type) and fills it with `values` (skipped when the output is unused).
void setFloatOutput(KernelContext& ctx, size_t i, const std::vector<float>& values);

// Calls compute(tag) with the type to compute in: the dtype itself for float32 / float64, float32
// for float16 / bfloat16. Inputs are converted with convertFloatTensor(t, computeType).
template <class Fn>
void withFloatComputeType(DataType dtype, Fn&& compute) {
  dispatchFloat(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, double>) compute(double{});
    else compute(float{});
  });
}

// Allocates output i and runs fill(result) on a tensor of the compute type; when that differs from
// the output's type the result is converted into the output.
template <class Fn>
void computeOutput(KernelContext& ctx, size_t i, DataType computeType, Fn&& fill) {
  HostTensor& out = ctx.allocateOutput(i);
  if (out.dtype() == computeType) return fill(out);
  HostTensor wide(computeType, out.dims());
  fill(wide);
  convertFloatInto(wide, out);
}

}  // namespace kiln
