#pragma once
// Per-element functors of the one-input ops, with the CPU kernels' semantics
// (kernels/cpu/elementwise/unary.cpp): NaN handling of the comparisons (a > b ? a : b, so Relu and
// HardSigmoid keep NaN), two's-complement wrap-around for integer Neg/Abs, Shrink on integers
// through double, HardSwish's alpha as float 1/6. C is the compute type: float (also for
// float16/bfloat16), double, or an integer type. Shared by the kernels and the host tests.
#include "math_functions.h"
#include "kernels/cpu/elementwise/unary.h"
#include "kernels/cuda/common/host_device.h"

#include <type_traits>
#include <utility>

namespace kiln::kernels::cuda {

using kernels::UnaryOp;
using kernels::UnaryParams;

// Every UnaryOp, for dispatch.
#define KILN_CUDA_UNARY_OPS(X)                                                                                  \
  X(kNeg) X(kAbs) X(kSign) X(kRelu) X(kShrink) X(kBitwiseNot) X(kSqrt) X(kReciprocal) X(kExp) X(kLog) X(kSin) \
  X(kCos) X(kTan) X(kAsin) X(kAcos) X(kAtan) X(kSinh) X(kCosh) X(kTanh) X(kAsinh) X(kAcosh) X(kAtanh) X(kErf)  \
  X(kFloor) X(kCeil) X(kRound) X(kLeakyRelu) X(kElu) X(kSelu) X(kCelu) X(kHardSigmoid) X(kHardSwish)           \
  X(kThresholdedRelu) X(kSigmoid) X(kSoftplus) X(kSoftsign) X(kGelu) X(kGeluTanh)

constexpr bool unaryTakesIntegers(UnaryOp op) {
  return op == UnaryOp::kNeg || op == UnaryOp::kAbs || op == UnaryOp::kSign || op == UnaryOp::kRelu ||
         op == UnaryOp::kShrink || op == UnaryOp::kBitwiseNot;
}
constexpr bool unaryTakesFloats(UnaryOp op) { return op != UnaryOp::kBitwiseNot; }

// Calls fn(std::integral_constant<UnaryOp, op>{}); false when op is not a known enumerator.
template <class Fn>
bool withUnaryOp(UnaryOp op, Fn&& fn) {
  switch (op) {
#define KILN_CUDA_UNARY_CASE(name)                                 \
  case UnaryOp::name:                                              \
    fn(std::integral_constant<UnaryOp, UnaryOp::name>{});          \
    return true;
    KILN_CUDA_UNARY_OPS(KILN_CUDA_UNARY_CASE)
#undef KILN_CUDA_UNARY_CASE
  }
  return false;
}

// The CPU's lane rules: on NaN the second operand wins.
template <class C>
KILN_HD C maxOf(C a, C b) { return a > b ? a : b; }
template <class C>
KILN_HD C minOf(C a, C b) { return a < b ? a : b; }

template <UnaryOp Op>
struct UnaryFn {
  UnaryParams params;

  template <class C>
  KILN_HD C operator()(C x) const {
    if constexpr (std::is_integral_v<C>) return integer(x);
    else return floating(x);
  }

 private:
  template <class C>
  KILN_HD C integer(C x) const {
    using U = std::make_unsigned_t<C>;
    if constexpr (Op == UnaryOp::kNeg) {
      return C(U(0) - U(x));
    } else if constexpr (Op == UnaryOp::kAbs) {
      if constexpr (std::is_signed_v<C>) return x < 0 ? C(U(0) - U(x)) : x;
      else return x;
    } else if constexpr (Op == UnaryOp::kSign) {
      if constexpr (std::is_signed_v<C>) return C((x > 0) - (x < 0));
      else return C(x > 0 ? 1 : 0);
    } else if constexpr (Op == UnaryOp::kRelu) {
      if constexpr (std::is_signed_v<C>) return x < 0 ? C(0) : x;
      else return x;
    } else if constexpr (Op == UnaryOp::kBitwiseNot) {
      return C(~x);
    } else if constexpr (Op == UnaryOp::kShrink) {
      const double v = double(x), lambd = params.alpha, bias = params.beta;
      return v < -lambd ? C(v + bias) : v > lambd ? C(v - bias) : C(0);
    } else {
      return x;  // float-only ops are refused before launch
    }
  }

