#include "conv_pool_common.h"

#include <kernels/cpu/common/parallel.h>

namespace kiln {

kernels::ConvShape forwardConvShape(const Layer& layer, const HostTensor& x, const HostTensor& w) {
  return forwardConvShape(layer, x.dims(), w.dims());
}

void convertFloatInto(const HostTensor& t, HostTensor& out) {
  dispatchFloat(t.dtype(), [&](auto fromTag) {
    using From = decltype(fromTag);
    dispatchFloat(out.dtype(), [&](auto toTag) {
      using To = decltype(toTag);
      const From* src = t.data<From>();
      To* dst = out.data<To>();
      kernels::parallelFor(t.elementCount(), 1 << 14, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) dst[i] = To(float(src[i]));
      });
    });
  });
}

HostTensor convertFloatTensor(const HostTensor& t, DataType type) {
  if (t.dtype() == type) return t;
  HostTensor out(type, t.dims());
  convertFloatInto(t, out);
  return out;
}

std::vector<float> floatValues(const HostTensor& t) {
  std::vector<double> values = t.toDoubleVector();
  return std::vector<float>(values.begin(), values.end());
}

void setFloatOutput(KernelContext& ctx, size_t i, const std::vector<float>& values) {
  if (!ctx.hasOutput(i)) return;
  HostTensor& out = ctx.allocateOutput(i);
  HostTensor wide = HostTensor::fromVector<float>(out.dims(), values);
  convertFloatInto(wide, out);
}

}  // namespace kiln
