// Unique (selection.h): a stable merge sort of the slice indices, groups of equal neighbours found
// by an ordered scan (so each group's first key is its first occurrence), and, unsorted, a second
// scan over the slices that numbers the groups by first occurrence, as the CPU kernel orders them.
#include "comparable.cuh"
#include "select_scan.cuh"
#include "selection.h"

namespace kiln::kernels::cuda {
namespace {

template <class T>
struct SliceLess {
  const T* x;
  UniqueShape shape;
  __device__ int compare(int64_t a, int64_t b) const {
    for (int64_t o = 0; o < shape.outer; ++o)
      for (int64_t i = 0; i < shape.inner; ++i) {
        const auto u = toCompute(x[(o * shape.slices + a) * shape.inner + i]);
        const auto v = toCompute(x[(o * shape.slices + b) * shape.inner + i]);
        if (u < v) return -1;
        if (v < u) return 1;
      }
    return 0;
  }
  __device__ bool operator()(int64_t a, int64_t b) const { return compare(a, b) < 0; }
};

// The workspace: the selection scratch, then six arrays of one int64 per slice.
struct UniqueScratch {
  void* select;
  int64_t *sortA, *sortB, *groupOf, *starts, *position, *first;
  UniqueScratch(void* memory, int64_t slices) {
    select = memory;
    sortA = reinterpret_cast<int64_t*>(static_cast<char*>(memory) + selectScratchBytes(slices));
    sortB = sortA + slices;
    groupOf = sortB + slices;
    starts = groupOf + slices;
    position = starts + slices;
    first = position + slices;
  }
  // Where stableSortIndices leaves the order: it swaps buffers once per pass.
  int64_t* order(int64_t slices) const {
    int passes = 0;
    for (int64_t width = 1; width < slices; width *= 2) ++passes;
    return passes % 2 == 0 ? sortA : sortB;
  }
};

template <class T>
struct GroupStart {
  SliceLess<T> less;
  const int64_t* order;
  __device__ bool operator()(int64_t k) const { return k == 0 || less.compare(order[k - 1], order[k]) != 0; }
};

struct RecordGroup {
  const int64_t* order;
  int64_t* groupOf;
  int64_t* starts;
  __device__ void operator()(int64_t k, int64_t rank, bool kept) const {
    groupOf[order[k]] = kept ? rank : rank - 1;
    if (kept) starts[rank] = k;
  }
};

struct FirstOccurrence {
  const int64_t* order;
  const int64_t* groupOf;
  const int64_t* starts;
  __device__ bool operator()(int64_t s) const { return order[starts[groupOf[s]]] == s; }
};

struct NumberGroup {
  const int64_t* groupOf;
  int64_t* position;
  __device__ void operator()(int64_t s, int64_t rank, bool kept) const {
    if (kept) position[groupOf[s]] = rank;
  }
};

__global__ void writeGroups(const int64_t* order, const int64_t* starts, const int64_t* position, int64_t groups,
                            int64_t slices, int64_t* first, int64_t* counts) {
  KILN_GRID_STRIDE_LOOP(g, groups) {
    const int64_t p = position[g];
    first[p] = order[starts[g]];
    if (counts) counts[p] = (g + 1 < groups ? starts[g + 1] : slices) - starts[g];
  }
}

__global__ void writeInverse(const int64_t* groupOf, const int64_t* position, int64_t slices, int64_t* inverse) {
  KILN_GRID_STRIDE_LOOP(s, slices) inverse[s] = position[groupOf[s]];
}

template <class T>
__global__ void gatherSlices(const T* x, const int64_t* first, UniqueShape shape, int64_t groups, T* y) {
  const int64_t n = shape.outer * groups * shape.inner;
  KILN_GRID_STRIDE_LOOP(e, n) {
    const int64_t i = e % shape.inner, rest = e / shape.inner, p = rest % groups, o = rest / groups;
    y[e] = x[(o * shape.slices + first[p]) * shape.inner + i];
  }
}

}  // namespace

size_t uniqueWorkspaceBytes(const UniqueShape& shape) {
  return selectScratchBytes(shape.slices) + size_t(6 * std::max<int64_t>(shape.slices, 1)) * sizeof(int64_t);
}

cudaError_t uniqueGroup(const void* x, ElementType type, const UniqueShape& shape, bool sorted, void* workspace,
                        int64_t* groups, cudaStream_t stream) {
  const int64_t n = shape.slices;
  const UniqueScratch w(workspace, n);
  const SelectScratch select(w.select, n);
  return dispatchComparable(type, [&](auto tag) -> cudaError_t {
    using T = decltype(tag);
    const SliceLess<T> less{static_cast<const T*>(x), shape};
    const int64_t* order = stableSortIndices(n, less, w.sortA, w.sortB, stream);
    const GroupStart<T> start{less, order};
    if (cudaError_t s = launchCount(n, start, select, stream); s != cudaSuccess) return s;
    if (cudaError_t s = launchWrite(n, start, RecordGroup{order, w.groupOf, w.starts}, select, stream); s != cudaSuccess)
      return s;
    if (cudaError_t s = cudaMemcpyAsync(groups, select.total, sizeof(int64_t), cudaMemcpyDeviceToDevice, stream);
        s != cudaSuccess)
      return s;
    if (sorted) {
      fillIota<<<gridFor(n), kThreadsPerBlock, 0, stream>>>(w.position, n);
      return launchStatus();
    }
    const FirstOccurrence firstOf{order, w.groupOf, w.starts};
    if (cudaError_t s = launchCount(n, firstOf, select, stream); s != cudaSuccess) return s;
    return launchWrite(n, firstOf, NumberGroup{w.groupOf, w.position}, select, stream);
  });
}

cudaError_t uniqueWrite(const void* x, ElementType type, const UniqueShape& shape, int64_t groups, void* workspace,
                        int64_t* first, int64_t* inverse, int64_t* counts, void* y, cudaStream_t stream) {
  const int64_t n = shape.slices;
  if (n == 0) return cudaSuccess;
  const UniqueScratch w(workspace, n);
  const int64_t* order = w.order(n);
  if (!first) first = w.first;
  writeGroups<<<gridFor(groups), kThreadsPerBlock, 0, stream>>>(order, w.starts, w.position, groups, n, first, counts);
  if (inverse) writeInverse<<<gridFor(n), kThreadsPerBlock, 0, stream>>>(w.groupOf, w.position, n, inverse);
  if (cudaError_t s = launchStatus(); s != cudaSuccess) return s;
  const int64_t elements = shape.outer * groups * shape.inner;
  if (elements == 0) return cudaSuccess;
  return dispatchBySize(type, [&](auto tag) {
    using T = decltype(tag);
    gatherSlices<T><<<gridFor(elements), kThreadsPerBlock, 0, stream>>>(static_cast<const T*>(x), first, shape, groups,
                                                                        static_cast<T*>(y));
    return launchStatus();
  });
}

}  // namespace kiln::kernels::cuda
