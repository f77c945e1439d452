#pragma once
// Element types of the elementwise kernels: the 16-bit float storage types and their bulk
// conversions to float (F16C where available), and the type lists the kernels are instantiated for.
// Kernels for Float16/BFloat16 convert tiles of a run to float, compute, and convert back.
#include "kernels/cpu/common/numeric_types.h"

#include <cstdint>
#include <type_traits>

namespace kiln::kernels {

void widen(const Float16* in, float* out, int64_t n);
void widen(const BFloat16* in, float* out, int64_t n);
void narrow(const float* in, Float16* out, int64_t n);
void narrow(const float* in, BFloat16* out, int64_t n);

template <class T>
inline constexpr bool kIsHalfFloat = std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;

// The type arithmetic on T happens in: float for the 16-bit floats, T otherwise.
template <class T>
using ComputeType = std::conditional_t<kIsHalfFloat<T>, float, T>;

// Elements per conversion tile: small enough to stay in L1 next to its float copy.
inline constexpr int64_t kHalfTile = 256;

// X(T) for every numeric element type.
#define KILN_ELEMENTWISE_FLOAT_TYPES(X) X(float) X(double) X(Float16) X(BFloat16)
#define KILN_ELEMENTWISE_INTEGER_TYPES(X) \
  X(int8_t) X(int16_t) X(int32_t) X(int64_t) X(uint8_t) X(uint16_t) X(uint32_t) X(uint64_t)
#define KILN_ELEMENTWISE_NUMERIC_TYPES(X) KILN_ELEMENTWISE_FLOAT_TYPES(X) KILN_ELEMENTWISE_INTEGER_TYPES(X)

}  // namespace kiln::kernels
