#pragma once
// The pieces of each ReduceKind, with the CPU kernels' semantics (kernels/cpu/reduce/reduce.cpp):
// map each element (LogSumExp subtracts the output's maximum), combine (sum, product, max, min;
// Max/Min skip NaN as the CPU's b > a ? b : a does), and finish with the count. A is the
// accumulator: float for float32/float16/bfloat16, double for float64, the integer type itself
// for integers (wrapping, as ONNX Runtime). Shared by the kernels and the host tests.
#include "kernels/cpu/reduce/reduce.h"
#include "kernels/cuda/common/host_device.h"
#include "kernels/cuda/elementwise/binary_ops.h"
#include "kernels/cuda/elementwise/math_functions.h"

#include <cstdint>
#include <limits>
#include <type_traits>

namespace kiln::kernels::cuda {

using kernels::ReduceKind;

enum class Combine : uint8_t { kSum, kProd, kMax, kMin };
enum class ReduceMap : uint8_t { kIdentity, kSquare, kAbs, kExpShifted };

constexpr Combine combineOf(ReduceKind kind) {
  switch (kind) {
    case ReduceKind::kProd: return Combine::kProd;
    case ReduceKind::kMax: return Combine::kMax;
    case ReduceKind::kMin: return Combine::kMin;
    default: return Combine::kSum;
  }
}

constexpr ReduceMap mapOf(ReduceKind kind) {
  switch (kind) {
    case ReduceKind::kSumSquare: case ReduceKind::kL2: return ReduceMap::kSquare;
    case ReduceKind::kL1: return ReduceMap::kAbs;
    case ReduceKind::kLogSumExp: return ReduceMap::kExpShifted;
    default: return ReduceMap::kIdentity;
  }
}

template <Combine C, class A>
KILN_HD A combineIdentity() {
  if constexpr (C == Combine::kSum) return A(0);
  else if constexpr (C == Combine::kProd) return A(1);
  else if constexpr (C == Combine::kMax)
    return std::numeric_limits<A>::has_infinity ? -std::numeric_limits<A>::infinity() : std::numeric_limits<A>::lowest();
  else
    return std::numeric_limits<A>::has_infinity ? std::numeric_limits<A>::infinity() : std::numeric_limits<A>::max();
}

template <Combine C, class A>
KILN_HD A combine(A a, A b) {
  if constexpr (C == Combine::kSum) return BinaryFn<BinaryOp::kAdd>{}(a, b);
  else if constexpr (C == Combine::kProd) return BinaryFn<BinaryOp::kMul>{}(a, b);
  else if constexpr (C == Combine::kMax) return b > a ? b : a;
  else return b < a ? b : a;
}

template <class A>
KILN_HD A reduceMap(ReduceMap map, A x, A shift) {
  switch (map) {
    case ReduceMap::kSquare: return BinaryFn<BinaryOp::kMul>{}(x, x);
    case ReduceMap::kAbs:
      if constexpr (std::is_unsigned_v<A>) return x;
      else if constexpr (std::is_integral_v<A>) return x < 0 ? A(WrapType<A>(0) - WrapType<A>(x)) : x;
      else return math::absOf(x);
    case ReduceMap::kExpShifted:
      if constexpr (std::is_integral_v<A>) return A(math::expOf(double(x) - double(shift)));
      else return math::expOf(x - shift);
    default: return x;
  }
}

// LogSumExp's shift: the maximum when finite (empty or infinite maxima give a plain log-sum-exp).
template <class A>
KILN_HD A logSumExpShift(A maximum) {
  if constexpr (std::is_integral_v<A>) return maximum;
  else return (maximum - maximum == A(0)) ? maximum : A(0);
}

template <class A>
KILN_HD A reduceFinish(ReduceKind kind, A acc, int64_t count, A shift) {
  switch (kind) {
    case ReduceKind::kMean:
      if (count == 0 || A(count) == A(0)) return A(0);
      return A(acc / A(count));
    case ReduceKind::kL2:
      if constexpr (std::is_integral_v<A>) return A(math::sqrtOf(double(acc)));
      else return math::sqrtOf(acc);
    case ReduceKind::kLogSum:
      if constexpr (std::is_integral_v<A>) return A(math::logOf(double(acc)));
      else return math::logOf(acc);
    case ReduceKind::kLogSumExp:
      if constexpr (std::is_integral_v<A>) return A(math::logOf(double(acc)) + double(shift));
      else return math::logOf(acc) + shift;
    default: return acc;
  }
}

}  // namespace kiln::kernels::cuda
