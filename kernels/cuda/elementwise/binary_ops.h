#pragma once
// Per-element functors of the two-input ops, with the CPU kernels' semantics
// (kernels/cpu/elementwise/binary.cpp, power.cpp): integer arithmetic wraps around, integer
// division and remainder by zero give 0 (and MIN / -1 wraps), Mod takes the divisor's sign and
// FMod the dividend's, Min/Max propagate NaN, shifts by the width or more give 0, right shifts are
// logical. C is the compute type (float for float16/bfloat16). Shared by kernels and host tests.
#include "math_functions.h"
#include "kernels/cpu/elementwise/binary.h"
#include "kernels/cuda/common/element_type.h"
#include "kernels/cuda/common/host_device.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

namespace kiln::kernels::cuda {

using kernels::BinaryOp;

#define KILN_CUDA_BINARY_OPS(X)                                                                                  \
  X(kAdd) X(kSub) X(kMul) X(kDiv) X(kMin) X(kMax) X(kMod) X(kFMod) X(kPRelu) X(kBitwiseAnd) X(kBitwiseOr)        \
  X(kBitwiseXor) X(kBitShiftLeft) X(kBitShiftRight) X(kEqual) X(kLess) X(kLessOrEqual) X(kGreater)                \
  X(kGreaterOrEqual) X(kAnd) X(kOr) X(kXor)

constexpr bool binaryIsComparison(BinaryOp op) {
  return op == BinaryOp::kEqual || op == BinaryOp::kLess || op == BinaryOp::kLessOrEqual ||
         op == BinaryOp::kGreater || op == BinaryOp::kGreaterOrEqual;
}
constexpr bool binaryIsLogical(BinaryOp op) {
  return op == BinaryOp::kAnd || op == BinaryOp::kOr || op == BinaryOp::kXor;
}
constexpr bool binaryIsIntegerOnly(BinaryOp op) {
  return op == BinaryOp::kBitwiseAnd || op == BinaryOp::kBitwiseOr || op == BinaryOp::kBitwiseXor ||
         op == BinaryOp::kBitShiftLeft || op == BinaryOp::kBitShiftRight || op == BinaryOp::kMod;
}
// Arithmetic ops (out has the inputs' type) on a float or integer type.
constexpr bool binaryArithmeticTakes(BinaryOp op, bool integer) {
  if (binaryIsComparison(op) || binaryIsLogical(op)) return false;
  return integer || !binaryIsIntegerOnly(op);
}

template <class Fn>
bool withBinaryOp(BinaryOp op, Fn&& fn) {
  switch (op) {
#define KILN_CUDA_BINARY_CASE(name)                                \
  case BinaryOp::name:                                             \
    fn(std::integral_constant<BinaryOp, BinaryOp::name>{});        \
    return true;
    KILN_CUDA_BINARY_OPS(KILN_CUDA_BINARY_CASE)
#undef KILN_CUDA_BINARY_CASE
  }
  return false;
}

// Unsigned arithmetic at least as wide as int, so that the wrap-around is defined (uint16 * uint16
// would otherwise promote to a signed int and overflow).
template <class C>
using WrapType = std::conditional_t<(sizeof(C) <= 4), uint32_t, uint64_t>;

template <class C>
KILN_HD C divideIntegers(C a, C b) {
  if (b == 0) return C(0);
  if constexpr (std::is_signed_v<C>) {
    if (b == C(-1)) return C(WrapType<C>(0) - WrapType<C>(a));
  }
  return C(a / b);  // truncates toward zero
}

template <class C>
KILN_HD C truncatedRemainder(C a, C b) {
  if (b == 0) return C(0);
  if constexpr (std::is_signed_v<C>) {
    if (b == C(-1)) return C(0);
  }
  return C(a % b);
}

template <class C>
KILN_HD C flooredRemainder(C a, C b) {
  C r = truncatedRemainder(a, b);
  if constexpr (std::is_signed_v<C>) {
    if (r != 0 && ((r < 0) != (b < 0))) r = C(r + b);
  }
  return r;
}

template <BinaryOp Op>
struct BinaryFn {
  template <class C>
  KILN_HD auto operator()(C x, C y) const {
    constexpr bool kInteger = std::is_integral_v<C>;
    using W = WrapType<C>;
    if constexpr (Op == BinaryOp::kAdd) {
      if constexpr (kInteger) return C(W(x) + W(y));
      else return C(x + y);
    } else if constexpr (Op == BinaryOp::kSub) {
      if constexpr (kInteger) return C(W(x) - W(y));
      else return C(x - y);
    } else if constexpr (Op == BinaryOp::kMul) {
      if constexpr (kInteger) return C(W(x) * W(y));
      else return C(x * y);
    } else if constexpr (Op == BinaryOp::kDiv) {
      if constexpr (kInteger) return divideIntegers(x, y);
      else return C(x / y);
    } else if constexpr (Op == BinaryOp::kMin) {
      return (x < y || x != x) ? x : y;  // NaN in either input gives NaN
    } else if constexpr (Op == BinaryOp::kMax) {
      return (x > y || x != x) ? x : y;
    } else if constexpr (Op == BinaryOp::kMod) {
      return flooredRemainder(x, y);  // integers only
    } else if constexpr (Op == BinaryOp::kFMod) {
      if constexpr (kInteger) return truncatedRemainder(x, y);
      else return math::fmodOf(x, y);
    } else if constexpr (Op == BinaryOp::kPRelu) {
      if constexpr (kInteger && !std::is_signed_v<C>) return x;  // never negative
      else if constexpr (kInteger) return x < 0 ? C(W(x) * W(y)) : x;
      else return x < C(0) ? C(x * y) : x;
    } else if constexpr (Op == BinaryOp::kBitwiseAnd) {
      return C(x & y);
    } else if constexpr (Op == BinaryOp::kBitwiseOr) {
      return C(x | y);
    } else if constexpr (Op == BinaryOp::kBitwiseXor) {
      return C(x ^ y);
    } else if constexpr (Op == BinaryOp::kBitShiftLeft || Op == BinaryOp::kBitShiftRight) {
      using U = std::make_unsigned_t<C>;
      if (W(U(y)) >= W(std::numeric_limits<U>::digits)) return C(0);
      if constexpr (Op == BinaryOp::kBitShiftLeft) return C(W(U(x)) << W(U(y)));
      else return C(W(U(x)) >> W(U(y)));
    } else if constexpr (Op == BinaryOp::kEqual) {
      return x == y;
    } else if constexpr (Op == BinaryOp::kLess) {
      return x < y;
    } else if constexpr (Op == BinaryOp::kLessOrEqual) {
      return x <= y;
    } else if constexpr (Op == BinaryOp::kGreater) {
      return x > y;
    } else if constexpr (Op == BinaryOp::kGreaterOrEqual) {
      return x >= y;
    } else if constexpr (Op == BinaryOp::kAnd) {
      return (x != 0) && (y != 0);
    } else if constexpr (Op == BinaryOp::kOr) {
      return (x != 0) || (y != 0);
    } else {
      static_assert(Op == BinaryOp::kXor);
      return (x != 0) != (y != 0);
    }
  }
};

// Equal on bool tensors compares truth values (bytes other than 0 and 1 count as true).
struct BoolEqualFn {
  KILN_HD bool operator()(uint8_t x, uint8_t y) const { return (x != 0) == (y != 0); }
};

// Pow's exponent as the CPU sees it: a float (the base computes in float and so does the
// exponent), a double, or an integer (bits sign-extended; negative for a signed negative value).
struct PowExponent {
  enum Kind : uint8_t { kFloat, kDouble, kInteger };
  Kind kind = kFloat;
  bool negative = false;
  float f = 0;
  double d = 0;
  uint64_t bits = 0;
};

// Element i of a Pow exponent tensor of a numeric `type`.
KILN_HD PowExponent loadPowExponent(const void* p, int64_t i, ElementType type) {
  PowExponent e;
  auto integer = [&](auto v) {
    e.kind = PowExponent::kInteger;
    if constexpr (std::is_signed_v<decltype(v)>) {
      e.negative = v < 0;
      e.bits = uint64_t(int64_t(v));
    } else {
      e.bits = uint64_t(v);
    }
  };
  switch (type) {
    case ElementType::kFloat32: e.f = static_cast<const float*>(p)[i]; break;
    case ElementType::kFloat16: e.f = __half2float(static_cast<const __half*>(p)[i]); break;
    case ElementType::kBFloat16: e.f = __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]); break;
    case ElementType::kFloat64:
      e.kind = PowExponent::kDouble;
      e.d = static_cast<const double*>(p)[i];
      break;
    case ElementType::kInt8: integer(static_cast<const int8_t*>(p)[i]); break;
    case ElementType::kInt16: integer(static_cast<const int16_t*>(p)[i]); break;
    case ElementType::kInt32: integer(static_cast<const int32_t*>(p)[i]); break;
    case ElementType::kInt64: integer(static_cast<const int64_t*>(p)[i]); break;
    case ElementType::kUInt8: integer(static_cast<const uint8_t*>(p)[i]); break;
    case ElementType::kUInt16: integer(static_cast<const uint16_t*>(p)[i]); break;
    case ElementType::kUInt32: integer(static_cast<const uint32_t*>(p)[i]); break;
    case ElementType::kUInt64: integer(static_cast<const uint64_t*>(p)[i]); break;
    default: break;  // refused before launch
  }
  return e;
}

