// CPU kernels of Resize and Upsample over kernels/cpu/resize.
#include "../../common/tensor_shape_ops.h"
#include "tensor_shape_kernels.h"

#include <kernels/cpu/resize/resize.h>

namespace kiln::tensor_shape {
namespace {

using kernels::ResizeMode;

void resizeKernel(KernelContext& ctx) {
  const HostTensor& in = ctx.input(0);
  HostTensor& out = ctx.allocateOutput(0);
  if (out.elementCount() == 0) return;
  if (in.elementCount() == 0) ctx.fail("cannot resize an empty input of shape " + dimsToString(in.dims()));
  auto geometry = *resizeGeometry(ctx.layer(), in.dims(), valuesOf(ctx));
  kernels::ResizeOptions options = resizeOptionsOf(ctx.layer());
  std::vector<kernels::AxisSampling> axes;
  for (size_t d = 0; d < in.rank(); ++d)
    axes.push_back(kernels::sampleAxis(in.dim(d), out.dim(d), geometry.scales[d], geometry.roiStart[d],
                                       geometry.roiEnd[d], options));
  float extrapolation = ctx.layer().attrFloat("extrapolation_value", 0.0f);
  if (options.mode != ResizeMode::kNearest) {
    dispatchFloat(in.dtype(), [&](auto tag) {
      using T = decltype(tag);
      kernels::resizeInterpolate(in.data<T>(), in.dims(), out.data<T>(), out.dims(), axes, extrapolation);
    });
    return;
  }
  HostTensor fill(in.dtype(), {});  // the extrapolation value in the data's type
  dispatchAny(in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, std::string>) fill.data<T>()[0] = kernels::fromFloat<T>(extrapolation);
  });
  dispatchStorage(in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    kernels::resizeNearest(elementsAs<T>(in), in.dims(), elementsAs<T>(out), out.dims(), axes, elementsAs<T>(fill)[0]);
  });
}

}  // namespace

void registerResizeKernels(CpuKernelRegistry& registry) {
  registry.add("Resize", resizeKernel);
  registry.add("Upsample", resizeKernel);
}

}  // namespace kiln::tensor_shape
