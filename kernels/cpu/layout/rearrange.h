#pragma once
// Small data-movement kernels: Trilu and ReverseSequence.
#include <cstdint>

namespace kiln::kernels {

// Keeps the upper (j - i >= k) or lower (j - i <= k) triangle of each rows x cols matrix; zeroes the rest.
template <class T>
void triangle(const T* src, T* dst, int64_t batches, int64_t rows, int64_t cols, int64_t k, bool upper);

// ReverseSequence on [time, batch, inner] (batchMajor false) or [batch, time, inner] (batchMajor true):
// the first lengths[b] time steps of batch b are reversed, the rest copied. Lengths are in [0, time].
template <class T>
void reverseSequence(const T* src, T* dst, int64_t time, int64_t batch, int64_t inner, const int64_t* lengths,
                     bool batchMajor);

}  // namespace kiln::kernels
