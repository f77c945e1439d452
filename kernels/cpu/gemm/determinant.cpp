#include "determinant.h"

#include <kernels/cpu/common/parallel.h>
#include <kernels/cpu/reduce/compute_type.h>

#include <cmath>
#include <utility>
#include <vector>

namespace kiln::kernels {

template <class T>
void determinants(const T* in, T* out, int64_t batch, int64_t n) {
  parallelFor(batch, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, n * n * n)), [&](int64_t begin, int64_t end) {
    std::vector<double> lu(static_cast<size_t>(n * n));
    for (int64_t b = begin; b < end; ++b) {
      for (int64_t i = 0; i < n * n; ++i) lu[i] = double(widenValue(in[b * n * n + i]));
      double det = 1.0;
      for (int64_t col = 0; col < n && det != 0.0; ++col) {
        int64_t pivot = col;
        for (int64_t r = col + 1; r < n; ++r)
          if (std::abs(lu[r * n + col]) > std::abs(lu[pivot * n + col])) pivot = r;
        if (lu[pivot * n + col] == 0.0) {
          det = 0.0;
          break;
        }
        if (pivot != col) {
          for (int64_t c = 0; c < n; ++c) std::swap(lu[pivot * n + c], lu[col * n + c]);
          det = -det;
        }
        const double p = lu[col * n + col];
        det *= p;
        for (int64_t r = col + 1; r < n; ++r) {
          const double factor = lu[r * n + col] / p;
          for (int64_t c = col + 1; c < n; ++c) lu[r * n + c] -= factor * lu[col * n + c];
        }
      }
      out[b] = narrowValue<T>(ComputeType<T>(det));
    }
  });
}

template void determinants<float>(const float*, float*, int64_t, int64_t);
template void determinants<double>(const double*, double*, int64_t, int64_t);
template void determinants<Float16>(const Float16*, Float16*, int64_t, int64_t);
template void determinants<BFloat16>(const BFloat16*, BFloat16*, int64_t, int64_t);

}  // namespace kiln::kernels
