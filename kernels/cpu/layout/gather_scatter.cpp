#include "gather_scatter.h"

#include "element_types.h"

#include <kernels/cpu/common/parallel.h>

#include <algorithm>

namespace kiln::kernels {
namespace {

template <class T>
T reduce(const T& a, const T& b, ScatterReduction reduction) {
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
    return fromFloat<T>(reduce(toFloat(a), toFloat(b), reduction));
  } else {
    switch (reduction) {
      case ScatterReduction::kAdd: return T(a + b);
      case ScatterReduction::kMul: return T(a * b);
      case ScatterReduction::kMax: return std::max(a, b);
      case ScatterReduction::kMin: return std::min(a, b);
      case ScatterReduction::kNone: break;
    }
    return b;
  }
}

}  // namespace

template <class T>
void gatherAxis(const T* src, T* dst, int64_t outer, int64_t axisDim, int64_t inner, const int64_t* indices,
                int64_t indexCount) {
  parallelFor(outer * indexCount, std::max<int64_t>(1, kCopyGrainElements / std::max<int64_t>(1, inner)),
              [&](int64_t begin, int64_t end) {
                for (int64_t task = begin; task < end; ++task) {
                  int64_t o = task / indexCount, j = task % indexCount;
                  const T* from = src + (o * axisDim + indices[j]) * inner;
                  if (inner == 1) dst[task] = *from;
                  else std::copy_n(from, inner, dst + task * inner);
                }
              });
}

template <class T>
void gatherSlices(const T* src, T* dst, const int64_t* offsets, int64_t count, int64_t sliceSize) {
  parallelFor(count, std::max<int64_t>(1, kCopyGrainElements / std::max<int64_t>(1, sliceSize)),
              [&](int64_t begin, int64_t end) {
                for (int64_t t = begin; t < end; ++t) std::copy_n(src + offsets[t], sliceSize, dst + t * sliceSize);
              });
}

int64_t elementOffsets(const std::vector<int64_t>& dataDims, const std::vector<int64_t>& indexDims,
                       const int64_t* indices, int64_t axis, int64_t* offsets) {
  size_t rank = dataDims.size();
  std::vector<int64_t> strides(rank, 1);
  for (size_t d = rank; d-- > 1;) strides[d - 1] = strides[d] * dataDims[d];
  int64_t count = 1;
  for (int64_t d : indexDims) count *= d;
  std::vector<int64_t> index(rank, 0);
  int64_t base = 0;  // offset of the current position with the axis coordinate at 0
  for (int64_t i = 0; i < count; ++i) {
    int64_t v = indices[i];
    if (v < 0) v += dataDims[axis];
    if (v < 0 || v >= dataDims[axis]) return i;
    offsets[i] = base + v * strides[axis];
    for (size_t d = rank; d-- > 0;) {  // advance the multi-index over indexDims
      if (++index[d] < indexDims[d]) {
        if (int64_t(d) != axis) base += strides[d];
        break;
      }
      if (int64_t(d) != axis) base -= strides[d] * (indexDims[d] - 1);
      index[d] = 0;
    }
  }
  return -1;
}

template <class T>
void scatterSlices(T* dst, const T* updates, const int64_t* offsets, int64_t count, int64_t sliceSize) {
  for (int64_t t = 0; t < count; ++t) std::copy_n(updates + t * sliceSize, sliceSize, dst + offsets[t]);
}

template <class T>
void scatterSlicesReduce(T* dst, const T* updates, const int64_t* offsets, int64_t count, int64_t sliceSize,
                         ScatterReduction reduction) {
  for (int64_t t = 0; t < count; ++t) {
    T* out = dst + offsets[t];
    const T* in = updates + t * sliceSize;
    for (int64_t k = 0; k < sliceSize; ++k) out[k] = reduce(out[k], in[k], reduction);
  }
}

template <class T>
void oneHot(const int64_t* indices, T* dst, int64_t outer, int64_t depth, int64_t inner, const T& offValue,
            const T& onValue) {
  std::fill_n(dst, outer * depth * inner, offValue);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      int64_t k = indices[o * inner + i];
      if (k >= 0 && k < depth) dst[(o * depth + k) * inner + i] = onValue;
    }
}

#define KILN_INSTANTIATE_STORAGE(T)                                                             \
  template void gatherAxis<T>(const T*, T*, int64_t, int64_t, int64_t, const int64_t*, int64_t); \
  template void gatherSlices<T>(const T*, T*, const int64_t*, int64_t, int64_t);                 \
  template void scatterSlices<T>(T*, const T*, const int64_t*, int64_t, int64_t);                \
  template void oneHot<T>(const int64_t*, T*, int64_t, int64_t, int64_t, const T&, const T&);
KILN_FOR_EACH_STORAGE_TYPE(KILN_INSTANTIATE_STORAGE)
#undef KILN_INSTANTIATE_STORAGE

#define KILN_INSTANTIATE_NUMERIC(T) \
  template void scatterSlicesReduce<T>(T*, const T*, const int64_t*, int64_t, int64_t, ScatterReduction);
KILN_FOR_EACH_NUMERIC_TYPE(KILN_INSTANTIATE_NUMERIC)
#undef KILN_INSTANTIATE_NUMERIC

}  // namespace kiln::kernels
