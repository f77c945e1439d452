// CumSum along the middle axis of [outer, n, inner]. Contiguous lines (inner == 1) scan on a
// block per line, a tile of blockDim elements at a time with the running total carried between
// tiles; strided lines give each thread one line (neighbouring threads read neighbouring
// elements) and add in the CPU's order.
#include "reduce.h"
#include "reduce_ops.h"

#include "kernels/cuda/common/device_types.cuh"
#include "kernels/cuda/common/launch.cuh"

namespace kiln::kernels::cuda {
namespace {

constexpr int kScanThreads = 256;

template <class A>
__device__ A add(A a, A b) {
  return combine<Combine::kSum>(a, b);
}

template <class T>
__global__ void __launch_bounds__(kScanThreads) scanRowsKernel(const T* in, T* out, int64_t rows, int64_t n,
                                                               bool exclusive, bool reverse) {
  using A = ComputeType<T>;
  __shared__ A tile[kScanThreads];
  const int t = threadIdx.x, width = blockDim.x;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* src = in + row * n;
    T* dst = out + row * n;
    A carry = A(0);
    for (int64_t start = 0; start < n; start += width) {
      const int64_t step = start + t;  // position in scan order
      const int64_t i = reverse ? n - 1 - step : step;
      const A x = step < n ? A(toCompute(src[i])) : A(0);
      tile[t] = x;
      __syncthreads();
      for (int offset = 1; offset < width; offset *= 2) {  // inclusive Hillis-Steele scan of the tile
        const A before = t >= offset ? tile[t - offset] : A(0);
        __syncthreads();
        tile[t] = add(tile[t], before);
        __syncthreads();
      }
      if (step < n) {
        const A prefix = exclusive ? (t > 0 ? tile[t - 1] : A(0)) : tile[t];
        dst[i] = fromCompute<T>(add(carry, prefix));
      }
      carry = add(carry, tile[width - 1]);
      __syncthreads();
    }
  }
}

template <class T>
__global__ void scanColumnsKernel(const T* in, T* out, int64_t outer, int64_t n, int64_t inner, bool exclusive,
                                  bool reverse) {
  using A = ComputeType<T>;
  KILN_GRID_STRIDE_LOOP(line, outer * inner) {
    const int64_t o = line / inner, j = line % inner;
    A acc = A(0);
    for (int64_t step = 0; step < n; ++step) {
      const int64_t i = reverse ? n - 1 - step : step;
      const int64_t at = (o * n + i) * inner + j;
      const A x = toCompute(in[at]);
      if (exclusive) {
        out[at] = fromCompute<T>(acc);
        acc = add(acc, x);
      } else {
        acc = add(acc, x);
        out[at] = fromCompute<T>(acc);
      }
    }
  }
}

}  // namespace

cudaError_t launchCumSum(const void* in, void* out, int64_t outer, int64_t n, int64_t inner, bool exclusive,
                         bool reverse, ElementType type, cudaStream_t stream) {
  if (outer < 0 || n < 0 || inner < 0) return cudaErrorInvalidValue;
  return dispatchNumeric(type, [&](auto tag) {
    using T = decltype(tag);
    if (outer * n * inner == 0) return cudaSuccess;
    const T* x = static_cast<const T*>(in);
    T* y = static_cast<T*>(out);
    if (inner == 1) {
      int threads = 32;
      while (threads < kScanThreads && threads < n) threads *= 2;
      const unsigned blocks = unsigned(std::min<int64_t>(outer, 65535 * 8));
      scanRowsKernel<<<blocks, threads, 0, stream>>>(x, y, outer, n, exclusive, reverse);
    } else {
      scanColumnsKernel<<<gridFor(outer * inner), kThreadsPerBlock, 0, stream>>>(x, y, outer, n, inner, exclusive,
                                                                                 reverse);
    }
    return launchStatus();
  });
}

}  // namespace kiln::kernels::cuda
