#pragma once
// Indexed reads and writes: Gather, GatherElements, GatherND, Compress, Scatter*, OneHot.
// Indices reach these kernels already validated and non-negative (the engine reports bad ones).
#include <cstdint>
#include <vector>

namespace kiln::kernels {

// Gather along an axis: dst is [outer, indexCount, inner], src is [outer, axisDim, inner].
template <class T>
void gatherAxis(const T* src, T* dst, int64_t outer, int64_t axisDim, int64_t inner, const int64_t* indices,
                int64_t indexCount);

// dst[t * sliceSize + k] = src[offsets[t] + k] for t < count.
template <class T>
void gatherSlices(const T* src, T* dst, const int64_t* offsets, int64_t count, int64_t sliceSize);

// For GatherElements / ScatterElements: for every position of an index tensor (dims indexDims, same
// rank as dataDims), the offset into data with the `axis` coordinate replaced by the index (negative
// indices count from the end). Returns the position of the first out-of-range index, or -1.
int64_t elementOffsets(const std::vector<int64_t>& dataDims, const std::vector<int64_t>& indexDims,
                       const int64_t* indices, int64_t axis, int64_t* offsets);

enum class ScatterReduction { kNone, kAdd, kMul, kMax, kMin };

// dst[offsets[t] + k] = updates[t * sliceSize + k], in order (later updates win).
template <class T>
void scatterSlices(T* dst, const T* updates, const int64_t* offsets, int64_t count, int64_t sliceSize);

// dst[offsets[t] + k] = reduce(dst[...], updates[t * sliceSize + k]), in order.
template <class T>
void scatterSlicesReduce(T* dst, const T* updates, const int64_t* offsets, int64_t count, int64_t sliceSize,
                         ScatterReduction reduction);

// OneHot: dst is [outer, depth, inner] filled with offValue, with onValue where the depth coordinate
// equals indices[outer, inner] (indices already normalised; out-of-range ones are < 0 and skipped).
template <class T>
void oneHot(const int64_t* indices, T* dst, int64_t outer, int64_t depth, int64_t inner, const T& offValue,
            const T& onValue);

}  // namespace kiln::kernels
