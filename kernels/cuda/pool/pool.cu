#include "pool.h"

#include <kernels/cuda/common/device_types.cuh>
#include <kernels/cuda/common/launch.cuh>

#include <type_traits>

namespace kiln::kernels::cuda {
namespace {

template <class T>
using PoolAcc = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <class T>
__device__ __forceinline__ PoolAcc<T> loadAcc(const T* p) {
  return PoolAcc<T>(toCompute(*p));
}

template <class T>
__device__ __forceinline__ T storeAcc(PoolAcc<T> v) {
  if constexpr (std::is_integral_v<T>)
    return T(v);
  else
    return fromCompute<T>(v);
}

// One thread per output element; consecutive threads take consecutive outputs (along W for
// channels-first, along C for channels-last), so both layouts read and write coalesced.
template <class T>
__global__ void poolKernel(const T* __restrict__ x, T* __restrict__ y, int64_t* __restrict__ indices,
                           const __grid_constant__ PoolParams params) {
  KILN_GRID_STRIDE_LOOP(i, params.count()) {
    const Pooled<PoolAcc<T>> r = poolAt<PoolAcc<T>>(params, i, [&](int64_t at) { return loadAcc(x + at); });
    if constexpr (std::is_integral_v<T>)
      y[i] = r.any ? storeAcc<T>(r.value) : std::numeric_limits<T>::lowest();
    else
      y[i] = storeAcc<T>(r.value);
    if (indices) indices[i] = r.index;
  }
}

// float types, and int8 / uint8 where integers are allowed (MaxPool).
template <class Fn>
cudaError_t dispatchPoolType(ElementType type, bool integers, Fn&& fn) {
  if (integers && type == ElementType::kInt8) return fn(int8_t{});
  if (integers && type == ElementType::kUInt8) return fn(uint8_t{});
  return dispatchFloat(type, fn);
}

cudaError_t runPool(const void* x, void* y, int64_t* indices, const PoolParams& params, ElementType type,
                    cudaStream_t stream) {
  if (params.batch < 0 || params.channels < 0) return cudaErrorInvalidValue;
  for (int a = 0; a < kPoolSpatialRank; ++a)
    if (params.w.kernel[a] < 1 || params.w.stride[a] < 1 || params.w.dilation[a] < 1 || params.w.in[a] < 0 ||
        params.w.out[a] < 0)
      return cudaErrorInvalidValue;
  const bool integers = params.kind == PoolKind::kMax;
  if (params.count() == 0) return dispatchPoolType(type, integers, [](auto) { return cudaSuccess; });
  return dispatchPoolType(type, integers, [&](auto tag) {
    using T = decltype(tag);
    poolKernel<T><<<gridFor(params.count()), kThreadsPerBlock, 0, stream>>>(static_cast<const T*>(x),
                                                                            static_cast<T*>(y), indices, params);
    return launchStatus();
  });
}

PoolParams paramsOf(PoolKind kind, int64_t batch, int64_t channels, const PoolWindow& window, PoolLayout layout) {
  PoolParams params;
  params.kind = kind;
  params.batch = batch;
  params.channels = channels;
  params.w = window;
  params.layout = layout;
  return params;
}

}  // namespace

cudaError_t maxPool(const void* x, void* y, int64_t* indices, bool columnMajorIndices, int64_t batch, int64_t channels,
                    const PoolWindow& window, PoolLayout layout, ElementType type, cudaStream_t stream) {
  PoolParams params = paramsOf(PoolKind::kMax, batch, channels, window, layout);
  params.columnMajorIndices = columnMajorIndices;
  return runPool(x, y, indices, params, type, stream);
}

cudaError_t averagePool(const void* x, void* y, int64_t batch, int64_t channels, const PoolWindow& window,
                        bool countIncludePad, PoolLayout layout, ElementType type, cudaStream_t stream) {
  PoolParams params = paramsOf(PoolKind::kAverage, batch, channels, window, layout);
  params.countIncludePad = countIncludePad;
  return runPool(x, y, nullptr, params, type, stream);
}

cudaError_t lpPool(const void* x, void* y, int64_t batch, int64_t channels, const PoolWindow& window, float p,
                   PoolLayout layout, ElementType type, cudaStream_t stream) {
  if (!(p > 0)) return cudaErrorInvalidValue;
  PoolParams params = paramsOf(PoolKind::kLp, batch, channels, window, layout);
  params.p = p;
  return runPool(x, y, nullptr, params, type, stream);
}

}  // namespace kiln::kernels::cuda
