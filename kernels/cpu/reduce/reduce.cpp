#include "reduce.h"

#include <kernels/cpu/common/parallel.h>
#include <kernels/cpu/reduce/compute_type.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace kiln::kernels {
namespace {

constexpr int64_t kGrainElements = 32768;

// Each reduction is map (per element, given the per-output shift that LogSumExp needs), combine,
// and finish (given the element count). A is the accumulator type.
template <class A>
A absolute(A x) {
  if constexpr (std::is_signed_v<A> || std::is_floating_point_v<A>)
    return x < A(0) ? wrappingMul(x, A(-1)) : x;  // |lowest()| wraps to itself, as in NumPy
  else
    return x;
}

template <class A>
struct SumOf {
  static A init() { return A(0); }
  static A map(A x, A) { return x; }
  static A combine(A a, A b) { return wrappingAdd(a, b); }
  static A finish(A a, int64_t, A) { return a; }
};
template <class A>
struct MeanOf : SumOf<A> {
  static A finish(A a, int64_t n, A) { return n == 0 ? A(0) : A(a / A(n)); }
};
template <class A>
struct SumSquareOf : SumOf<A> {
  static A map(A x, A) { return wrappingMul(x, x); }
};
template <class A>
struct L1Of : SumOf<A> {
  static A map(A x, A) { return absolute(x); }
};
template <class A>
struct L2Of : SumSquareOf<A> {
  static A finish(A a, int64_t, A) { return A(std::sqrt(a)); }
};
template <class A>
struct LogSumOf : SumOf<A> {
  static A finish(A a, int64_t, A) { return A(std::log(a)); }
};
// Shifted by the per-output maximum so that exp never overflows.
template <class A>
struct LogSumExpOf : SumOf<A> {
  static A map(A x, A shift) { return A(std::exp(x - shift)); }
  static A finish(A a, int64_t, A shift) { return A(std::log(a) + shift); }
};
template <class A>
struct ProdOf : SumOf<A> {
  static A init() { return A(1); }
  static A combine(A a, A b) { return wrappingMul(a, b); }
};
template <class A>
struct MaxOf : SumOf<A> {
  static A init() {
    return std::numeric_limits<A>::has_infinity ? -std::numeric_limits<A>::infinity()
                                                : std::numeric_limits<A>::lowest();
  }
  static A combine(A a, A b) { return b > a ? b : a; }
};
template <class A>
struct MinOf : SumOf<A> {
  static A init() {
    return std::numeric_limits<A>::has_infinity ? std::numeric_limits<A>::infinity() : std::numeric_limits<A>::max();
  }
  static A combine(A a, A b) { return b < a ? b : a; }
};

// The input seen as: outer kept positions (keepDims/keepStrides) x reduced positions (offsets) x
// one contiguous innermost run, which is either reduced or kept.
struct ReduceLayout {
  std::vector<int64_t> keepDims, keepStrides;
  std::vector<int64_t> reduceOffsets;
  int64_t innerLen = 1;
  bool innerReduced = true;
  int64_t outerCount = 1;
  int64_t reducedCount = 1;  // elements folded into each output

