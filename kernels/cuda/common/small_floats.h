#pragma once
// The small float formats of quantized layers, encoded and decoded by bit manipulation, written
// once for the host (the CPU kernels, which emulate them exactly in float) and the device (KILN_HD):
//   fp8 e4m3fn  bias 7,  3 mantissa bits, largest 448, no infinities, NaN 0x7F / 0xFF
//   fp8 e5m2    bias 15, 2 mantissa bits, largest 57344, infinities 0x7C / 0xFC, NaNs above
//   fp4 e2m1    bias 1,  1 mantissa bit,  values 0, 0.5, 1, 1.5, 2, 3, 4, 6; no infinities or NaN
// Encoding rounds to nearest, ties to even. Saturating (ONNX QuantizeLinear's default saturate=1,
// PTX cvt's .satfinite) clamps out-of-range values and infinities to the largest finite value;
// without it e4m3fn overflows to NaN and e5m2 to infinity. NaN stays NaN (0x7F for both fp8
// formats); e2m1 has no NaN, and gives its largest value for it, as .satfinite does.
#include <kernels/cuda/common/host_device.h>

#include <math.h>

#include <cstdint>
#include <cstring>

namespace kiln::kernels {

KILN_HD uint32_t smallFloatBitsOf(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
#endif
}

KILN_HD float smallFloatFromBits(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}

// A sign-magnitude format: magnitude codes (exponent << mantBits | mantissa) up to maxCode are
// finite; the sign is the bit above the magnitude.
struct SmallFloatFormat {
  int mantBits, bias;
  uint32_t maxCode, signBit;
};

// Functions rather than variables: device code may call constexpr functions but not take the
// address of a host variable.
KILN_HD constexpr SmallFloatFormat e4m3Format() { return {3, 7, 0x7E, 0x80}; }
KILN_HD constexpr SmallFloatFormat e5m2Format() { return {2, 15, 0x7B, 0x80}; }
KILN_HD constexpr SmallFloatFormat e2m1Format() { return {1, 1, 0x7, 0x8}; }
inline constexpr float kE4M3Max = 448.0f;
inline constexpr float kE2M1Max = 6.0f;

// The magnitude code of |f| (finite, not NaN) rounded to nearest even; codes above maxCode mean
// overflow.
KILN_HD uint32_t roundedSmallFloatCode(uint32_t magnitudeBits, SmallFloatFormat format) {
  const int exponent = int(magnitudeBits >> 23) - 127;
  if (exponent < 1 - format.bias)  // subnormal (or zero): count units of the smallest subnormal
    return uint32_t(nearbyintf(smallFloatFromBits(magnitudeBits) * ldexpf(1.0f, format.bias - 1 + format.mantBits)));
  const int shift = 23 - format.mantBits;
  const uint32_t rounded = magnitudeBits + ((1u << (shift - 1)) - 1) + ((magnitudeBits >> shift) & 1);  // may carry
  return (rounded >> shift) - (uint32_t(127 - format.bias) << format.mantBits);
}

KILN_HD float decodeSmallFloatCode(uint32_t code, SmallFloatFormat format) {
  const uint32_t exponent = code >> format.mantBits, mant = code & ((1u << format.mantBits) - 1);
  if (exponent == 0) return ldexpf(float(mant), 1 - format.bias - format.mantBits);
  return smallFloatFromBits(((exponent + 127 - format.bias) << 23) | (mant << (23 - format.mantBits)));
}

KILN_HD uint8_t encodeE4M3(float f, bool saturate = true) {
  const uint32_t u = smallFloatBitsOf(f), sign = (u >> 24) & 0x80, a = u & 0x7FFFFFFF;
  if (a > 0x7F800000) return 0x7F;  // NaN
  const uint32_t overflow = saturate ? e4m3Format().maxCode : 0x7F;
  const uint32_t code = a == 0x7F800000 ? overflow : roundedSmallFloatCode(a, e4m3Format());
  return uint8_t(sign | (code > e4m3Format().maxCode ? overflow : code));
}

KILN_HD float decodeE4M3(uint8_t b) {
  if ((b & 0x7F) == 0x7F) return smallFloatFromBits(0x7FC00000);  // e4m3fn's only NaN
  const float v = decodeSmallFloatCode(b & 0x7Fu, e4m3Format());
  return (b & 0x80) ? -v : v;
}

KILN_HD uint8_t encodeE5M2(float f, bool saturate = true) {
  const uint32_t u = smallFloatBitsOf(f), sign = (u >> 24) & 0x80, a = u & 0x7FFFFFFF;
  if (a > 0x7F800000) return 0x7F;  // NaN
  const uint32_t overflow = saturate ? e5m2Format().maxCode : 0x7C;  // else infinity
  const uint32_t code = a == 0x7F800000 ? overflow : roundedSmallFloatCode(a, e5m2Format());
  return uint8_t(sign | (code > e5m2Format().maxCode ? overflow : code));
}

KILN_HD float decodeE5M2(uint8_t b) {
  const uint32_t sign = uint32_t(b & 0x80) << 24;
  if ((b & 0x7C) == 0x7C) return smallFloatFromBits(sign | ((b & 0x3) ? 0x7FC00000 : 0x7F800000));
  const float v = decodeSmallFloatCode(b & 0x7Fu, e5m2Format());
  return sign ? -v : v;
}

// fp4 e2m1, always saturating: the code in the low 4 bits (NVFP4 packs two a byte).
KILN_HD uint8_t encodeE2M1(float f) {
  const uint32_t u = smallFloatBitsOf(f), a = u & 0x7FFFFFFF;
  if (a > 0x7F800000) return uint8_t(e2m1Format().maxCode);  // NaN: no such code
  const uint32_t sign = (u >> 31) ? e2m1Format().signBit : 0;
  const uint32_t code = a == 0x7F800000 ? e2m1Format().maxCode : roundedSmallFloatCode(a, e2m1Format());
  return uint8_t(sign | (code > e2m1Format().maxCode ? e2m1Format().maxCode : code));
}

KILN_HD float decodeE2M1(uint8_t code) {
  const float v = decodeSmallFloatCode(code & 0x7u, e2m1Format());
  return (code & e2m1Format().signBit) ? -v : v;
}

}  // namespace kiln::kernels
