#include "rearrange.h"

#include "element_types.h"

#include <kernels/cpu/common/parallel.h>

#include <algorithm>

namespace kiln::kernels {

template <class T>
void triangle(const T* src, T* dst, int64_t batches, int64_t rows, int64_t cols, int64_t k, bool upper) {
  parallelFor(batches * rows, std::max<int64_t>(1, kCopyGrainElements / std::max<int64_t>(1, cols)),
              [&](int64_t begin, int64_t end) {
                for (int64_t row = begin; row < end; ++row) {
                  int64_t i = row % rows;
                  const T* in = src + row * cols;
                  T* out = dst + row * cols;
                  // Upper keeps columns j >= i + k; lower keeps j <= i + k.
                  int64_t keepBegin = upper ? std::clamp<int64_t>(i + k, 0, cols) : 0;
                  int64_t keepEnd = upper ? cols : std::clamp<int64_t>(i + k + 1, 0, cols);
                  std::fill(out, out + keepBegin, T{});
                  std::copy(in + keepBegin, in + keepEnd, out + keepBegin);
                  std::fill(out + keepEnd, out + cols, T{});
                }
              });
}

template <class T>
void reverseSequence(const T* src, T* dst, int64_t time, int64_t batch, int64_t inner, const int64_t* lengths,
                     bool batchMajor) {
  auto offset = [&](int64_t t, int64_t b) { return (batchMajor ? b * time + t : t * batch + b) * inner; };
  parallelFor(time * batch, std::max<int64_t>(1, kCopyGrainElements / std::max<int64_t>(1, inner)),
              [&](int64_t begin, int64_t end) {
                for (int64_t task = begin; task < end; ++task) {
                  int64_t t = task / batch, b = task % batch;
                  int64_t from = t < lengths[b] ? lengths[b] - 1 - t : t;
                  std::copy_n(src + offset(from, b), inner, dst + offset(t, b));
                }
              });
}

#define KILN_INSTANTIATE(T)                                                              \
  template void triangle<T>(const T*, T*, int64_t, int64_t, int64_t, int64_t, bool);     \
  template void reverseSequence<T>(const T*, T*, int64_t, int64_t, int64_t, const int64_t*, bool);
KILN_FOR_EACH_STORAGE_TYPE(KILN_INSTANTIATE)
#undef KILN_INSTANTIATE

}  // namespace kiln::kernels
