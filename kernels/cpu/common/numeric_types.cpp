#include "numeric_types.h"

#include <kernels/cuda/common/small_floats.h>

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

uint8_t Float8E4M3::fromFloat(float f) { return encodeE4M3(f); }
float Float8E4M3::toFloat(uint8_t b) { return decodeE4M3(b); }
uint8_t Float8E5M2::fromFloat(float f) { return encodeE5M2(f); }
float Float8E5M2::toFloat(uint8_t b) { return decodeE5M2(b); }

}  // namespace kiln::kernels
