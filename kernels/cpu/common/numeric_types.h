#pragma once
// Storage types for the reduced-precision floats. Arithmetic happens in float; these only convert.
#include <cmath>
#include <cstdint>
#include <cstring>

namespace kiln::kernels {

inline uint32_t floatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bitsToFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// IEEE 754 binary16, round to nearest even.
struct Float16 {
  uint16_t bits = 0;
  Float16() = default;
  explicit Float16(float f) : bits(fromFloat(f)) {}
  explicit operator float() const { return toFloat(bits); }
  static Float16 fromBits(uint16_t b) {
    Float16 h;
    h.bits = b;
    return h;
  }
  static uint16_t fromFloat(float f);
  static float toFloat(uint16_t h);
};

// bfloat16: the top half of a float32, round to nearest even.
struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  explicit BFloat16(float f) : bits(fromFloat(f)) {}
  explicit operator float() const { return bitsToFloat(uint32_t(bits) << 16); }
  static BFloat16 fromBits(uint16_t b) {
    BFloat16 h;
    h.bits = b;
    return h;
  }
  static uint16_t fromFloat(float f) {
    uint32_t u = floatBits(f);
    if (std::isnan(f)) return uint16_t((u >> 16) | 0x40);
    uint32_t rounding = 0x7FFF + ((u >> 16) & 1);
    return uint16_t((u + rounding) >> 16);
  }
};

// fp8 e4m3fn: 4 exponent bits (bias 7), 3 mantissa bits, no infinities, one NaN pattern; saturating.
struct Float8E4M3 {
  uint8_t bits = 0;
  Float8E4M3() = default;
  explicit Float8E4M3(float f) : bits(fromFloat(f)) {}
  explicit operator float() const { return toFloat(bits); }
  static uint8_t fromFloat(float f);
  static float toFloat(uint8_t b);
};

// fp8 e5m2: 5 exponent bits (bias 15), 2 mantissa bits, with infinities; saturating to max finite.
struct Float8E5M2 {
  uint8_t bits = 0;
  Float8E5M2() = default;
  explicit Float8E5M2(float f) : bits(fromFloat(f)) {}
  explicit operator float() const { return toFloat(bits); }
  static uint8_t fromFloat(float f);
  static float toFloat(uint8_t b);
};

template <class T>
inline float toFloat(T v) {
  return static_cast<float>(v);
}
template <class T>
inline T fromFloat(float v) {
  return static_cast<T>(v);
}
template <>
inline Float16 fromFloat<Float16>(float v) {
  return Float16(v);
}
template <>
inline BFloat16 fromFloat<BFloat16>(float v) {
  return BFloat16(v);
}

}  // namespace kiln::kernels
