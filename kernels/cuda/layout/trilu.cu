#include "generators.h"

#include <kernels/cuda/common/device_types.cuh>
#include <kernels/cuda/common/launch.cuh>

namespace kiln::kernels::cuda {
namespace {

template <class T>
__global__ void triluKernel(const T* __restrict__ src, T* __restrict__ dst, int64_t count, int64_t rows, int64_t cols,
                            int64_t k, bool upper) {
  KILN_GRID_STRIDE_LOOP(i, count) {
    const int64_t diagonal = i % cols - i / cols % rows;  // column - row: never overflows, unlike row + k
    const bool keep = upper ? diagonal >= k : diagonal <= k;
    dst[i] = keep ? src[i] : T{};
  }
}

}  // namespace

cudaError_t trilu(const void* src, void* dst, int64_t batches, int64_t rows, int64_t cols, int64_t k, bool upper,
                  ElementType type, cudaStream_t stream) {
  if (batches < 0 || rows < 0 || cols < 0) return cudaErrorInvalidValue;
  const int64_t count = batches * rows * cols;
  if (count == 0) return cudaSuccess;
  return dispatchBySize(type, [&](auto tag) {
    using T = decltype(tag);
    triluKernel<T><<<gridFor(count), kThreadsPerBlock, 0, stream>>>(static_cast<const T*>(src), static_cast<T*>(dst),
                                                                    count, rows, cols, k, upper);
    return launchStatus();
  });
}

}  // namespace kiln::kernels::cuda
