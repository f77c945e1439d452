#pragma once
// The determinant of one n×n matrix by LU factorisation with partial pivoting, in place on `lu`
// (row-major, overwritten). Shared by the CPU kernel and the CUDA one (KILN_HD), so both backends
// pivot and round alike.
#include <kernels/cuda/common/host_device.h>

#include <cstdint>

namespace kiln::kernels {

KILN_HD double luDeterminant(double* lu, int64_t n) {
  double det = 1.0;
  for (int64_t col = 0; col < n && det != 0.0; ++col) {
    int64_t pivot = col;
    for (int64_t r = col + 1; r < n; ++r) {
      const double candidate = lu[r * n + col], best = lu[pivot * n + col];
      if ((candidate < 0 ? -candidate : candidate) > (best < 0 ? -best : best)) pivot = r;
    }
    if (lu[pivot * n + col] == 0.0) return 0.0;
    if (pivot != col) {
      for (int64_t c = 0; c < n; ++c) {
        const double t = lu[pivot * n + c];
        lu[pivot * n + c] = lu[col * n + c];
        lu[col * n + c] = t;
      }
      det = -det;
    }
    const double p = lu[col * n + col];
    det *= p;
    for (int64_t r = col + 1; r < n; ++r) {
      const double factor = lu[r * n + col] / p;
      for (int64_t c = col + 1; c < n; ++c) lu[r * n + c] -= factor * lu[col * n + c];
    }
  }
  return det;
}

}  // namespace kiln::kernels
