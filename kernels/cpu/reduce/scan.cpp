// TopK and CumSum: per-line work along one axis of [outer, n, inner].
#include <kernels/cpu/common/parallel.h>
#include <kernels/cpu/reduce/compute_type.h>
#include <kernels/cpu/reduce/reduce.h>

#include <algorithm>
#include <cmath>
#include <utility>

namespace kiln::kernels {
namespace {
constexpr int64_t kGrainElements = 32768;
}

template <class T>
void topK(const T* in, T* values, int64_t* indices, int64_t outer, int64_t n, int64_t inner, int64_t k, bool largest) {
  using A = ComputeType<T>;
  using Entry = std::pair<A, int64_t>;
  // A strict weak order on (value, index): by value (NaN above everything, as in NumPy), then the
  // lower index first.
  auto less = [](A a, A b) {
    if constexpr (std::is_floating_point_v<A>) {
      if (std::isnan(a) || std::isnan(b)) return !std::isnan(a);
    }
    return a < b;
  };
  auto before = [&](const Entry& a, const Entry& b) {
    if (less(a.first, b.first)) return !largest;
    if (less(b.first, a.first)) return largest;
    return a.second < b.second;
  };
  const int64_t lines = outer * inner;
  parallelFor(lines, std::max<int64_t>(1, kGrainElements / std::max<int64_t>(1, n)), [&](int64_t begin, int64_t end) {
    std::vector<Entry> entries(static_cast<size_t>(n));
    for (int64_t line = begin; line < end; ++line) {
      const int64_t o = line / inner, j = line % inner;
      const T* src = in + o * n * inner + j;
      for (int64_t i = 0; i < n; ++i) entries[i] = {widenValue(src[i * inner]), i};
      std::partial_sort(entries.begin(), entries.begin() + k, entries.end(), before);
      T* v = values + o * k * inner + j;
      int64_t* x = indices + o * k * inner + j;
      for (int64_t i = 0; i < k; ++i) {
        v[i * inner] = narrowValue<T>(entries[i].first);
        x[i * inner] = entries[i].second;
      }
    }
  });
}

template <class T>
void cumulativeSum(const T* in, T* out, int64_t outer, int64_t n, int64_t inner, bool exclusive, bool reverse) {
  using A = ComputeType<T>;
  parallelFor(outer, std::max<int64_t>(1, kGrainElements / std::max<int64_t>(1, n * inner)),
              [&](int64_t begin, int64_t end) {
                std::vector<A> acc(static_cast<size_t>(inner));
                for (int64_t o = begin; o < end; ++o) {
                  std::fill(acc.begin(), acc.end(), A(0));
                  for (int64_t step = 0; step < n; ++step) {
                    const int64_t i = reverse ? n - 1 - step : step;
                    const T* src = in + (o * n + i) * inner;
                    T* dst = out + (o * n + i) * inner;
                    for (int64_t j = 0; j < inner; ++j) {
                      const A x = widenValue(src[j]);
                      if (exclusive) {
                        dst[j] = narrowValue<T>(acc[j]);
                        acc[j] = wrappingAdd(acc[j], x);
                      } else {
                        acc[j] = wrappingAdd(acc[j], x);
                        dst[j] = narrowValue<T>(acc[j]);
                      }
                    }
                  }
                }
              });
}

#define KILN_INSTANTIATE_SCAN(T)                                                           \
  template void topK<T>(const T*, T*, int64_t*, int64_t, int64_t, int64_t, int64_t, bool); \
  template void cumulativeSum<T>(const T*, T*, int64_t, int64_t, int64_t, bool, bool);
KILN_FOR_EACH_NUMERIC_TYPE(KILN_INSTANTIATE_SCAN)
#undef KILN_INSTANTIATE_SCAN

}  // namespace kiln::kernels
