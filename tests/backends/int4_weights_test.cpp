// The INT4 weight-only arithmetic (kernels/cpu/quant/int4_weight_format.h) and its CPU kernels:
// nibble order, round half to even and saturation on values worked out by hand, a short last
// group, every dequantized weight against the rule computed here independently, and products over
// several K-tiles (with and without zero points) against a double-precision product of the
// dequantized weights.
#include <kernels/cpu/quant/int4_weight_format.h>
#include <kernels/cpu/quant/int4_weights.h>

#include "common/test_models.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

using namespace kiln;
using namespace kiln::kernels;

namespace {

// The rule, written again: scale = amax / 7 per group, q = clamp(round_half_even(w / scale), -8, 7).
struct ReferenceInt4 {
  std::vector<int> q;           // [N, K]
  std::vector<float> scales;    // [N, groups]
};

ReferenceInt4 referenceQuantize(const std::vector<float>& w, int64_t k, int64_t n, int64_t group) {
  const int64_t groups = (k + group - 1) / group;
  ReferenceInt4 r{std::vector<int>(size_t(n * k)), std::vector<float>(size_t(n * groups))};
  for (int64_t c = 0; c < n; ++c)
    for (int64_t g = 0; g < groups; ++g) {
      float amax = 0;
      for (int64_t row = g * group; row < std::min(k, (g + 1) * group); ++row)
        amax = std::max(amax, std::fabs(w[size_t(row * n + c)]));
      const float scale = amax > 0 ? amax / 7.0f : 1.0f;
      r.scales[size_t(c * groups + g)] = scale;
      for (int64_t row = g * group; row < std::min(k, (g + 1) * group); ++row)
        r.q[size_t(c * k + row)] = int(std::clamp(std::nearbyint(w[size_t(row * n + c)] / scale), -8.0f, 7.0f));
    }
  return r;
}

struct Packed {
  std::vector<uint8_t> bytes;
  std::vector<float> scales;
  Int4Weights weights(int64_t k, int64_t n, int64_t group) const {
    return {bytes.data(), scales.data(), nullptr, k, n, group};
  }
};

// W [K, N] row-major, quantized by the kernel.
Packed pack(const std::vector<float>& w, int64_t k, int64_t n, int64_t group) {
  const int64_t groups = int4GroupCount(k, group);
  Packed p{std::vector<uint8_t>(size_t(n * groups * group / 2)), std::vector<float>(size_t(n * groups))};
  quantizeInt4Weights(w.data(), k, n, n, 1, group, p.bytes.data(), p.scales.data());
  return p;
}

std::vector<float> valuesOf(const HostTensor& t) { return {t.data<float>(), t.data<float>() + t.elementCount()}; }

}  // namespace

TEST(Int4Rule, RoundsHalfToEvenAndSaturatesIntoMinus8To7) {
  EXPECT_EQ(quantizeInt4(2.5f, 1.0f), 2);
  EXPECT_EQ(quantizeInt4(3.5f, 1.0f), 4);
  EXPECT_EQ(quantizeInt4(-2.5f, 1.0f), -2);
  EXPECT_EQ(quantizeInt4(-3.5f, 1.0f), -4);
  EXPECT_EQ(quantizeInt4(9.0f, 1.0f), 7);
  EXPECT_EQ(quantizeInt4(7.6f, 1.0f), 7);
  EXPECT_EQ(quantizeInt4(-8.4f, 1.0f), -8);
  EXPECT_EQ(quantizeInt4(-100.0f, 1.0f), -8);
  EXPECT_EQ(quantizeInt4(std::numeric_limits<float>::quiet_NaN(), 1.0f), -8);
  EXPECT_EQ(quantizeInt4(0.7f, 0.2f), 4);  // 0.7f / 0.2f is 3.5 in float: to even, 4
  EXPECT_FLOAT_EQ(int4GroupScale(0.0f), 1.0f);
  EXPECT_FLOAT_EQ(int4GroupScale(3.5f), 0.5f);
}

TEST(Int4Rule, PacksTheFirstValueIntoTheLowNibbleAsTwosComplement) {
  EXPECT_EQ(packInt4Pair(7, -2), 0xE7);
  EXPECT_EQ(packInt4Pair(-8, 0), 0x08);
  EXPECT_EQ(unpackInt4(0xE7, 0), 7);
  EXPECT_EQ(unpackInt4(0xE7, 1), -2);
  EXPECT_EQ(unpackInt4(0x8F, 0), -1);
  EXPECT_EQ(unpackInt4(0x8F, 1), -8);
  for (int low = -8; low <= 7; ++low)
    for (int high = -8; high <= 7; ++high) {
      const uint8_t b = packInt4Pair(low, high);
      ASSERT_EQ(unpackInt4(b, 0), low);
      ASSERT_EQ(unpackInt4(b, 1), high);
    }
  // MatMulNBits' unsigned nibbles u (zero point 8) are u - 8: 0xF -> 7, 0x8 -> 0, 0x0 -> -8.
  EXPECT_EQ(unpackInt4(signedInt4PairFromUnsigned(0x8F), 0), 7);
  EXPECT_EQ(unpackInt4(signedInt4PairFromUnsigned(0x8F), 1), 0);
  EXPECT_EQ(unpackInt4(signedInt4PairFromUnsigned(0x30), 0), -8);
  EXPECT_EQ(unpackInt4(signedInt4PairFromUnsigned(0x30), 1), -5);
  EXPECT_FLOAT_EQ(dequantizeInt4(-8, 7, 0.5f), -7.5f);
}

