#pragma once
// Element conversions for Cast with the CPU kernels' rules (kernels/cpu/elementwise/cast.h):
// - to bool: nonzero (NaN included) is true; from bool: 0 or 1.
// - float to integer: truncate toward zero, saturate at the integer's range, NaN gives 0.
// - to float16/bfloat16/fp8: through float first (so double and int64 round twice, as on the
//   CPU), then round to nearest even; fp8 saturates (float8.h).
// - integer to integer: two's-complement wrap-around; integer to float: round to nearest.
// convertElement<Dst>(Src) is the typed form; CastScalar carries any element between a run-time
// typed load and store, so that one kernel serves every pair of types. Host and device share this
// code, and the host tests check both forms against the CPU's cast for every pair.
#include "float8.h"
#include "kernels/cuda/common/element_type.h"
#include "kernels/cuda/common/host_device.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>
#include <limits>
#include <type_traits>

namespace kiln::kernels::cuda {

template <class T>
inline constexpr bool kIsFloat8 = std::is_same_v<T, __nv_fp8_e4m3> || std::is_same_v<T, __nv_fp8_e5m2>;
// Storage-only float types: arithmetic and conversions go through float.
template <class T>
inline constexpr bool kIsNarrowFloat =
    std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16> || kIsFloat8<T>;

template <class T>
KILN_HD float narrowToFloat(T v) {
  if constexpr (std::is_same_v<T, __half>) return __half2float(v);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __bfloat162float(v);
  else if constexpr (std::is_same_v<T, __nv_fp8_e4m3>) return decodeFloat8<Float8E4M3Format>(v.__x);
  else return decodeFloat8<Float8E5M2Format>(v.__x);
}

template <class T>
KILN_HD T floatToNarrow(float f) {
  if constexpr (std::is_same_v<T, __half>) {
    return __float2half_rn(f);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __float2bfloat16_rn(f);
  } else {
    T result;
    result.__x = encodeFloat8<std::conditional_t<std::is_same_v<T, __nv_fp8_e4m3>, Float8E4M3Format, Float8E5M2Format>>(f);
    return result;
  }
}

// Saturating, truncating float -> integer; NaN gives 0. Every float type's values are exact in
// double, and the bounds (powers of two) are exact in every float type, so this gives what the
// CPU's per-source-type comparison gives.
template <class Dst>
KILN_HD Dst floatingToInteger(double v) {
  constexpr double kAboveMax = 2.0 * double(std::numeric_limits<Dst>::max() / 2 + 1);
  if (v != v) return Dst(0);
  if (v >= kAboveMax) return std::numeric_limits<Dst>::max();
  if (v <= double(std::numeric_limits<Dst>::min())) return std::numeric_limits<Dst>::min();
  return Dst(v);
}

template <class Dst, class Src>
KILN_HD Dst convertElement(Src v) {
  if constexpr (std::is_same_v<Src, Dst>) {
    return v;
  } else if constexpr (kIsNarrowFloat<Src>) {
    return convertElement<Dst>(narrowToFloat(v));
  } else if constexpr (kIsNarrowFloat<Dst>) {
    return floatToNarrow<Dst>(convertElement<float>(v));
  } else if constexpr (std::is_same_v<Dst, bool>) {
    return v != Src(0);
  } else if constexpr (std::is_floating_point_v<Src> && std::is_integral_v<Dst>) {
    return floatingToInteger<Dst>(double(v));
  } else {
    return static_cast<Dst>(v);
  }
}

// Any element: a float type's value (exact in double), or an integer's bits (sign-extended for
// signed types), or a bool as 0/1.
struct CastScalar {
  enum Kind : uint8_t { kFloating, kSigned, kUnsigned, kBool };
  Kind kind = kFloating;
  double floating = 0;
  uint64_t bits = 0;
};

template <class Src>
KILN_HD CastScalar toCastScalar(Src v) {
  CastScalar s;
  if constexpr (kIsNarrowFloat<Src>) {
    s.floating = double(narrowToFloat(v));
  } else if constexpr (std::is_floating_point_v<Src>) {
    s.floating = double(v);
  } else if constexpr (std::is_same_v<Src, bool>) {
    s.kind = CastScalar::kBool;
    s.bits = v ? 1 : 0;
  } else if constexpr (std::is_signed_v<Src>) {
    s.kind = CastScalar::kSigned;
    s.bits = uint64_t(int64_t(v));
  } else {
    s.kind = CastScalar::kUnsigned;
    s.bits = uint64_t(v);
  }
  return s;
}

template <class Dst>
KILN_HD Dst fromCastScalar(const CastScalar& s) {
  if constexpr (kIsNarrowFloat<Dst>) {
    return floatToNarrow<Dst>(fromCastScalar<float>(s));
  } else if constexpr (std::is_same_v<Dst, bool>) {
    return s.kind == CastScalar::kFloating ? s.floating != 0.0 : s.bits != 0;
  } else if constexpr (std::is_floating_point_v<Dst>) {
    switch (s.kind) {
      case CastScalar::kFloating: return Dst(s.floating);
      case CastScalar::kSigned: return Dst(int64_t(s.bits));
      default: return Dst(s.bits);
    }
  } else {
    if (s.kind == CastScalar::kFloating) return floatingToInteger<Dst>(s.floating);
    return static_cast<Dst>(s.bits);
  }
}

// Calls fn(T{}) with the storage type of any ElementType (bool as bool, fp8 as CUDA's fp8
// storage types); returns fn's result, or cudaErrorInvalidValue for an unknown type.
template <class Fn>
auto dispatchAnyType(ElementType type, Fn&& fn) {
  switch (type) {
    case ElementType::kFloat32: return fn(float{});
    case ElementType::kFloat16: return fn(__half{});
    case ElementType::kBFloat16: return fn(__nv_bfloat16{});
    case ElementType::kFloat64: return fn(double{});
    case ElementType::kInt8: return fn(int8_t{});
    case ElementType::kInt16: return fn(int16_t{});
    case ElementType::kInt32: return fn(int32_t{});
    case ElementType::kInt64: return fn(int64_t{});
    case ElementType::kUInt8: return fn(uint8_t{});
    case ElementType::kUInt16: return fn(uint16_t{});
    case ElementType::kUInt32: return fn(uint32_t{});
    case ElementType::kUInt64: return fn(uint64_t{});
    case ElementType::kBool: return fn(bool{});
    case ElementType::kFloat8E4M3: return fn(__nv_fp8_e4m3{});
    case ElementType::kFloat8E5M2: return fn(__nv_fp8_e5m2{});
  }
  return fn(float{});  // unreachable for valid enumerators
}

// Element i of a tensor of `type` at p, and the store back; one switch each, so a single kernel
// converts between any two types.
KILN_HD CastScalar loadCastScalar(const void* p, int64_t i, ElementType type) {
  switch (type) {
    case ElementType::kFloat32: return toCastScalar(static_cast<const float*>(p)[i]);
    case ElementType::kFloat16: return toCastScalar(static_cast<const __half*>(p)[i]);
    case ElementType::kBFloat16: return toCastScalar(static_cast<const __nv_bfloat16*>(p)[i]);
    case ElementType::kFloat64: return toCastScalar(static_cast<const double*>(p)[i]);
    case ElementType::kInt8: return toCastScalar(static_cast<const int8_t*>(p)[i]);
    case ElementType::kInt16: return toCastScalar(static_cast<const int16_t*>(p)[i]);
    case ElementType::kInt32: return toCastScalar(static_cast<const int32_t*>(p)[i]);
    case ElementType::kInt64: return toCastScalar(static_cast<const int64_t*>(p)[i]);
    case ElementType::kUInt8: return toCastScalar(static_cast<const uint8_t*>(p)[i]);
    case ElementType::kUInt16: return toCastScalar(static_cast<const uint16_t*>(p)[i]);
    case ElementType::kUInt32: return toCastScalar(static_cast<const uint32_t*>(p)[i]);
    case ElementType::kUInt64: return toCastScalar(static_cast<const uint64_t*>(p)[i]);
    case ElementType::kBool: return toCastScalar(static_cast<const uint8_t*>(p)[i] != 0);
    case ElementType::kFloat8E4M3: return toCastScalar(static_cast<const __nv_fp8_e4m3*>(p)[i]);
    case ElementType::kFloat8E5M2: return toCastScalar(static_cast<const __nv_fp8_e5m2*>(p)[i]);
  }
  return CastScalar{};
}

KILN_HD void storeCastScalar(void* p, int64_t i, ElementType type, const CastScalar& s) {
  switch (type) {
    case ElementType::kFloat32: static_cast<float*>(p)[i] = fromCastScalar<float>(s); return;
    case ElementType::kFloat16: static_cast<__half*>(p)[i] = fromCastScalar<__half>(s); return;
    case ElementType::kBFloat16: static_cast<__nv_bfloat16*>(p)[i] = fromCastScalar<__nv_bfloat16>(s); return;
    case ElementType::kFloat64: static_cast<double*>(p)[i] = fromCastScalar<double>(s); return;
    case ElementType::kInt8: static_cast<int8_t*>(p)[i] = fromCastScalar<int8_t>(s); return;
    case ElementType::kInt16: static_cast<int16_t*>(p)[i] = fromCastScalar<int16_t>(s); return;
    case ElementType::kInt32: static_cast<int32_t*>(p)[i] = fromCastScalar<int32_t>(s); return;
    case ElementType::kInt64: static_cast<int64_t*>(p)[i] = fromCastScalar<int64_t>(s); return;
    case ElementType::kUInt8: static_cast<uint8_t*>(p)[i] = fromCastScalar<uint8_t>(s); return;
    case ElementType::kUInt16: static_cast<uint16_t*>(p)[i] = fromCastScalar<uint16_t>(s); return;
    case ElementType::kUInt32: static_cast<uint32_t*>(p)[i] = fromCastScalar<uint32_t>(s); return;
    case ElementType::kUInt64: static_cast<uint64_t*>(p)[i] = fromCastScalar<uint64_t>(s); return;
    case ElementType::kBool: static_cast<uint8_t*>(p)[i] = fromCastScalar<bool>(s) ? 1 : 0; return;
    case ElementType::kFloat8E4M3: static_cast<__nv_fp8_e4m3*>(p)[i] = fromCastScalar<__nv_fp8_e4m3>(s); return;
    case ElementType::kFloat8E5M2: static_cast<__nv_fp8_e5m2*>(p)[i] = fromCastScalar<__nv_fp8_e5m2>(s); return;
  }
}

}  // namespace kiln::kernels::cuda
