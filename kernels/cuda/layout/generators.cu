#include "generators.h"

#include <kernels/cuda/common/device_types.cuh>
#include <kernels/cuda/common/launch.cuh>

#include <cmath>

namespace kiln::kernels::cuda {
namespace {

// start + i * delta rounded twice, like the CPU's loop: no fused multiply-add on the device.
__device__ __forceinline__ double rangeValue(double start, double delta, int64_t i) {
  return __dadd_rn(start, __dmul_rn(double(i), delta));
}

template <class T>
__global__ void rangeFloatKernel(T* dst, int64_t count, double start, double delta) {
  KILN_GRID_STRIDE_LOOP(i, count) {
    const double v = rangeValue(start, delta, i);
    if constexpr (std::is_same_v<T, double>)
      dst[i] = v;
    else
      dst[i] = fromCompute<T>(float(v));
  }
}

template <class T>
__global__ void rangeIntegerKernel(T* dst, int64_t count, uint64_t start, uint64_t delta) {
  KILN_GRID_STRIDE_LOOP(i, count) dst[i] = T(start + uint64_t(i) * delta);  // unsigned: wraps, no overflow UB
}

template <class T>
__global__ void eyeKernel(T* dst, int64_t rows, int64_t cols, int64_t k, T one) {
  KILN_GRID_STRIDE_LOOP(i, rows * cols) dst[i] = i % cols - i / cols == k ? one : T{};
}

}  // namespace

int64_t rangeCount(double start, double limit, double delta) {
  if (delta == 0) return 0;
  const double count = std::ceil((limit - start) / delta);
  return count > 0 ? int64_t(count) : 0;
}

cudaError_t rangeFloat(void* dst, int64_t count, double start, double delta, ElementType type, cudaStream_t stream) {
  if (count < 0) return cudaErrorInvalidValue;
  return dispatchFloat(type, [&](auto tag) {
    using T = decltype(tag);
    if (count == 0) return cudaSuccess;
    rangeFloatKernel<T><<<gridFor(count), kThreadsPerBlock, 0, stream>>>(static_cast<T*>(dst), count, start, delta);
    return launchStatus();
  });
}

cudaError_t rangeInteger(void* dst, int64_t count, int64_t start, int64_t delta, ElementType type,
                         cudaStream_t stream) {
  if (count < 0) return cudaErrorInvalidValue;
  return dispatchInteger(type, [&](auto tag) {
    using T = decltype(tag);
    if (count == 0) return cudaSuccess;
    rangeIntegerKernel<T><<<gridFor(count), kThreadsPerBlock, 0, stream>>>(static_cast<T*>(dst), count, uint64_t(start),
                                                                           uint64_t(delta));
    return launchStatus();
  });
}

uint64_t oneBits(ElementType type) {
  switch (type) {
    case ElementType::kFloat32: return 0x3F800000u;
    case ElementType::kFloat16: return 0x3C00u;
    case ElementType::kBFloat16: return 0x3F80u;
    case ElementType::kFloat64: return 0x3FF0000000000000ull;
    case ElementType::kFloat8E4M3: return 0x38u;
    case ElementType::kFloat8E5M2: return 0x3Cu;
    default: return 1;  // integers and bool
  }
}

cudaError_t eyeLike(void* dst, int64_t rows, int64_t cols, int64_t k, ElementType type, cudaStream_t stream) {
  if (rows < 0 || cols < 0) return cudaErrorInvalidValue;
  if (rows * cols == 0) return cudaSuccess;
  const uint64_t one = oneBits(type);
  return dispatchBySize(type, [&](auto tag) {
    using T = decltype(tag);
    eyeKernel<T><<<gridFor(rows * cols), kThreadsPerBlock, 0, stream>>>(static_cast<T*>(dst), rows, cols, k, T(one));
    return launchStatus();
  });
}

}  // namespace kiln::kernels::cuda