  int64_t baseOffset(int64_t outerIndex) const {
    int64_t offset = 0;
    for (size_t d = keepDims.size(); d-- > 0;) {
      offset += (outerIndex % keepDims[d]) * keepStrides[d];
      outerIndex /= keepDims[d];
    }
    return offset;
  }
};

ReduceLayout makeLayout(const std::vector<int64_t>& dims, const std::vector<bool>& reduced) {
  // Merge neighbouring dims of the same kind; size-1 dims change nothing and are dropped.
  std::vector<int64_t> mergedDims;
  std::vector<bool> mergedReduced;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] == 1) continue;
    if (!mergedDims.empty() && mergedReduced.back() == reduced[d])
      mergedDims.back() *= dims[d];
    else {
      mergedDims.push_back(dims[d]);
      mergedReduced.push_back(reduced[d]);
    }
  }
  ReduceLayout layout;
  if (mergedDims.empty()) {
    layout.reduceOffsets = {0};
    return layout;
  }
  layout.innerLen = mergedDims.back();
  layout.innerReduced = mergedReduced.back();
  std::vector<int64_t> strides(mergedDims.size(), 1);
  for (size_t d = mergedDims.size() - 1; d-- > 0;) strides[d] = strides[d + 1] * mergedDims[d + 1];
  layout.reduceOffsets = {0};
  for (size_t d = 0; d + 1 < mergedDims.size(); ++d) {
    if (mergedReduced[d]) {
      std::vector<int64_t> grown;
      grown.reserve(layout.reduceOffsets.size() * size_t(mergedDims[d]));
      for (int64_t base : layout.reduceOffsets)
        for (int64_t i = 0; i < mergedDims[d]; ++i) grown.push_back(base + i * strides[d]);
      layout.reduceOffsets = std::move(grown);
    } else {
      layout.keepDims.push_back(mergedDims[d]);
      layout.keepStrides.push_back(strides[d]);
      layout.outerCount *= mergedDims[d];
    }
  }
  layout.reducedCount = int64_t(layout.reduceOffsets.size()) * (layout.innerReduced ? layout.innerLen : 1);
  return layout;
}

// Folds a contiguous run into acc; independent lanes let the compiler vectorise without reordering
// a single chain of float additions.
template <class R, class A, class T>
A foldRun(const T* p, int64_t n, A acc, A shift) {
  constexpr int kLanes = 8;
  int64_t j = 0;
  if (n >= 2 * kLanes) {
    A lanes[kLanes];
    for (int l = 0; l < kLanes; ++l) lanes[l] = R::init();
    for (; j + kLanes <= n; j += kLanes)
      for (int l = 0; l < kLanes; ++l) lanes[l] = R::combine(lanes[l], R::map(widenValue(p[j + l]), shift));
    for (int l = 0; l < kLanes; ++l) acc = R::combine(acc, lanes[l]);
  }
  for (; j < n; ++j) acc = R::combine(acc, R::map(widenValue(p[j]), shift));
  return acc;
}

// shift: one value per output (LogSumExp), or null.
template <class R, class T>
void reduceWith(const ReduceLayout& L, const T* in, T* out, const ComputeType<T>* shift) {
  using A = ComputeType<T>;
  const int64_t count = int64_t(L.reduceOffsets.size());
  if (L.innerReduced) {
    const int64_t work = std::max<int64_t>(1, L.reducedCount);
    parallelFor(L.outerCount, std::max<int64_t>(1, kGrainElements / work), [&](int64_t begin, int64_t end) {
      for (int64_t o = begin; o < end; ++o) {
        const T* base = in + L.baseOffset(o);
        const A s = shift ? shift[o] : A(0);
        A acc = R::init();
        for (int64_t r = 0; r < count; ++r) acc = foldRun<R>(base + L.reduceOffsets[r], L.innerLen, acc, s);
        out[o] = narrowValue<T>(R::finish(acc, L.reducedCount, s));
      }
    });
    return;
  }
  const int64_t n = L.innerLen;
  const int64_t work = std::max<int64_t>(1, count * n);
  parallelFor(L.outerCount, std::max<int64_t>(1, kGrainElements / work), [&](int64_t begin, int64_t end) {
    std::vector<A> acc(static_cast<size_t>(n));
    std::vector<A> zeroShift(shift ? 0 : size_t(n), A(0));
    for (int64_t o = begin; o < end; ++o) {
      const T* base = in + L.baseOffset(o);
      const A* s = shift ? shift + o * n : zeroShift.data();
      std::fill(acc.begin(), acc.end(), R::init());
      for (int64_t r = 0; r < count; ++r) {
        const T* p = base + L.reduceOffsets[r];
        for (int64_t j = 0; j < n; ++j) acc[j] = R::combine(acc[j], R::map(widenValue(p[j]), s[j]));
      }
      T* dst = out + o * n;
      for (int64_t j = 0; j < n; ++j) dst[j] = narrowValue<T>(R::finish(acc[j], L.reducedCount, s[j]));
    }
  });
}

}  // namespace

