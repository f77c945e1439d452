#include "determinant.h"

#include "lu_determinant.h"

#include <kernels/cpu/common/parallel.h>
#include <kernels/cpu/reduce/compute_type.h>

#include <algorithm>
#include <vector>

namespace kiln::kernels {

template <class T>
void determinants(const T* in, T* out, int64_t batch, int64_t n) {
  parallelFor(batch, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, n * n * n)), [&](int64_t begin, int64_t end) {
    std::vector<double> lu(static_cast<size_t>(n * n));
    for (int64_t b = begin; b < end; ++b) {
      for (int64_t i = 0; i < n * n; ++i) lu[i] = double(widenValue(in[b * n * n + i]));
      const double det = luDeterminant(lu.data(), n);
      out[b] = narrowValue<T>(ComputeType<T>(det));
    }
  });
}

template void determinants<float>(const float*, float*, int64_t, int64_t);
template void determinants<double>(const double*, double*, int64_t, int64_t);
template void determinants<Float16>(const Float16*, Float16*, int64_t, int64_t);
template void determinants<BFloat16>(const BFloat16*, BFloat16*, int64_t, int64_t);

}  // namespace kiln::kernels
