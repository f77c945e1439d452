#include "reverse_sequence.h"

#include <kernels/cuda/common/device_types.cuh>
#include <kernels/cuda/common/launch.cuh>

namespace kiln::kernels::cuda {
namespace {

template <class T>
__global__ void reverseSequenceKernel(const T* src, T* dst, int64_t time, int64_t batch, int64_t inner,
                                      const int64_t* lengths, bool batchMajor) {
  KILN_GRID_STRIDE_LOOP(index, time * batch * inner) {
    const int64_t i = index % inner, outer = index / inner;
    const int64_t t = batchMajor ? outer % time : outer / batch, b = batchMajor ? outer / time : outer % batch;
    const int64_t given = lengths[b], length = given < 0 ? 0 : given > time ? time : given;  // never out of bounds
    const int64_t from = t < length ? length - 1 - t : t;
    dst[index] = src[(batchMajor ? b * time + from : from * batch + b) * inner + i];
  }
}

}  // namespace

cudaError_t reverseSequence(const void* src, void* dst, int64_t time, int64_t batch, int64_t inner,
                            const int64_t* lengths, bool batchMajor, ElementType type, cudaStream_t stream) {
  if (time < 0 || batch < 0 || inner < 0) return cudaErrorInvalidValue;
  return dispatchBySize(type, [&](auto tag) {
    using T = decltype(tag);
    const int64_t total = time * batch * inner;
    if (total == 0) return cudaSuccess;
    reverseSequenceKernel<T><<<gridFor(total), kThreadsPerBlock, 0, stream>>>(
        static_cast<const T*>(src), static_cast<T*>(dst), time, batch, inner, lengths, batchMajor);
    return launchStatus();
  });
}

}  // namespace kiln::kernels::cuda
