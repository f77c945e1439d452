#pragma once
// Softmax-like normalisations along the middle axis of [outer, n, inner], and the losses built on
// them. Float types only (float16/bfloat16 compute in float).
#include <cstdint>

namespace kiln::kernels {

enum class SoftmaxKind {
  kSoftmax,     // exp(x - max) / sum(exp(x - max))
  kLogSoftmax,  // x - max - log(sum(exp(x - max)))
  kHardmax,     // 1 at the first maximum, 0 elsewhere
};

template <class T>
void softmax(SoftmaxKind kind, const T* in, T* out, int64_t outer, int64_t n, int64_t inner);

enum class LossReduction { kNone, kSum, kMean };

// NegativeLogLikelihoodLoss: logProb is [batch, classes, spatial], target [batch, spatial] (spatial
// is 1 for 2-D input). loss = -logProb[b, target, s] * weight[target] (weight may be null: 1);
// targets equal to *ignoreIndex (when not null) contribute 0 and weigh 0. kNone writes batch*spatial values, kSum
// and kMean one (kMean divides by the total weight). Returns -1, or the position in target of a
// class index outside [0, classes) that is not ignored (nothing is written then).
template <class T, class Index>
int64_t negativeLogLikelihoodLoss(const T* logProb, const Index* target, const T* weight, T* loss, int64_t batch,
                                  int64_t classes, int64_t spatial, LossReduction reduction, const int64_t* ignoreIndex);

}  // namespace kiln::kernels
