#include "softmax.h"

#include <kernels/cpu/common/parallel.h>
#include <kernels/cpu/reduce/compute_type.h>

#include <algorithm>
#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif
#include <cmath>
#include <concepts>
#include <limits>
#include <type_traits>
#include <vector>

namespace kiln::kernels {
namespace {

constexpr int64_t kGrainElements = 16384;
// Row primitives for float: AVX2 where the kernels are built for it (the default x86-64-v3), since
// exp with a libm call does not vectorise; plain loops otherwise and for double.
#if defined(__AVX2__) && defined(__FMA__)
// exp(x) = 2^k * p(r) with x = k*ln2 + r, |r| <= ln2/2 and p a degree-6 Taylor polynomial
// (relative error about 2e-7). Below -87.3, where float exp underflows, it gives about 1e-38.
// NaN stays NaN (max/min return their second operand when one is NaN).
inline __m256 exp8(__m256 x) {
  x = _mm256_min_ps(_mm256_set1_ps(88.7f), _mm256_max_ps(_mm256_set1_ps(-87.3f), x));
  const __m256 k =
      _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(k, _mm256_set1_ps(0.693145752f), x);  // ln2 split in two for precision
  r = _mm256_fnmadd_ps(k, _mm256_set1_ps(1.42860677e-6f), r);
  __m256 p = _mm256_set1_ps(1.0f / 720.0f);
  for (float c : {1.0f / 120.0f, 1.0f / 24.0f, 1.0f / 6.0f, 0.5f, 1.0f, 1.0f})
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(c));
  const __m256i exponent = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(exponent));
}

inline float horizontalSum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s, _mm_shuffle_ps(s, s, 1)));
}

inline float rowMax(const float* x, int64_t n) {
  __m256 m = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) m = _mm256_max_ps(m, _mm256_loadu_ps(x + i));
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, m);
  float result = *std::max_element(lanes, lanes + 8);
  for (; i < n; ++i) result = std::max(result, x[i]);
  return result;
}

// Sum of exp(x - shift); the terms go to y too when y is not null (y may alias x).
inline float sumExp(const float* x, float* y, int64_t n, float shift) {
  const __m256 s = _mm256_set1_ps(shift);
  __m256 acc = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), s));
    if (y) _mm256_storeu_ps(y + i, e);
    acc = _mm256_add_ps(acc, e);
  }
  float sum = horizontalSum(acc);
  for (; i < n; ++i) {
    alignas(32) float lane[8] = {x[i] - shift};
    const float e = _mm_cvtss_f32(_mm256_castps256_ps128(exp8(_mm256_load_ps(lane))));
    if (y) y[i] = e;
    sum += e;
  }
  return sum;
}
#endif

// The scalar forms: double always, float where there is no AVX2.
template <std::floating_point A>
inline A rowMax(const A* x, int64_t n) { return *std::max_element(x, x + n); }
template <std::floating_point A>
inline A sumExp(const A* x, A* y, int64_t n, A shift) {
  A sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    const A e = std::exp(x[i] - shift);
    if (y) y[i] = e;
    sum += e;
  }
  return sum;
}

// Softmax / LogSoftmax of one contiguous row (the common last-axis case).
template <class A>
void normaliseRow(SoftmaxKind kind, const A* x, A* y, int64_t n) {
  const A max = rowMax(x, n);
  const A sum = sumExp(x, kind == SoftmaxKind::kSoftmax ? y : nullptr, n, max);
  if (kind == SoftmaxKind::kSoftmax) {
    const A scale = A(1) / sum;
    for (int64_t i = 0; i < n; ++i) y[i] *= scale;
  } else {
    const A logSum = std::log(sum);  // (x - max) is exact near max; adding max first would round
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - max) - logSum;
  }
}

