#pragma once
// Determinants of a batch of square matrices (LU factorisation with partial pivoting, in double).
#include <cstdint>

namespace kiln::kernels {

// in: `batch` row-major n x n matrices; out: one determinant each. T: float, double, Float16, BFloat16.
template <class T>
void determinants(const T* in, T* out, int64_t batch, int64_t n);

}  // namespace kiln::kernels