// Exact integer power by squaring, wrapping on overflow; negative exponents give 0 unless the base
// is +-1.
template <class C>
KILN_HD C integerPower(C base, const PowExponent& e) {
  if (e.negative) return base == 1 ? C(1) : base == C(-1) ? C((e.bits & 1) ? -1 : 1) : C(0);
  using W = WrapType<C>;
  W result = 1, factor = W(base);
  for (uint64_t bits = e.bits; bits != 0; bits >>= 1) {
    if (bits & 1) result = W(result * factor);
    factor = W(factor * factor);
  }
  return C(result);
}

// base^exponent in the base's compute type C (float, double, int32_t or int64_t): integer bases
// with integer exponents exactly, float bases with float exponents in float, every other mix via
// double. Float bases skip pow for the exponents the CPU's uniform-exponent path special-cases.
template <class C>
KILN_HD C power(C base, const PowExponent& e) {
  if constexpr (std::is_integral_v<C>) {
    if (e.kind == PowExponent::kInteger) return integerPower(base, e);
    const double exponent = e.kind == PowExponent::kFloat ? double(e.f) : e.d;
    return C(math::powOf(double(base), exponent));
  } else {
    const double exponent = e.kind == PowExponent::kFloat    ? double(e.f)
                            : e.kind == PowExponent::kDouble ? e.d
                            : e.negative                     ? double(int64_t(e.bits))
                                                             : double(e.bits);
    if (exponent == 2.0) return base * base;
    if (exponent == 3.0) return base * base * base;
    if (exponent == 1.0) return base;
    if (exponent == 0.5) return math::sqrtOf(base);
    if (exponent == -1.0) return C(1) / base;
    if (exponent == -0.5) return C(1) / math::sqrtOf(base);
    if constexpr (std::is_same_v<C, float>) {
      if (e.kind == PowExponent::kFloat) return math::powOf(base, e.f);
    }
    return C(math::powOf(double(base), exponent));
  }
}

}  // namespace kiln::kernels::cuda
