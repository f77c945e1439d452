#pragma once
// The type reductions and scans compute in: float for the 16-bit floats, the element type otherwise.
#include <kernels/cpu/common/numeric_types.h>

#include <cstdint>
#include <type_traits>

namespace kiln::kernels {

template <class T>
constexpr bool kIsHalfFloat = std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;

template <class T>
using ComputeType = std::conditional_t<kIsHalfFloat<T>, float, T>;

template <class T>
inline ComputeType<T> widenValue(T v) {
  if constexpr (kIsHalfFloat<T>)
    return toFloat(v);
  else
    return v;
}

template <class T>
inline T narrowValue(ComputeType<T> v) {
  if constexpr (kIsHalfFloat<T>)
    return fromFloat<T>(v);
  else
    return v;
}

// a + b and a * b; integers wrap (as ONNX Runtime) in unsigned arithmetic at least as wide as int,
// since signed overflow is undefined (and GCC 12.2 at -O3 miscompiled the vectorised lanes of
// reductions that folded int8/int16 through int).
template <class A>
using WrapArithmetic = std::conditional_t<(sizeof(A) <= 4), uint32_t, uint64_t>;

template <class A>
inline A addWrapping(A a, A b) {
  if constexpr (std::is_integral_v<A>)
    return A(WrapArithmetic<A>(a) + WrapArithmetic<A>(b));
  else
    return A(a + b);
}

template <class A>
inline A multiplyWrapping(A a, A b) {
  if constexpr (std::is_integral_v<A>)
    return A(WrapArithmetic<A>(a) * WrapArithmetic<A>(b));
  else
    return A(a * b);
}

// Explicit instantiation lists shared by the reduce/ kernels.
#define KILN_FOR_EACH_FLOAT_TYPE(X) X(float) X(double) X(Float16) X(BFloat16)
#define KILN_FOR_EACH_INTEGER_TYPE(X) \
  X(int8_t) X(int16_t) X(int32_t) X(int64_t) X(uint8_t) X(uint16_t) X(uint32_t) X(uint64_t)
#define KILN_FOR_EACH_NUMERIC_TYPE(X) KILN_FOR_EACH_FLOAT_TYPE(X) KILN_FOR_EACH_INTEGER_TYPE(X)

}  // namespace kiln::kernels
