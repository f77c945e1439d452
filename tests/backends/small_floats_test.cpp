// kernels/cuda/common/small_floats.h, the fp8 and fp4 encodings shared by the CPU kernels and the
// CUDA kernels: every e4m3 and e2m1 code against the formats' definitions, round trips, ties to
// even between every pair of neighbouring codes, saturation and NaN.
#include <kernels/cpu/common/numeric_types.h>
#include <kernels/cuda/common/small_floats.h>

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace kiln::kernels;

namespace {

// The value a code stands for, from the format's definition (OCP 8-bit floating point, e4m3fn:
// bias 7, exponent 0 subnormal, S.1111.111 NaN; OCP MX e2m1: bias 1, exponent 0 subnormal).
double specE4M3(int code) {
  const int sign = code >> 7, exponent = (code >> 3) & 0xF, mantissa = code & 7;
  if (exponent == 15 && mantissa == 7) return std::numeric_limits<double>::quiet_NaN();
  const double magnitude = exponent == 0 ? mantissa / 8.0 * std::pow(2.0, -6)
                                         : (1 + mantissa / 8.0) * std::pow(2.0, exponent - 7);
  return sign ? -magnitude : magnitude;
}

double specE2M1(int code) {
  const int sign = code >> 3, exponent = (code >> 1) & 3, mantissa = code & 1;
  const double magnitude = exponent == 0 ? mantissa * 0.5 : (1 + mantissa / 2.0) * std::pow(2.0, exponent - 1);
  return sign ? -magnitude : magnitude;
}

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

}  // namespace

TEST(SmallFloats, EveryE4M3CodeDecodesToItsValueAndEncodesBack) {
  int nans = 0;
  for (int code = 0; code < 256; ++code) {
    const double spec = specE4M3(code);
    const float decoded = decodeE4M3(uint8_t(code));
    if (std::isnan(spec)) {
      ++nans;
      EXPECT_TRUE(std::isnan(decoded)) << code;
      EXPECT_TRUE(std::isnan(decodeE4M3(encodeE4M3(decoded)))) << "NaN stays NaN";
      continue;
    }
    EXPECT_EQ(double(decoded), spec) << "code " << code;
    EXPECT_EQ(std::signbit(decoded), code >= 0x80) << "code " << code;
    EXPECT_EQ(encodeE4M3(decoded), code) << "code " << code;
    EXPECT_EQ(encodeE4M3(decoded, false), code) << "code " << code;
    EXPECT_EQ(Float8E4M3::fromFloat(decoded), code) << "the CPU's Float8E4M3 is the same encoding";
  }
  EXPECT_EQ(nans, 2);  // 0x7F and 0xFF only
  EXPECT_EQ(decodeE4M3(0x7E), 448.0f);
  EXPECT_EQ(decodeE4M3(0x01), std::ldexp(1.0f, -9));  // the smallest subnormal
}

TEST(SmallFloats, E4M3TiesRoundToEvenBetweenEveryPairOfNeighbours) {
  for (int code = 0; code < 0x7E; ++code) {  // every finite positive code and the next one
    const float lo = decodeE4M3(uint8_t(code)), hi = decodeE4M3(uint8_t(code + 1));
    const float middle = (lo + hi) / 2;  // exact in float
    const int even = code % 2 == 0 ? code : code + 1;  // the code whose mantissa ends in 0
    EXPECT_EQ(encodeE4M3(middle), even) << lo << " .. " << hi;
    EXPECT_EQ(encodeE4M3(-middle), even | 0x80) << -lo << " .. " << -hi;
    EXPECT_EQ(encodeE4M3(std::nextafter(middle, 0.0f)), code) << "just below the middle of " << lo << " .. " << hi;
    EXPECT_EQ(encodeE4M3(std::nextafter(middle, kInf)), code + 1) << "just above the middle of " << lo << " .. " << hi;
  }
  EXPECT_EQ(encodeE4M3(std::ldexp(1.0f, -10)), 0x00);  // half the smallest subnormal: ties to 0
  EXPECT_EQ(encodeE4M3(-std::ldexp(1.0f, -10)), 0x80);
}