TEST(Int4Weights, PacksAColumnByHandWithAShortLastGroup) {
  // K = 5, N = 1, groups of 4: [7, -2.5, 3.5, 0.5] (scale 1) and [-1.5] alone (scale 1.5 / 7).
  const Packed p = pack({7.0f, -2.5f, 3.5f, 0.5f, -1.5f}, 5, 1, 4);
  EXPECT_EQ(p.bytes, (std::vector<uint8_t>{0xE7, 0x04, 0x09, 0x00}));  // q = 7, -2 | 4, 0 | -7, (pad 0) | pad
  ASSERT_EQ(p.scales.size(), 2u);
  EXPECT_FLOAT_EQ(p.scales[0], 1.0f);
  EXPECT_FLOAT_EQ(p.scales[1], 1.5f / 7.0f);
  std::vector<float> tile(5);
  dequantizeInt4Tile(p.weights(5, 1, 4), 0, 5, tile.data());
  EXPECT_EQ(tile, (std::vector<float>{7.0f, -2.0f, 4.0f, 0.0f, -7.0f * (1.5f / 7.0f)}));
}

TEST(Int4Weights, EveryDequantizedWeightFollowsTheRule) {
  const int64_t k = 70, n = 5, group = 32;  // groups of 32, 32 and 6
  const std::vector<float> w = valuesOf(test::randomFloats({k, n}, 11, -0.3f, 0.3f));
  const Packed p = pack(w, k, n, group);
  const ReferenceInt4 r = referenceQuantize(w, k, n, group);
  ASSERT_EQ(p.scales, r.scales);
  std::vector<float> tile(size_t(n * k));
  dequantizeInt4Tile(p.weights(k, n, group), 0, k, tile.data());
  double worst = 0;
  for (int64_t c = 0; c < n; ++c)
    for (int64_t row = 0; row < k; ++row) {
      const float scale = r.scales[size_t(c * 3 + row / group)];
      const float expected = scale * float(r.q[size_t(c * k + row)]);
      ASSERT_EQ(tile[size_t(c * k + row)], expected) << "k " << row << ", n " << c;
      const double error = std::fabs(double(expected) - w[size_t(row * n + c)]);
      EXPECT_LE(error, scale / 2 * 1.0001);
      worst = std::max(worst, error);
    }
  EXPECT_GT(worst, 0.0) << "the weights were not quantized";
  // A tile starting inside a group reads the same values.
  std::vector<float> part(size_t(n * 20));
  dequantizeInt4Tile(p.weights(k, n, group), 45, 20, part.data());
  for (int64_t c = 0; c < n; ++c)
    for (int64_t row = 0; row < 20; ++row) ASSERT_EQ(part[size_t(c * 20 + row)], tile[size_t(c * k + 45 + row)]);
}

TEST(Int4Weights, ProductOverSeveralKTilesMatchesTheDequantizedWeightsInDouble) {
  const int64_t k = 300, n = 600, group = 32, rows = 3;
  const std::vector<float> w = valuesOf(test::randomFloats({k, n}, 12, -0.5f, 0.5f));
  const std::vector<float> a = valuesOf(test::randomFloats({rows, k}, 13));
  Packed p = pack(w, k, n, group);
  // Zero points too, as a MatMulNBits import has them: q - z spans [-15, 15].
  std::vector<int8_t> zeros(p.scales.size());
  std::mt19937 rng(14);
  for (int8_t& z : zeros) z = int8_t(std::uniform_int_distribution<int>(-8, 7)(rng));
  for (bool withZeros : {false, true}) {
    SCOPED_TRACE(withZeros ? "zero points" : "symmetric");
    Int4Weights weights = p.weights(k, n, group);
    if (withZeros) weights.zeros = zeros.data();
    ASSERT_LT(int4TileRows(weights), k) << "the product should take more than one K-tile";
    std::vector<float> tile(size_t(n * k)), y(size_t(rows * n)), workspace(size_t(int4MatMulWorkspaceFloats(weights)));
    dequantizeInt4Tile(weights, 0, k, tile.data());
    int4MatMul(a.data(), rows, weights, y.data(), workspace.data());
    double error = 0, norm = 0;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < n; ++c) {
        double expected = 0;
        for (int64_t row = 0; row < k; ++row) expected += double(a[size_t(r * k + row)]) * tile[size_t(c * k + row)];
        error += (y[size_t(r * n + c)] - expected) * (y[size_t(r * n + c)] - expected);
        norm += expected * expected;
      }
    EXPECT_LT(std::sqrt(error / norm), 1e-5);
  }
}
