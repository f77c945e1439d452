// The calibrators on known distributions: a Gaussian with a few far outliers (minmax keeps the
// outliers, percentile and entropy clip them), a uniform one (entropy keeps nearly all of it), and
// the histogram's edges.
#include "builder/calibration/calibrators.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

using namespace kiln::calibration;

namespace {

float largestMagnitude(const std::vector<float>& v) {
  float m = 0;
  for (float x : v) m = std::max(m, std::fabs(x));
  return m;
}

AbsHistogram histogramOf(const std::vector<float>& v) {
  AbsHistogram h(largestMagnitude(v));
  h.add(v.data(), int64_t(v.size()));
  return h;
}

// 200,001 samples of N(0, 1) and five outliers near +-40.
std::vector<float> gaussianWithOutliers() {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(200001);
  for (float& x : v) x = normal(rng);
  for (float outlier : {40.0f, -39.5f, 38.0f, -41.0f, 39.0f}) v.push_back(outlier);
  return v;
}

}  // namespace

TEST(Calibrators, OnAGaussianWithOutliersMinMaxKeepsThemPercentileAndEntropyClip) {
  const std::vector<float> v = gaussianWithOutliers();
  const AbsHistogram h = histogramOf(v);
  const float amax = largestMagnitude(v);
  EXPECT_FLOAT_EQ(amax, 41.0f);  // minmax's threshold
  const float percentile = percentileThreshold(h, 99.99);
  const float entropy = entropyThreshold(h);
  // 99.99% of |N(0,1)| lies below 3.9: one bin (0.02) of slack above it.
  EXPECT_GT(percentile, 3.5f);
  EXPECT_LT(percentile, 4.2f);
  // KL keeps the Gaussian's body and clips the outliers: far below amax, above the bulk.
  EXPECT_GT(entropy, 2.0f);
  EXPECT_LT(entropy, 0.5f * amax);
  EXPECT_LT(scaleForThreshold(entropy), scaleForThreshold(amax));
}

TEST(Calibrators, EntropyKeepsAlmostAllOfAUniformDistribution) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> uniform(-2.0f, 2.0f);
  std::vector<float> v(100000);
  for (float& x : v) x = uniform(rng);
  const AbsHistogram h = histogramOf(v);
  // Clipping a flat distribution loses much more than rounding it to 128 levels.
  EXPECT_GT(entropyThreshold(h), 0.95f * h.range());
  EXPECT_LE(entropyThreshold(h), h.range() * 1.0001f);
}

TEST(Calibrators, PercentileEdgesAndZeroRange) {
  const std::vector<float> v = gaussianWithOutliers();
  const AbsHistogram h = histogramOf(v);
  EXPECT_FLOAT_EQ(percentileThreshold(h, 100.0), h.range());
  EXPECT_LT(percentileThreshold(h, 50.0), percentileThreshold(h, 99.0));
  // |x| = range lands in the last bin, not past it.
  AbsHistogram edge(2.0f);
  const float values[] = {2.0f, -2.0f, 0.0f};
  edge.add(values, 3);
  EXPECT_EQ(edge.counts().back(), 2.0);
  EXPECT_EQ(edge.counts().front(), 1.0);
  EXPECT_FLOAT_EQ(scaleForThreshold(0.0f), 1.0f);
  EXPECT_FLOAT_EQ(scaleForThreshold(12.7f), 0.1f);
}

// Values that keep away from zero: the first candidates keep a handful of values in a few bins,
// which 128 levels represent exactly (KL near 0 while clipping almost everything); they are skipped.
TEST(Calibrators, EntropyDoesNotClipADistributionThatKeepsAwayFromZero) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(7.5f, 1.8f);
  std::vector<float> v;
  for (int i = 0; i < 100000; ++i) v.push_back(std::clamp(normal(rng), 3.4f, 12.3f));
  const AbsHistogram h = histogramOf(v);
  EXPECT_GT(entropyThreshold(h), 9.0f);  // the body of the distribution is kept
}
