#pragma once
// fp8 encodings written to give exactly the bits of the CPU kernels' Float8E4M3 / Float8E5M2
// (kernels/cpu/common/numeric_types.cpp): round to nearest even, saturate to the largest finite
// value (infinities too), NaN to 0x7F whatever its sign. Every step is an exact float operation
// (frexp, ldexp, rint), so host and device agree bit for bit; the host tests check them against
// the CPU's conversions.
#include "kernels/cuda/common/host_device.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <math.h>

namespace kiln::kernels::cuda {

// The two formats; kMaxCode is the magnitude bits of kMaxFinite.
struct Float8E4M3Format {
  static constexpr int kMantissaBits = 3, kBias = 7;
  static constexpr float kMaxFinite = 448.0f;
  static constexpr uint32_t kMaxCode = 0x7E;
  static constexpr bool kHasInfinity = false;
};
struct Float8E5M2Format {
  static constexpr int kMantissaBits = 2, kBias = 15;
  static constexpr float kMaxFinite = 57344.0f;
  static constexpr uint32_t kMaxCode = 0x7B;
  static constexpr bool kHasInfinity = true;
};

KILN_HD uint32_t bitsOfFloat(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}

template <class Format>
KILN_HD uint8_t encodeFloat8(float f) {
  if (f != f) return 0x7F;
  const uint8_t sign = (bitsOfFloat(f) >> 31) ? 0x80 : 0;
  float a = fabsf(f);
  if (a > Format::kMaxFinite) a = Format::kMaxFinite;  // infinity included
  if (a == 0.0f) return sign;
  int e = 0;
  const float m = frexpf(a, &e);  // a = m * 2^e, m in [0.5, 1)
  int exponent = e - 1 + Format::kBias;
  const float unit = float(1 << Format::kMantissaBits);
  if (exponent <= 0) {  // subnormal: a = mantissa * 2^(1 - bias - mantissaBits)
    const uint32_t mantissa = uint32_t(rintf(ldexpf(a, Format::kBias - 1 + Format::kMantissaBits)));
    if (mantissa >= uint32_t(unit)) return uint8_t(sign | (1u << Format::kMantissaBits));  // rounds up to normal
    return uint8_t(sign | mantissa);
  }
  uint32_t mantissa = uint32_t(rintf((m * 2.0f - 1.0f) * unit));
  if (mantissa >= uint32_t(unit)) {
    mantissa = 0;
    ++exponent;
  }
  uint32_t code = (uint32_t(exponent) << Format::kMantissaBits) | mantissa;
  if (code > Format::kMaxCode) code = Format::kMaxCode;
  return uint8_t(sign | code);
}

template <class Format>
KILN_HD float decodeFloat8(uint8_t bits) {
  const int exponentBits = 7 - Format::kMantissaBits;
  const int exponent = (bits >> Format::kMantissaBits) & ((1 << exponentBits) - 1);
  const int mantissa = bits & ((1 << Format::kMantissaBits) - 1);
  const bool negative = bits & 0x80;
  if constexpr (Format::kHasInfinity) {
    if (exponent == (1 << exponentBits) - 1) return mantissa != 0 ? NAN : negative ? -INFINITY : INFINITY;
  } else {
    if ((bits & 0x7F) == 0x7F) return NAN;
  }
  const float unit = float(1 << Format::kMantissaBits);
  const float v = exponent == 0 ? ldexpf(float(mantissa), 1 - Format::kBias - Format::kMantissaBits)
                                : ldexpf(1.0f + float(mantissa) / unit, exponent - Format::kBias);
  return negative ? -v : v;
}

}  // namespace kiln::kernels::cuda
