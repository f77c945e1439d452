#pragma once
// The per-element arithmetic of QuantizeLinear / DequantizeLinear, shared by the kernels and the
// host tests: round half to even and saturate into the integer range (as the CPU kernel's
// saturateRound does), fp8 e4m3fn / e5m2 encoding (small_floats.h: identical on host and device,
// unlike the hardware conversion's NaN choices), and the scale each element uses.
#include <kernels/cuda/common/host_device.h>
#include <kernels/cuda/common/small_floats.h>

#include <math.h>

#include <cstdint>
#include <cstring>
#include <limits>

namespace kiln::kernels::cuda {

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

// float -> fp8, round to nearest even (small_floats.h). saturate (ONNX's default) clamps
// out-of-range values and infinities to the largest finite value; without it e4m3fn overflows to
// NaN and e5m2 to infinity. NaN becomes 0x7F (e4m3fn and e5m2), as the CPU's Float8 types give.
KILN_HD uint8_t encodeFloat8(float f, Float8Kind kind, bool saturate) {
  return kind == Float8Kind::kE5M2 ? encodeE5M2(f, saturate) : encodeE4M3(f, saturate);
}

KILN_HD float decodeFloat8(uint8_t b, Float8Kind kind) { return kind == Float8Kind::kE5M2 ? decodeE5M2(b) : decodeE4M3(b); }

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
