#include "quant_types.cuh"
#include "quantize.h"

#include <kernels/cuda/common/launch.cuh>

namespace kiln::kernels::cuda {
namespace {

template <class In>
__device__ __forceinline__ float inputAsFloat(In v) {
  if constexpr (std::is_same_v<In, __half>)
    return __half2float(v);
  else if constexpr (std::is_same_v<In, __nv_bfloat16>)
    return __bfloat162float(v);
  else
    return float(v);  // float, double (rounded), int32 (rounded)
}

template <class In, class Q>
__global__ void quantizeKernel(const In* __restrict__ x, ScaleReader scale, const Q* __restrict__ zeroPoint,
                               Q* __restrict__ y, QuantLayout layout, bool saturate) {
  KILN_GRID_STRIDE_LOOP(i, layout.count()) {
    const int64_t s = layout.scaleIndex(i);
    const float v = inputAsFloat(x[i]), sc = scale[s];
    if constexpr (IsFloat8<Q>::value) {
      constexpr Float8Kind kind = std::is_same_v<Q, Fp8E4M3> ? Float8Kind::kE4M3 : Float8Kind::kE5M2;
      y[i].bits = quantizeToFloat8(v, sc, zeroPoint ? zeroPoint[s].bits : uint8_t(0), kind, saturate);
    } else {
      y[i] = quantizeToInteger<Q>(v, sc, zeroPoint ? zeroPoint[s] : Q(0));
    }
  }
}

template <class Fn>
cudaError_t dispatchQuantizeInput(ElementType type, Fn&& fn) {
  if (type == ElementType::kInt32) return fn(int32_t{});
  return dispatchFloat(type, fn);
}

}  // namespace

cudaError_t quantizeLinear(const void* x, ElementType xType, const void* scale, ElementType scaleType,
                           const void* zeroPoint, void* y, ElementType yType, const QuantLayout& layout, bool saturate,
                           cudaStream_t stream) {
  if (!isScaleType(scaleType) || layout.outer < 0 || layout.axisLen < 0 || layout.inner < 0 ||
      (layout.granularity == QuantGranularity::kBlocked && layout.blockSize < 1))
    return cudaErrorInvalidValue;
  const int64_t count = layout.count();
  return dispatchQuantizeInput(xType, [&](auto inTag) {
    using In = decltype(inTag);
    return dispatchQuantized(yType, [&](auto qTag) {
      using Q = decltype(qTag);
      if (count == 0) return cudaSuccess;
      quantizeKernel<In, Q><<<gridFor(count), kThreadsPerBlock, 0, stream>>>(
          static_cast<const In*>(x), ScaleReader{scale, scaleType}, static_cast<const Q*>(zeroPoint),
          static_cast<Q*>(y), layout, saturate);
      return launchStatus();
    });
  });
}

}  // namespace kiln::kernels::cuda
