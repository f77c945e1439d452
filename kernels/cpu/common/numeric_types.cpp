#include "numeric_types.h"

#include <limits>

namespace kiln::kernels {

uint16_t Float16::fromFloat(float f) {
  uint32_t x = floatBits(f);
  uint32_t sign = (x >> 16) & 0x8000;
  uint32_t mag = x & 0x7FFFFFFF;
  if (mag >= 0x7F800000) return uint16_t(sign | (mag > 0x7F800000 ? 0x7E00 : 0x7C00));  // NaN, Inf
  if (mag >= 0x477FF000) return uint16_t(sign | 0x7C00);                             // overflow
  if (mag < 0x38800000) {                                                            // subnormal or 0
    // Let the FPU do the rounding: add a magic number that aligns the half subnormal ulp.
    float shifted = bitsToFloat(mag) + 0.5f;
    return uint16_t(sign | (floatBits(shifted) - floatBits(0.5f)));
  }
  uint32_t mantOdd = (mag >> 13) & 1;
  mag += 0xC8000FFF + mantOdd;  // rebias exponent (-112 << 23) and round to nearest even
  return uint16_t(sign | (mag >> 13));
}

float Float16::toFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1F;
  uint32_t mant = h & 0x3FF;
  if (exp == 0) {
    float v = float(mant) * (1.0f / 16777216.0f);  // mant * 2^-24
    return sign ? -v : v;
  }
  if (exp == 31) return bitsToFloat(sign | 0x7F800000 | (mant << 13));
  return bitsToFloat(sign | ((exp + 112) << 23) | (mant << 13));
}

namespace {

// Generic float -> small float with round-to-nearest-even; saturate selects max-finite on overflow.
uint8_t encodeSmallFloat(float f, int expBits, int mantBits, int bias, bool hasInf, uint8_t nanBits,
                         float maxFinite) {
  uint8_t sign = std::signbit(f) ? 0x80 : 0;
  if (std::isnan(f)) return nanBits;
  float a = std::fabs(f);
  if (a > maxFinite || std::isinf(a)) {
    (void)hasInf;
    // ONNX saturate=1 default: clamp to max finite (infinity maps to max finite as well).
    a = maxFinite;
  }
  if (a == 0.0f) return sign;
  int e;
  float m = std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  int exp = e - 1 + bias;       // biased exponent for 1.xxx form
  float scaled;
  if (exp <= 0) {  // subnormal: value = mant * 2^(1-bias-mantBits)
    scaled = std::ldexp(a, bias - 1 + mantBits);
    float r = std::nearbyint(scaled);
    uint32_t mant = uint32_t(r);
    if (mant >= (1u << mantBits)) return uint8_t(sign | (1 << mantBits));  // rounded up to min normal
    return uint8_t(sign | mant);
  }
  scaled = (m * 2.0f - 1.0f) * float(1 << mantBits);
  float r = std::nearbyint(scaled);
  uint32_t mant = uint32_t(r);
  if (mant >= (1u << mantBits)) {
    mant = 0;
    ++exp;
  }
  uint32_t code = (uint32_t(exp) << mantBits) | mant;
  uint32_t maxCode = 0;
  {
    int me;
    float mm = std::frexp(maxFinite, &me);
    maxCode = (uint32_t(me - 1 + bias) << mantBits) | uint32_t((mm * 2.0f - 1.0f) * float(1 << mantBits));
  }
  if (code > maxCode) code = maxCode;
  (void)expBits;
  return uint8_t(sign | code);
}

float decodeSmallFloat(uint8_t b, int expBits, int mantBits, int bias) {
  bool neg = b & 0x80;
  int exp = (b >> mantBits) & ((1 << expBits) - 1);
  int mant = b & ((1 << mantBits) - 1);
  float v = exp == 0 ? std::ldexp(float(mant), 1 - bias - mantBits)
                     : std::ldexp(1.0f + float(mant) / float(1 << mantBits), exp - bias);
  return neg ? -v : v;
}

}  // namespace

uint8_t Float8E4M3::fromFloat(float f) { return encodeSmallFloat(f, 4, 3, 7, false, 0x7F, 448.0f); }

float Float8E4M3::toFloat(uint8_t b) {
  if ((b & 0x7F) == 0x7F) return std::numeric_limits<float>::quiet_NaN();
  return decodeSmallFloat(b, 4, 3, 7);
}

uint8_t Float8E5M2::fromFloat(float f) { return encodeSmallFloat(f, 5, 2, 15, true, 0x7F, 57344.0f); }

float Float8E5M2::toFloat(uint8_t b) {
  int exp = (b >> 2) & 0x1F;
  if (exp == 31) {
    if (b & 0x3) return std::numeric_limits<float>::quiet_NaN();
    return (b & 0x80) ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
  }
  return decodeSmallFloat(b, 5, 2, 15);
}

}  // namespace kiln::kernels
