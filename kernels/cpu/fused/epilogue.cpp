#include "epilogue.h"

#include "kernels/cpu/common/parallel.h"
#include "kernels/cpu/elementwise/fast_math.h"

#include <algorithm>

namespace kiln::kernels {
namespace {

using namespace lanes;

// Lane-generic (Float8 or float) activations; the transcendental ones use the approximations the
// standalone activation kernels use, so a fused layer computes what the unfused pair computes.
template <Activation A, class V>
inline V activate(V x, float alpha, float beta) {
  if constexpr (A == Activation::kNone) return x;
  if constexpr (A == Activation::kRelu) return maxOf(V(0.0f), x);
  if constexpr (A == Activation::kClip) return minOf(maxOf(x, V(alpha)), V(beta));
  if constexpr (A == Activation::kSigmoid) return sigmoidApprox(x);
  if constexpr (A == Activation::kHardSigmoid) return minOf(maxOf(mulAdd(V(alpha), x, V(beta)), V(0.0f)), V(1.0f));
  if constexpr (A == Activation::kHardSwish)
    return x * minOf(maxOf(mulAdd(x, V(1.0f / 6.0f), V(0.5f)), V(0.0f)), V(1.0f));
  if constexpr (A == Activation::kSiLU) return x * sigmoidApprox(x);
  if constexpr (A == Activation::kGelu) return geluErfApprox(x);
  if constexpr (A == Activation::kGeluTanh) return geluTanhApprox(x);
  if constexpr (A == Activation::kLeakyRelu) return select(less(x, V(0.0f)), V(alpha) * x, x);
  if constexpr (A == Activation::kTanh) return tanhApprox(x);
}

enum class Residual { kNone, kBeforeActivation, kAfterActivation };

// One run of elements that share a bias value (kBiasPerElement false: `bias` points at it, or is
// null) or read consecutive bias values (kBiasPerElement true).
template <Activation A, Residual R, bool kBiasPerElement>
void applyRun(float* data, const float* residual, const float* bias, int64_t count, float alpha, float beta) {
  auto one = [&](auto x, int64_t i) {
    using V = decltype(x);
    if constexpr (kBiasPerElement) x = x + load(bias + i, V{});
    else if (bias) x = x + V(*bias);
    if constexpr (R == Residual::kBeforeActivation) x = x + load(residual + i, V{});
    x = activate<A>(x, alpha, beta);
    if constexpr (R == Residual::kAfterActivation) x = x + load(residual + i, V{});
    return x;
  };
  int64_t i = 0;
#if KILN_FLOAT8_LANES
  for (; i + 8 <= count; i += 8) store(data + i, one(load(data + i, Float8{}), i));
#endif
  for (; i < count; ++i) data[i] = one(data[i], i);
}

// Splits [first, first + count) into runs along which the bias is constant or contiguous.
template <Activation A, Residual R>
void applySpan(float* output, int64_t first, int64_t count, const Epilogue& e) {
  const int64_t end = first + count;
  for (int64_t i = first; i < end;) {
    int64_t runEnd = end;
    const float* residual = R == Residual::kNone ? nullptr : e.residual + i;
    if (!e.bias) {
      applyRun<A, R, false>(output + i, residual, nullptr, runEnd - i, e.alpha, e.beta);
    } else if (e.biasInner == 1) {
      const int64_t column = i % e.biasLength;
      runEnd = std::min(end, i + e.biasLength - column);
      applyRun<A, R, true>(output + i, residual, e.bias + column, runEnd - i, e.alpha, e.beta);
    } else {
      const int64_t block = i / e.biasInner;
      runEnd = std::min(end, (block + 1) * e.biasInner);
      applyRun<A, R, false>(output + i, residual, e.bias + block % e.biasLength, runEnd - i, e.alpha, e.beta);
    }
    i = runEnd;
  }
}

template <Activation A>
void applySpanFor(float* output, int64_t first, int64_t count, const Epilogue& e) {
  if (!e.residual) return applySpan<A, Residual::kNone>(output, first, count, e);
  if (e.residualBeforeActivation) return applySpan<A, Residual::kBeforeActivation>(output, first, count, e);
  applySpan<A, Residual::kAfterActivation>(output, first, count, e);
}

}  // namespace

void applyEpilogueSpan(float* output, int64_t first, int64_t count, const Epilogue& e) {
  if (count <= 0 || e.isIdentity()) return;
  switch (e.activation) {
    case Activation::kNone: return applySpanFor<Activation::kNone>(output, first, count, e);
    case Activation::kRelu: return applySpanFor<Activation::kRelu>(output, first, count, e);
    case Activation::kClip: return applySpanFor<Activation::kClip>(output, first, count, e);
    case Activation::kSigmoid: return applySpanFor<Activation::kSigmoid>(output, first, count, e);
    case Activation::kHardSigmoid: return applySpanFor<Activation::kHardSigmoid>(output, first, count, e);
    case Activation::kHardSwish: return applySpanFor<Activation::kHardSwish>(output, first, count, e);
    case Activation::kSiLU: return applySpanFor<Activation::kSiLU>(output, first, count, e);
    case Activation::kGelu: return applySpanFor<Activation::kGelu>(output, first, count, e);
    case Activation::kGeluTanh: return applySpanFor<Activation::kGeluTanh>(output, first, count, e);
    case Activation::kLeakyRelu: return applySpanFor<Activation::kLeakyRelu>(output, first, count, e);
    case Activation::kTanh: return applySpanFor<Activation::kTanh>(output, first, count, e);
  }
}

void applyEpilogue(float* data, int64_t count, const Epilogue& e) {
  if (e.isIdentity()) return;
  parallelFor(count, 1 << 14, [&](int64_t begin, int64_t end) { applyEpilogueSpan(data, begin, end - begin, e); });
}

}  // namespace kiln::kernels