// One [n, inner] block: x holds the widened input, y receives the result (may alias x).
template <class A>
void normaliseBlock(SoftmaxKind kind, const A* x, A* y, int64_t n, int64_t inner, A* scratch) {
  if (inner == 1 && kind != SoftmaxKind::kHardmax) return normaliseRow(kind, x, y, n);
  A* maxima = scratch;
  A* sums = scratch + inner;
  std::fill(maxima, maxima + inner, -std::numeric_limits<A>::infinity());
  std::vector<int64_t> argmax;
  if (kind == SoftmaxKind::kHardmax) argmax.assign(size_t(inner), 0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < inner; ++j) {
      const A v = x[i * inner + j];
      if (v > maxima[j]) {
        maxima[j] = v;
        if (kind == SoftmaxKind::kHardmax) argmax[j] = i;
      }
    }
  if (kind == SoftmaxKind::kHardmax) {
    std::fill(y, y + n * inner, A(0));
    for (int64_t j = 0; j < inner; ++j) y[argmax[j] * inner + j] = A(1);
    return;
  }
  std::fill(sums, sums + inner, A(0));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < inner; ++j) {
      const A e = std::exp(x[i * inner + j] - maxima[j]);
      if (kind == SoftmaxKind::kSoftmax) y[i * inner + j] = e;
      sums[j] += e;
    }
  if (kind == SoftmaxKind::kSoftmax) {
    for (int64_t j = 0; j < inner; ++j) sums[j] = A(1) / sums[j];
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < inner; ++j) y[i * inner + j] *= sums[j];
  } else {
    for (int64_t j = 0; j < inner; ++j) sums[j] = std::log(sums[j]);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < inner; ++j) y[i * inner + j] = (x[i * inner + j] - maxima[j]) - sums[j];
  }
}

}  // namespace

template <class T>
void softmax(SoftmaxKind kind, const T* in, T* out, int64_t outer, int64_t n, int64_t inner) {
  using A = ComputeType<T>;
  const int64_t block = n * inner;
  if (block == 0) return;
  parallelFor(outer, std::max<int64_t>(1, kGrainElements / block), [&](int64_t begin, int64_t end) {
    std::vector<A> scratch(static_cast<size_t>(2 * inner));
    std::vector<A> widened(std::is_same_v<T, A> ? 0 : size_t(block));
    for (int64_t o = begin; o < end; ++o) {
      if constexpr (std::is_same_v<T, A>) {
        normaliseBlock<A>(kind, in + o * block, out + o * block, n, inner, scratch.data());
      } else {
        for (int64_t i = 0; i < block; ++i) widened[i] = widenValue(in[o * block + i]);
        normaliseBlock<A>(kind, widened.data(), widened.data(), n, inner, scratch.data());
        for (int64_t i = 0; i < block; ++i) out[o * block + i] = narrowValue<T>(widened[i]);
      }
    }
  });
}

template <class T, class Index>
int64_t negativeLogLikelihoodLoss(const T* logProb, const Index* target, const T* weight, T* loss, int64_t batch,
                                  int64_t classes, int64_t spatial, LossReduction reduction,
                                  const int64_t* ignoreIndex) {
  const int64_t count = batch * spatial;
  for (int64_t p = 0; p < count; ++p) {
    const int64_t t = int64_t(target[p]);
    if (!(ignoreIndex && t == *ignoreIndex) && (t < 0 || t >= classes)) return p;
  }
  // Sums in double: the mean divides two long sums.
  double lossSum = 0.0, weightSum = 0.0;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t s = 0; s < spatial; ++s) {
      const int64_t p = b * spatial + s;
      const int64_t t = int64_t(target[p]);
      double value = 0.0, w = 0.0;
      if (!(ignoreIndex && t == *ignoreIndex)) {
        w = weight ? double(widenValue(weight[t])) : 1.0;
        value = -double(widenValue(logProb[(b * classes + t) * spatial + s])) * w;
      }
      if (reduction == LossReduction::kNone) loss[p] = narrowValue<T>(ComputeType<T>(value));
      lossSum += value;
      weightSum += w;
    }
  if (reduction == LossReduction::kSum) *loss = narrowValue<T>(ComputeType<T>(lossSum));
  if (reduction == LossReduction::kMean) *loss = narrowValue<T>(ComputeType<T>(lossSum / weightSum));
  return -1;
}

#define KILN_INSTANTIATE_SOFTMAX(T)                                                                                \
  template void softmax<T>(SoftmaxKind, const T*, T*, int64_t, int64_t, int64_t);                                  \
  template int64_t negativeLogLikelihoodLoss<T, int32_t>(const T*, const int32_t*, const T*, T*, int64_t, int64_t, \
                                                         int64_t, LossReduction, const int64_t*);                  \
  template int64_t negativeLogLikelihoodLoss<T, int64_t>(const T*, const int64_t*, const T*, T*, int64_t, int64_t, \
                                                         int64_t, LossReduction, const int64_t*);
KILN_FOR_EACH_FLOAT_TYPE(KILN_INSTANTIATE_SOFTMAX)
#undef KILN_INSTANTIATE_SOFTMAX

}  // namespace kiln::kernels
