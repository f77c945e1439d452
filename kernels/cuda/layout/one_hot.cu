#include "generators.h"

#include <kernels/cuda/indexing/index_values.h>
#include <kernels/cuda/common/device_types.cuh>
#include <kernels/cuda/common/launch.cuh>

namespace kiln::kernels::cuda {
namespace {

template <class T, class I>
__global__ void oneHotKernel(const I* __restrict__ indices, T* __restrict__ dst, int64_t outer, int64_t depth,
                             int64_t inner, const T* __restrict__ values) {
  const T off = values[0], on = values[1];
  KILN_GRID_STRIDE_LOOP(i, outer * depth * inner) {
    const int64_t in = i % inner, d = i / inner % depth, o = i / inner / depth;
    const int64_t hot = normalizeIndex(int64_t(indices[o * inner + in]), depth);  // -1: no hot element
    dst[i] = hot == d ? on : off;
  }
}

}  // namespace

cudaError_t oneHot(const void* indices, ElementType indexType, void* dst, int64_t outer, int64_t depth, int64_t inner,
                   const void* values, ElementType type, cudaStream_t stream) {
  if (outer < 0 || depth < 0 || inner < 0 || !values) return cudaErrorInvalidValue;
  if (outer * depth * inner == 0) return isIndexType(indexType) ? cudaSuccess : cudaErrorInvalidValue;
  return dispatchIndexType(indexType, [&](auto indexTag) {
    using I = decltype(indexTag);
    return dispatchBySize(type, [&](auto tag) {
      using T = decltype(tag);
      oneHotKernel<T, I><<<gridFor(outer * depth * inner), kThreadsPerBlock, 0, stream>>>(
          static_cast<const I*>(indices), static_cast<T*>(dst), outer, depth, inner, static_cast<const T*>(values));
      return launchStatus();
    });
  });
}

}  // namespace kiln::kernels::cuda
