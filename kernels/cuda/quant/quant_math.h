#pragma once
// The per-element arithmetic of QuantizeLinear / DequantizeLinear, shared by the kernels and the
// host tests: round half to even and saturate into the integer range (as the CPU kernel's
// saturateRound does), fp8 e4m3fn / e5m2 encoding by bit manipulation (identical on host and
// device, unlike the hardware conversion's NaN choices), and the scale each element uses.
#include <kernels/cuda/common/host_device.h>

#include <math.h>

#include <cstdint>
#include <cstring>
#include <limits>

namespace kiln::kernels::cuda {

KILN_HD uint32_t bitsOfFloat(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
#endif
}

KILN_HD float floatOfBits(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}

// Rounds half to even and clamps into Q's range; NaN goes to the low end (CPU: saturateRound).
template <class Q>
KILN_HD Q saturateRound(float v) {
  const float r = nearbyintf(v);
  if (!(r >= float(std::numeric_limits<Q>::min()))) return std::numeric_limits<Q>::min();
  // 2^digits is max + 1 exactly in float, also for int32 whose max float cannot hold.
  if (r >= ldexpf(1.0f, std::numeric_limits<Q>::digits)) return std::numeric_limits<Q>::max();
  return Q(r);
}

enum class Float8Kind { kE4M3, kE5M2 };

// float -> fp8, round to nearest even. saturate (ONNX's default) clamps out-of-range values and
// infinities to the largest finite value; without it e4m3fn overflows to NaN and e5m2 to infinity.
// NaN becomes 0x7F (e4m3fn and e5m2), as the CPU's Float8 types give.
KILN_HD uint8_t encodeFloat8(float f, Float8Kind kind, bool saturate) {
  const bool e5m2 = kind == Float8Kind::kE5M2;
  const int mantBits = e5m2 ? 2 : 3, bias = e5m2 ? 15 : 7;
  const uint32_t maxCode = e5m2 ? 0x7B : 0x7E;                        // largest finite: 57344, 448
  const uint32_t overflow = saturate ? maxCode : e5m2 ? 0x7C : 0x7F;  // else infinity / NaN
  const uint32_t u = bitsOfFloat(f), sign = (u >> 24) & 0x80, a = u & 0x7FFFFFFF;
  if (a > 0x7F800000) return 0x7F;  // NaN
  if (a == 0x7F800000) return uint8_t(sign | overflow);
  const int exponent = int(a >> 23) - 127;
  uint32_t code;
  if (exponent < 1 - bias) {  // fp8 subnormal (or zero): count units of the smallest subnormal
    code = uint32_t(nearbyintf(floatOfBits(a) * ldexpf(1.0f, bias - 1 + mantBits)));  // may round up to min normal
  } else {
    const int shift = 23 - mantBits;
    const uint32_t rounded = a + ((1u << (shift - 1)) - 1) + ((a >> shift) & 1);  // half to even, carries into exp
    code = (rounded >> shift) - (uint32_t(127 - bias) << mantBits);
  }
  if (code > maxCode) code = overflow;
  return uint8_t(sign | code);
}

KILN_HD float decodeFloat8(uint8_t b, Float8Kind kind) {
  const bool e5m2 = kind == Float8Kind::kE5M2;
  const int mantBits = e5m2 ? 2 : 3, bias = e5m2 ? 15 : 7;
  const uint32_t sign = uint32_t(b & 0x80) << 24, exponent = (b & 0x7F) >> mantBits, mant = b & ((1u << mantBits) - 1);
  if (!e5m2 && (b & 0x7F) == 0x7F) return floatOfBits(0x7FC00000);  // e4m3fn's only NaN
  if (e5m2 && exponent == 31) return floatOfBits(sign | (mant ? 0x7FC00000 : 0x7F800000));
  if (exponent == 0) {
    const float v = ldexpf(float(mant), 1 - bias - mantBits);
    return sign ? -v : v;
  }
  return floatOfBits(sign | ((exponent + 127 - bias) << 23) | (mant << (23 - mantBits)));
}

// QuantizeLinear to an integer: saturate(round_half_even(x / scale) + zero), in float as the CPU
// kernel computes it; int32 adds the zero point in double, where float would lose its low bits.
template <class Q>
KILN_HD Q quantizeToInteger(float x, float scale, Q zero) {
  const float scaled = nearbyintf(x / scale);
  if constexpr (sizeof(Q) == 4) {
    const double r = double(scaled) + double(zero);
    if (!(r >= double(std::numeric_limits<Q>::min()))) return std::numeric_limits<Q>::min();
    if (r > double(std::numeric_limits<Q>::max())) return std::numeric_limits<Q>::max();
    return Q(r);
  } else {
    return saturateRound<Q>(scaled + float(zero));
  }
}

// QuantizeLinear to fp8: fp8(x / scale + zero), rounded once by the encoding (ONNX's reference).
KILN_HD uint8_t quantizeToFloat8(float x, float scale, uint8_t zero, Float8Kind kind, bool saturate) {
  return encodeFloat8(x / scale + decodeFloat8(zero, kind), kind, saturate);
}

template <class Q>
KILN_HD float dequantizeInteger(Q q, float scale, Q zero) {
  return float(int64_t(q) - int64_t(zero)) * scale;
}

KILN_HD float dequantizeFloat8(uint8_t q, float scale, uint8_t zero, Float8Kind kind) {
  return (decodeFloat8(q, kind) - decodeFloat8(zero, kind)) * scale;
}

enum class QuantGranularity { kPerTensor, kPerAxis, kBlocked };

// x seen as [outer, axisLen, inner]; per-axis scales have axisLen entries, blocked ones are
// [outer, ceil(axisLen / blockSize), inner] (ONNX's block_size along the axis).
struct QuantLayout {
  int64_t outer = 1, axisLen = 1, inner = 1;
  QuantGranularity granularity = QuantGranularity::kPerTensor;
  int64_t blockSize = 0;

  KILN_HD int64_t count() const { return outer * axisLen * inner; }
  KILN_HD int64_t blocks() const { return blockSize > 0 ? (axisLen + blockSize - 1) / blockSize : 0; }
  KILN_HD int64_t scaleCount() const {
    return granularity == QuantGranularity::kPerTensor ? 1
           : granularity == QuantGranularity::kPerAxis ? axisLen
                                                       : outer * blocks() * inner;
  }
  KILN_HD int64_t scaleIndex(int64_t i) const {
    switch (granularity) {
      case QuantGranularity::kPerTensor: return 0;
      case QuantGranularity::kPerAxis: return i / inner % axisLen;
      case QuantGranularity::kBlocked: {
        const int64_t k = i % inner, a = i / inner % axisLen, o = i / inner / axisLen;
        return (o * blocks() + a / blockSize) * inner + k;
      }
    }
    return 0;
  }
};

}  // namespace kiln::kernels::cuda
