#include "softmax.h"

#include <kernels/cpu/common/parallel.h>
#include <kernels/cpu/reduce/compute_type.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

namespace kiln::kernels {
namespace {

constexpr int64_t kGrainElements = 16384;

// One [n, inner] block: x holds the widened input, y receives the result (may alias x).
template <class A>
void normaliseBlock(SoftmaxKind kind, const A* x, A* y, int64_t n, int64_t inner, A* scratch) {
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
    for (int64_t j = 0; j < inner; ++j) sums[j] = maxima[j] + std::log(sums[j]);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < inner; ++j) y[i * inner + j] = x[i * inner + j] - sums[j];
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
                                  int64_t classes, int64_t spatial, LossReduction reduction, const int64_t* ignoreIndex) {
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

#define KILN_INSTANTIATE_SOFTMAX(T)                                                                         \
  template void softmax<T>(SoftmaxKind, const T*, T*, int64_t, int64_t, int64_t);                         \
  template int64_t negativeLogLikelihoodLoss<T, int32_t>(const T*, const int32_t*, const T*, T*, int64_t, \
                                                         int64_t, int64_t, LossReduction, const int64_t*);       \
  template int64_t negativeLogLikelihoodLoss<T, int64_t>(const T*, const int64_t*, const T*, T*, int64_t, \
                                                         int64_t, int64_t, LossReduction, const int64_t*);
KILN_FOR_EACH_FLOAT_TYPE(KILN_INSTANTIATE_SOFTMAX)
#undef KILN_INSTANTIATE_SOFTMAX

}  // namespace kiln::kernels
