// DynamicQuantizeLinear (integer_math.h): one block folds the range, a grid-stride launch
// quantizes with the scale and zero point it left in the workspace (as float, as the CPU has them).
#include "integer_common.cuh"

#include <kernels/cuda/common/device_types.cuh>
#include <kernels/cuda/reduce/block_reduce.cuh>

#include <cmath>

namespace kiln::kernels::cuda {
namespace {

constexpr int kRangeThreads = 256;

struct MinOp {
  __device__ float operator()(float a, float b) const { return fminf(a, b); }
};
struct MaxOp {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

template <class T, class S>
__global__ void __launch_bounds__(kRangeThreads) quantRange(const T* x, int64_t n, float* params, S* scale,
                                                            uint8_t* zeroPoint) {
  __shared__ float shared[kRangeThreads];
  float lo = 0.0f, hi = 0.0f;  // the range always holds zero, so that 0 is exact
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const float v = float(toCompute(x[i]));
    lo = fminf(lo, v);
    hi = fmaxf(hi, v);
  }
  lo = blockFold(lo, shared, MinOp{});
  hi = blockFold(hi, shared, MaxOp{});
  if (threadIdx.x == 0) {
    const float s = (hi - lo) / 255.0f;
    const uint8_t z = s == 0.0f ? 0 : saturateRound<uint8_t>(-lo / s);
    params[0] = s;
    params[1] = float(z);
    *scale = S(s);
    *zeroPoint = z;
  }
}

template <class T>
__global__ void quantizeWithRange(const T* x, int64_t n, const float* params, uint8_t* y) {
  const float s = params[0], z = params[1];
  KILN_GRID_STRIDE_LOOP(i, n) {
    y[i] = s == 0.0f ? uint8_t(z) : saturateRound<uint8_t>(rintf(float(toCompute(x[i])) / s) + z);
  }
}

}  // namespace

cudaError_t dynamicQuantizeLinear(const void* x, ElementType type, int64_t n, uint8_t* y, void* scale,
                                  ElementType scaleType, uint8_t* zeroPoint, void* workspace, cudaStream_t stream) {
  float* params = static_cast<float*>(workspace);
  if (type == ElementType::kFloat64 || scaleType == ElementType::kFloat64) return cudaErrorInvalidValue;
  return dispatchFloat(type, [&](auto tag) {
    using T = decltype(tag);
    return dispatchFloat(scaleType, [&](auto scaleTag) {
      using S = decltype(scaleTag);
      quantRange<T, S><<<1, kRangeThreads, 0, stream>>>(static_cast<const T*>(x), n, params, static_cast<S*>(scale),
                                                         zeroPoint);
      if (n > 0)
        quantizeWithRange<T><<<gridFor(n), kThreadsPerBlock, 0, stream>>>(static_cast<const T*>(x), n, params, y);
      return launchStatus();
    });
  });
}

}  // namespace kiln::kernels::cuda
