#pragma once
// Value-dependent selection: NonZero and Unique.
#include <cstdint>
#include <vector>

namespace kiln::kernels {

// Coordinates of the non-zero elements, as a row-major [rank, count] array.
template <class T>
std::vector<int64_t> nonZeroCoordinates(const T* src, const std::vector<int64_t>& dims);

struct UniqueSlices {
  std::vector<int64_t> firstOccurrence;  // per unique slice (in output order): its first index along the axis
  std::vector<int64_t> inverse;          // per input slice: the position of its unique slice in the output
  std::vector<int64_t> counts;           // per unique slice: how often it occurs
};

// Unique slices of [outer, axisDim, inner] along the middle axis (slices compare lexicographically).
// sorted: output in ascending order; otherwise in order of first occurrence.
template <class T>
UniqueSlices uniqueSlices(const T* src, int64_t outer, int64_t axisDim, int64_t inner, bool sorted);

}  // namespace kiln::kernels
