#include "gather.h"
#include "index_geometry.h"

#include <kernels/cuda/common/device_types.cuh>
#include <kernels/cuda/common/launch.cuh>
#include <kernels/cuda/layout/copy_unit.cuh>

namespace kiln::kernels::cuda {
namespace {

// Gather in copy units: the contiguous inner block of each index moves as vectors.
template <class Unit>
__global__ void gatherKernel(const Unit* __restrict__ data, Unit* __restrict__ dst, GatherGeometry g,
                             IndexReader indices, int* errorFlag) {
  KILN_GRID_STRIDE_LOOP(i, g.count()) {
    const int64_t from = g.sourceOffset(i, indices);
    if (from >= 0) {
      dst[i] = data[from];
    } else {
      dst[i] = Unit{};
      reportBadIndex(errorFlag);
    }
  }
}

template <class T>
__global__ void gatherElementsKernel(const T* __restrict__ data, T* __restrict__ dst,
                                     const __grid_constant__ AxisGeometry g, int64_t count, IndexReader indices,
                                     int* errorFlag) {
  KILN_GRID_STRIDE_LOOP(i, count) {
    const int64_t from = g.dataOffset(i, indices);
    if (from >= 0) {
      dst[i] = data[from];
    } else {
      dst[i] = T{};
      reportBadIndex(errorFlag);
    }
  }
}

// Output unit i is unit k of tuple t's slice; slices start at multiples of the slice size, so a
// slice offset in elements divides exactly into units.
template <class Unit>
__global__ void gatherNDKernel(const Unit* __restrict__ data, Unit* __restrict__ dst,
                               const __grid_constant__ TupleGeometry g, int64_t sliceUnits, int64_t elementsPerUnit,
                               IndexReader indices, int* errorFlag) {
  KILN_GRID_STRIDE_LOOP(i, g.tupleCount * sliceUnits) {
    const int64_t t = i / sliceUnits, k = i - t * sliceUnits;
    const int64_t from = g.sliceOffset(t, indices);
    if (from >= 0) {
      dst[i] = data[from / elementsPerUnit + k];
    } else {
      dst[i] = Unit{};
      reportBadIndex(errorFlag);
    }
  }
}

}  // namespace

cudaError_t gather(const void* data, const std::vector<int64_t>& dataDims, const void* indices, int64_t indexCount,
                   ElementType indexType, int axis, void* dst, ElementType type, int* errorFlag, cudaStream_t stream) {
  auto g = gatherGeometry(dataDims, indexCount, axis);
  if (!g || !isIndexType(indexType)) return cudaErrorInvalidValue;
  if (g->count() == 0) return cudaSuccess;
  const int64_t e = int64_t(elementBytes(type));
  const int unit = copyUnitBytes(int(e), {g->inner * e, addressOf(data), addressOf(dst)});
  g->inner = g->inner * e / unit;
  return dispatchCopyUnit(unit, [&](auto tag) {
    using Unit = decltype(tag);
    gatherKernel<Unit><<<gridFor(g->count()), kThreadsPerBlock, 0, stream>>>(
        static_cast<const Unit*>(data), static_cast<Unit*>(dst), *g, indexReader(indices, indexType), errorFlag);
    return launchStatus();
  });
}

cudaError_t gatherElements(const void* data, const std::vector<int64_t>& dataDims, const void* indices,
                           const std::vector<int64_t>& indexDims, ElementType indexType, int axis, void* dst,
                           ElementType type, int* errorFlag, cudaStream_t stream) {
  const auto g = axisGeometry(dataDims, indexDims, axis);
  if (!g || !isIndexType(indexType)) return cudaErrorInvalidValue;
  int64_t count = 1;
  for (int64_t d : indexDims) count *= d;
  if (count == 0) return cudaSuccess;
  return dispatchBySize(type, [&](auto tag) {
    using T = decltype(tag);
    gatherElementsKernel<T><<<gridFor(count), kThreadsPerBlock, 0, stream>>>(
        static_cast<const T*>(data), static_cast<T*>(dst), *g, count, indexReader(indices, indexType), errorFlag);
    return launchStatus();
  });
}

cudaError_t gatherND(const void* data, const std::vector<int64_t>& dataDims, const void* indices,
                     const std::vector<int64_t>& indexDims, ElementType indexType, int batchDims, void* dst,
                     ElementType type, int* errorFlag, cudaStream_t stream) {
  const auto g = tupleGeometry(dataDims, indexDims, batchDims);
  if (!g || !isIndexType(indexType)) return cudaErrorInvalidValue;
  if (g->tupleCount * g->sliceElements == 0) return cudaSuccess;
  const int64_t e = int64_t(elementBytes(type));
  const int unit = copyUnitBytes(int(e), {g->sliceElements * e, addressOf(data), addressOf(dst)});
  const int64_t elementsPerUnit = unit / e, sliceUnits = g->sliceElements / elementsPerUnit;
  return dispatchCopyUnit(unit, [&](auto tag) {
    using Unit = decltype(tag);
    gatherNDKernel<Unit><<<gridFor(g->tupleCount * sliceUnits), kThreadsPerBlock, 0, stream>>>(
        static_cast<const Unit*>(data), static_cast<Unit*>(dst), *g, sliceUnits, elementsPerUnit,
        indexReader(indices, indexType), errorFlag);
    return launchStatus();
  });
}

}  // namespace kiln::kernels::cuda
