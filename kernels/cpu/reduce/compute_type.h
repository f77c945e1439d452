#pragma once
// The type reductions and scans compute in: float for the 16-bit floats, the element type otherwise.
#include <kernels/cpu/common/numeric_types.h>

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

// Integer sums and products wrap around, as ONNX's (NumPy's) integers do. Signed overflow is
// undefined in C++ (GCC 12 at -O3 miscompiled per-lane folds that overflowed), so integers are
// combined as unsigned of at least int's width (narrower ones would be promoted to int, which
// uint16 products overflow) and converted back, which C++20 defines as modular.
template <class A>
using WrappingType = std::conditional_t<(sizeof(A) < sizeof(unsigned)), unsigned, std::make_unsigned_t<A>>;

template <class A>
inline A wrappingAdd(A a, A b) {
  if constexpr (std::is_integral_v<A>)
    return A(WrappingType<A>(a) + WrappingType<A>(b));
  else
    return A(a + b);
}

template <class A>
inline A wrappingMul(A a, A b) {
  if constexpr (std::is_integral_v<A>)
    return A(WrappingType<A>(a) * WrappingType<A>(b));
  else
    return A(a * b);
}

// Explicit instantiation lists shared by the reduce/ kernels.
#define KILN_FOR_EACH_FLOAT_TYPE(X) X(float) X(double) X(Float16) X(BFloat16)
#define KILN_FOR_EACH_INTEGER_TYPE(X) \
  X(int8_t) X(int16_t) X(int32_t) X(int64_t) X(uint8_t) X(uint16_t) X(uint32_t) X(uint64_t)
#define KILN_FOR_EACH_NUMERIC_TYPE(X) KILN_FOR_EACH_FLOAT_TYPE(X) KILN_FOR_EACH_INTEGER_TYPE(X)

}  // namespace kiln::kernels
