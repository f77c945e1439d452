#include "quant_types.cuh"
#include "quantize.h"

#include <kernels/cuda/common/launch.cuh>

namespace kiln::kernels::cuda {
namespace {

template <class Q, class Out>
__global__ void dequantizeKernel(const Q* __restrict__ x, ScaleReader scale, const Q* __restrict__ zeroPoint,
                                 Out* __restrict__ y, QuantLayout layout) {
  KILN_GRID_STRIDE_LOOP(i, layout.count()) {
    const int64_t s = layout.scaleIndex(i);
    float v;
    if constexpr (IsFloat8<Q>::value) {
      constexpr Float8Kind kind = std::is_same_v<Q, Fp8E4M3> ? Float8Kind::kE4M3 : Float8Kind::kE5M2;
      v = dequantizeFloat8(x[i].bits, scale[s], zeroPoint ? zeroPoint[s].bits : uint8_t(0), kind);
    } else {
      v = dequantizeInteger<Q>(x[i], scale[s], zeroPoint ? zeroPoint[s] : Q(0));
    }
    if constexpr (std::is_same_v<Out, double>)
      y[i] = double(v);
    else
      y[i] = fromCompute<Out>(v);
  }
}

}  // namespace

cudaError_t dequantizeLinear(const void* x, ElementType xType, const void* scale, ElementType scaleType,
                             const void* zeroPoint, void* y, ElementType yType, const QuantLayout& layout,
                             cudaStream_t stream) {
  if (!isScaleType(scaleType) || layout.outer < 0 || layout.axisLen < 0 || layout.inner < 0 ||
      (layout.granularity == QuantGranularity::kBlocked && layout.blockSize < 1))
    return cudaErrorInvalidValue;
  const int64_t count = layout.count();
  return dispatchQuantized(xType, [&](auto qTag) {
    using Q = decltype(qTag);
    return dispatchFloat(yType, [&](auto outTag) {
      using Out = decltype(outTag);
      if (count == 0) return cudaSuccess;
      dequantizeKernel<Q, Out><<<gridFor(count), kThreadsPerBlock, 0, stream>>>(
          static_cast<const Q*>(x), ScaleReader{scale, scaleType}, static_cast<const Q*>(zeroPoint),
          static_cast<Out*>(y), layout);
      return launchStatus();
    });
  });
}

}  // namespace kiln::kernels::cuda