  template <class C>
  KILN_HD C floating(C x) const {
    using namespace math;
    const C alpha = C(params.alpha), beta = C(params.beta), gamma = C(params.gamma);
    if constexpr (Op == UnaryOp::kNeg) return -x;
    else if constexpr (Op == UnaryOp::kAbs) return absOf(x);
    else if constexpr (Op == UnaryOp::kSign) return x > C(0) ? C(1) : x < C(0) ? C(-1) : x;  // keeps 0 and NaN
    else if constexpr (Op == UnaryOp::kRelu) return maxOf(C(0), x);
    else if constexpr (Op == UnaryOp::kShrink) return x < -alpha ? x + beta : x > alpha ? x - beta : C(0);
    else if constexpr (Op == UnaryOp::kSqrt) return sqrtOf(x);
    else if constexpr (Op == UnaryOp::kReciprocal) return C(1) / x;
    else if constexpr (Op == UnaryOp::kExp) return expOf(x);
    else if constexpr (Op == UnaryOp::kLog) return logOf(x);
    else if constexpr (Op == UnaryOp::kSin) return sinOf(x);
    else if constexpr (Op == UnaryOp::kCos) return cosOf(x);
    else if constexpr (Op == UnaryOp::kTan) return tanOf(x);
    else if constexpr (Op == UnaryOp::kAsin) return asinOf(x);
    else if constexpr (Op == UnaryOp::kAcos) return acosOf(x);
    else if constexpr (Op == UnaryOp::kAtan) return atanOf(x);
    else if constexpr (Op == UnaryOp::kSinh) return sinhOf(x);
    else if constexpr (Op == UnaryOp::kCosh) return coshOf(x);
    else if constexpr (Op == UnaryOp::kTanh) return tanhOf(x);
    else if constexpr (Op == UnaryOp::kAsinh) return asinhOf(x);
    else if constexpr (Op == UnaryOp::kAcosh) return acoshOf(x);
    else if constexpr (Op == UnaryOp::kAtanh) return atanhOf(x);
    else if constexpr (Op == UnaryOp::kErf) return erfOf(x);
    else if constexpr (Op == UnaryOp::kFloor) return floorOf(x);
    else if constexpr (Op == UnaryOp::kCeil) return ceilOf(x);
    else if constexpr (Op == UnaryOp::kRound) return roundToEven(x);
    else if constexpr (Op == UnaryOp::kLeakyRelu) return x < C(0) ? alpha * x : x;
    else if constexpr (Op == UnaryOp::kElu) return x < C(0) ? alpha * expm1Of(x) : x;
    else if constexpr (Op == UnaryOp::kSelu) return gamma * (x > C(0) ? x : alpha * expm1Of(x));
    else if constexpr (Op == UnaryOp::kCelu) return x > C(0) ? x : alpha * expm1Of(x / alpha);
    else if constexpr (Op == UnaryOp::kHardSigmoid) return maxOf(C(0), minOf(C(1), alpha * x + beta));
    else if constexpr (Op == UnaryOp::kHardSwish) return x * maxOf(C(0), minOf(C(1), C(1.0f / 6.0f) * x + C(0.5f)));
    else if constexpr (Op == UnaryOp::kThresholdedRelu) return x > alpha ? x : C(0);
    else if constexpr (Op == UnaryOp::kSigmoid) return C(1) / (C(1) + expOf(-x));
    else if constexpr (Op == UnaryOp::kSoftplus) return maxOf(C(0), x) + log1pOf(expOf(-absOf(x)));
    else if constexpr (Op == UnaryOp::kSoftsign) return x / (C(1) + absOf(x));
    else if constexpr (Op == UnaryOp::kGelu) return C(0.5) * x * (C(1) + erfOf(x * C(0.70710678118654752)));
    else if constexpr (Op == UnaryOp::kGeluTanh)
      return C(0.5) * x * (C(1) + tanhOf(C(0.79788456080286536) * (x + C(0.044715) * x * x * x)));
    else return x;  // BitwiseNot is refused for floats before launch
  }
};

// Clip: x < lo ? lo : x, then > hi ? hi : that, so hi wins when lo > hi and NaN passes through.
template <class C>
KILN_HD C clipValue(C x, bool hasLo, C lo, bool hasHi, C hi) {
  if (hasLo && x < lo) x = lo;
  if (hasHi && x > hi) x = hi;
  return x;
}

}  // namespace kiln::kernels::cuda