TEST(SmallFloats, E4M3SaturatesOutOfRangeValuesAndKeepsNaN) {
  for (float v : {448.0f, 449.0f, 464.0f, 480.0f, 1e6f, 3e38f, kInf}) {
    EXPECT_EQ(encodeE4M3(v), 0x7E) << v;  // 448
    EXPECT_EQ(encodeE4M3(-v), 0xFE) << -v;
  }
  EXPECT_EQ(encodeE4M3(464.0f, false), 0x7E) << "the tie between 448 and 480 goes to 448 (even)";
  EXPECT_EQ(encodeE4M3(465.0f, false), 0x7F) << "without saturation overflow is NaN";
  EXPECT_EQ(encodeE4M3(kInf, false), 0x7F);
  EXPECT_TRUE(std::isnan(decodeE4M3(encodeE4M3(kNaN))));
  EXPECT_TRUE(std::isnan(decodeE4M3(encodeE4M3(-kNaN))));
  EXPECT_EQ(encodeE4M3(1e-30f), 0x00);
  EXPECT_EQ(encodeE4M3(-1e-30f), 0x80);
}

TEST(SmallFloats, EveryE2M1CodeDecodesToItsValueAndEncodesBack) {
  const float magnitudes[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
  for (int code = 0; code < 16; ++code) {
    const float decoded = decodeE2M1(uint8_t(code));
    EXPECT_EQ(double(decoded), specE2M1(code)) << "code " << code;
    EXPECT_EQ(std::fabs(decoded), magnitudes[code & 7]) << "code " << code;
    EXPECT_EQ(std::signbit(decoded), code >= 8) << "code " << code;
    EXPECT_EQ(encodeE2M1(decoded), code) << "code " << code;
  }
}

TEST(SmallFloats, E2M1TiesRoundToEvenAndSaturatesAtSix) {
  for (int code = 0; code < 7; ++code) {
    const float lo = decodeE2M1(uint8_t(code)), hi = decodeE2M1(uint8_t(code + 1));
    const float middle = (lo + hi) / 2;
    const int even = code % 2 == 0 ? code : code + 1;
    EXPECT_EQ(encodeE2M1(middle), even) << lo << " .. " << hi;
    EXPECT_EQ(encodeE2M1(-middle), even | 0x8) << -lo << " .. " << -hi;
    EXPECT_EQ(encodeE2M1(std::nextafter(middle, 0.0f)), code) << lo << " .. " << hi;
    EXPECT_EQ(encodeE2M1(std::nextafter(middle, kInf)), code + 1) << lo << " .. " << hi;
  }
  for (float v : {6.0f, 7.0f, 100.0f, kInf}) {
    EXPECT_EQ(encodeE2M1(v), 0x7) << v;
    EXPECT_EQ(encodeE2M1(-v), 0xF) << -v;
  }
  EXPECT_EQ(encodeE2M1(kNaN), 0x7) << "e2m1 has no NaN: its largest value, as PTX's .satfinite gives";
}

TEST(SmallFloats, EveryE5M2CodeRoundTrips) {
  for (int code = 0; code < 256; ++code) {
    const float decoded = decodeE5M2(uint8_t(code));
    EXPECT_EQ(decoded == decoded ? 0 : 1, (code & 0x7C) == 0x7C && (code & 3) ? 1 : 0) << code;
    if (std::isnan(decoded) || std::isinf(decoded)) continue;
    EXPECT_EQ(encodeE5M2(decoded), code) << code;
    EXPECT_EQ(Float8E5M2::fromFloat(decoded), code) << code;
  }
  EXPECT_EQ(encodeE5M2(kInf), 0x7B) << "saturated";
  EXPECT_EQ(encodeE5M2(kInf, false), 0x7C) << "infinity";
}
