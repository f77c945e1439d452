#include "epilogue.h"

#include "kernels/cpu/common/parallel.h"

#include <algorithm>
#include <cmath>

namespace kiln::kernels {
namespace {

template <Activation A>
inline float activate(float x, float alpha, float beta) {
  if constexpr (A == Activation::kNone) return x;
  if constexpr (A == Activation::kRelu) return x > 0 ? x : 0;
  if constexpr (A == Activation::kClip) return std::min(std::max(x, alpha), beta);
  if constexpr (A == Activation::kSigmoid) return 1.0f / (1.0f + std::exp(-x));
  if constexpr (A == Activation::kHardSigmoid) return std::clamp(alpha * x + beta, 0.0f, 1.0f);
  if constexpr (A == Activation::kHardSwish) return x * std::clamp(x / 6.0f + 0.5f, 0.0f, 1.0f);
  if constexpr (A == Activation::kSiLU) return x / (1.0f + std::exp(-x));
  if constexpr (A == Activation::kGelu) return 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f));
  if constexpr (A == Activation::kGeluTanh)
    return 0.5f * x * (1.0f + std::tanh(0.79788456080286536f * (x + 0.044715f * x * x * x)));
  if constexpr (A == Activation::kLeakyRelu) return x >= 0 ? x : alpha * x;
  if constexpr (A == Activation::kTanh) return std::tanh(x);
}

template <Activation A>
void applyRange(float* data, int64_t begin, int64_t end, const Epilogue& e) {
  for (int64_t i = begin; i < end; ++i) {
    float x = data[i];
    if (e.bias) x += e.bias[(i / e.biasInner) % e.biasLength];
    if (e.residual && e.residualBeforeActivation) x += e.residual[i];
    x = activate<A>(x, e.alpha, e.beta);
    if (e.residual && !e.residualBeforeActivation) x += e.residual[i];
    data[i] = x;
  }
}

template <Activation A>
void applyAll(float* data, int64_t count, const Epilogue& e) {
  parallelFor(count, 1 << 14, [&](int64_t begin, int64_t end) { applyRange<A>(data, begin, end, e); });
}

}  // namespace

void applyEpilogue(float* data, int64_t count, const Epilogue& e) {
  switch (e.activation) {
    case Activation::kNone: return applyAll<Activation::kNone>(data, count, e);
    case Activation::kRelu: return applyAll<Activation::kRelu>(data, count, e);
    case Activation::kClip: return applyAll<Activation::kClip>(data, count, e);
    case Activation::kSigmoid: return applyAll<Activation::kSigmoid>(data, count, e);
    case Activation::kHardSigmoid: return applyAll<Activation::kHardSigmoid>(data, count, e);
    case Activation::kHardSwish: return applyAll<Activation::kHardSwish>(data, count, e);
    case Activation::kSiLU: return applyAll<Activation::kSiLU>(data, count, e);
    case Activation::kGelu: return applyAll<Activation::kGelu>(data, count, e);
    case Activation::kGeluTanh: return applyAll<Activation::kGeluTanh>(data, count, e);
    case Activation::kLeakyRelu: return applyAll<Activation::kLeakyRelu>(data, count, e);
    case Activation::kTanh: return applyAll<Activation::kTanh>(data, count, e);
  }
}

}  // namespace kiln::kernels