template <class T>
void reduce(ReduceKind kind, const T* in, T* out, const std::vector<int64_t>& dims, const std::vector<bool>& reduced) {
  using A = ComputeType<T>;
  for (size_t d = 0; d < dims.size(); ++d)
    if (dims[d] == 0 && !reduced[d]) return;  // no outputs
  const ReduceLayout L = makeLayout(dims, reduced);
  switch (kind) {
    case ReduceKind::kSum: return reduceWith<SumOf<A>>(L, in, out, nullptr);
    case ReduceKind::kMean: return reduceWith<MeanOf<A>>(L, in, out, nullptr);
    case ReduceKind::kMax: return reduceWith<MaxOf<A>>(L, in, out, nullptr);
    case ReduceKind::kMin: return reduceWith<MinOf<A>>(L, in, out, nullptr);
    case ReduceKind::kProd: return reduceWith<ProdOf<A>>(L, in, out, nullptr);
    case ReduceKind::kL1: return reduceWith<L1Of<A>>(L, in, out, nullptr);
    case ReduceKind::kL2: return reduceWith<L2Of<A>>(L, in, out, nullptr);
    case ReduceKind::kLogSum: return reduceWith<LogSumOf<A>>(L, in, out, nullptr);
    case ReduceKind::kSumSquare: return reduceWith<SumSquareOf<A>>(L, in, out, nullptr);
    case ReduceKind::kLogSumExp: {
      const int64_t outputs = L.outerCount * (L.innerReduced ? 1 : L.innerLen);
      std::vector<T> maxima(static_cast<size_t>(outputs));
      reduceWith<MaxOf<A>>(L, in, maxima.data(), nullptr);
      std::vector<A> shift(static_cast<size_t>(outputs));
      for (int64_t i = 0; i < outputs; ++i) {
        const A m = widenValue(maxima[i]);
        shift[i] = std::isfinite(double(m)) ? m : A(0);  // empty or infinite rows: plain log(sum(exp))
      }
      return reduceWith<LogSumExpOf<A>>(L, in, out, shift.data());
    }
  }
}

template <class T>
void argExtreme(const T* in, int64_t* out, int64_t outer, int64_t n, int64_t inner, bool largest, bool selectLast) {
  using A = ComputeType<T>;
  // Replace the current best when strictly better, or equal and the last index is wanted.
  auto better = [&](A x, A best) {
    return largest ? (x > best || (selectLast && x == best)) : (x < best || (selectLast && x == best));
  };
  parallelFor(outer, std::max<int64_t>(1, kGrainElements / std::max<int64_t>(1, n * inner)),
              [&](int64_t begin, int64_t end) {
                std::vector<A> best(static_cast<size_t>(inner));
                for (int64_t o = begin; o < end; ++o) {
                  const T* block = in + o * n * inner;
                  int64_t* idx = out + o * inner;
                  for (int64_t j = 0; j < inner; ++j) {
                    best[j] = widenValue(block[j]);
                    idx[j] = 0;
                  }
                  for (int64_t i = 1; i < n; ++i)
                    for (int64_t j = 0; j < inner; ++j) {
                      const A x = widenValue(block[i * inner + j]);
                      if (better(x, best[j])) {
                        best[j] = x;
                        idx[j] = i;
                      }
                    }
                }
              });
}

#define KILN_INSTANTIATE_REDUCE(T)                                                                          \
  template void reduce<T>(ReduceKind, const T*, T*, const std::vector<int64_t>&, const std::vector<bool>&); \
  template void argExtreme<T>(const T*, int64_t*, int64_t, int64_t, int64_t, bool, bool);
KILN_FOR_EACH_NUMERIC_TYPE(KILN_INSTANTIATE_REDUCE)
#undef KILN_INSTANTIATE_REDUCE

}  // namespace kiln::kernels
