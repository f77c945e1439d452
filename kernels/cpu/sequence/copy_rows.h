#pragma once
// Data movement for cutting tensors apart and joining them along an axis (sequence ops, Loop and
// Scan outputs): a tensor seen as [rows, row] is copied row by row between two strides.
#include <kernels/cpu/common/parallel.h>

#include <algorithm>
#include <cstdint>

namespace kiln::kernels {

// Copies `rows` rows of `rowLength` elements: row r goes from src + r*srcStride to dst + r*dstStride.
template <class T>
void copyRows(const T* src, int64_t srcStride, T* dst, int64_t dstStride, int64_t rows, int64_t rowLength) {
  if (rows <= 0 || rowLength <= 0) return;
  constexpr int64_t kElementsPerTask = 1 << 16;
  parallelFor(rows, std::max<int64_t>(1, kElementsPerTask / rowLength), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) std::copy_n(src + r * srcStride, rowLength, dst + r * dstStride);
  });
}

}  // namespace kiln::kernels
