#include "calibrators.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kiln::calibration {

AbsHistogram::AbsHistogram(float range) : range_(range), counts_(size_t(kBins), 0.0) {}

void AbsHistogram::add(const float* values, int64_t count) {
  const double perBin = range_ > 0 ? kBins / double(range_) : 0;
  for (int64_t i = 0; i < count; ++i) {
    const double bin = std::fabs(double(values[i])) * perBin;
    counts_[size_t(bin >= kBins - 1 ? kBins - 1 : int(bin))] += 1;
  }
}

namespace {

constexpr int kLevels = 128;  // the magnitudes int8 has for each sign

// KL(P || Q) for the candidate that keeps the first `kept` bins of `bins`.
double divergenceAt(const std::vector<double>& bins, int kept, double outliers) {
  // Q: the kept bins merged into levels (bin b in level b * 128 / kept), each level's total spread
  // evenly over its non-empty bins; empty bins stay empty.
  std::vector<double> levelSum(kLevels, 0.0), levelBins(kLevels, 0.0);
  for (int b = 0; b < kept; ++b) {
    if (bins[size_t(b)] == 0) continue;
    const int level = int(int64_t(b) * kLevels / kept);
    levelSum[size_t(level)] += bins[size_t(b)];
    levelBins[size_t(level)] += 1;
  }
  double pTotal = outliers, qTotal = 0;
  for (int b = 0; b < kept; ++b) pTotal += bins[size_t(b)];
  for (int l = 0; l < kLevels; ++l) qTotal += levelSum[size_t(l)];
  if (pTotal <= 0 || qTotal <= 0) return std::numeric_limits<double>::infinity();
  double divergence = 0;
  for (int b = 0; b < kept; ++b) {
    const double p = (bins[size_t(b)] + (b == kept - 1 ? outliers : 0)) / pTotal;
    if (p == 0) continue;
    const int level = int(int64_t(b) * kLevels / kept);
    const double q = bins[size_t(b)] == 0 ? 0 : levelSum[size_t(level)] / levelBins[size_t(level)] / qTotal;
    if (q == 0) return std::numeric_limits<double>::infinity();
    divergence += p * std::log(p / q);
  }
  return divergence;
}

}  // namespace

float entropyThreshold(const AbsHistogram& histogram) {
  std::vector<double> bins = histogram.counts();
  bins[0] = bins[1];
  const int total = AbsHistogram::kBins;
  // Outliers of candidate i: the counts of bins [i, total), accumulated from the top down.
  std::vector<double> above(size_t(total) + 1, 0.0);
  for (int b = total - 1; b >= 0; --b) above[size_t(b)] = above[size_t(b) + 1] + bins[size_t(b)];
  double best = std::numeric_limits<double>::infinity();
  int bestKept = total;
  int nonEmpty = 0;  // among the kept bins
  for (int b = 0; b < kLevels - 1; ++b) nonEmpty += bins[size_t(b)] != 0;
  for (int kept = kLevels; kept <= total; ++kept) {
    nonEmpty += bins[size_t(kept) - 1] != 0;
    if (nonEmpty < kLevels) continue;  // see entropyThreshold's comment in the header
    const double divergence = divergenceAt(bins, kept, above[size_t(kept)]);
    if (divergence <= best) {
      best = divergence;
      bestKept = kept;
    }
  }
  return float(bestKept * histogram.binWidth());
}

float percentileThreshold(const AbsHistogram& histogram, double percentile) {
  const auto& counts = histogram.counts();
  double total = 0;
  for (double c : counts) total += c;
  const double wanted = total * std::clamp(percentile, 0.0, 100.0) / 100.0;
  double seen = 0;
  for (size_t b = 0; b < counts.size(); ++b) {
    seen += counts[b];
    if (seen >= wanted) return float(double(b + 1) * histogram.binWidth());
  }
  return histogram.range();
}

float scaleForThreshold(float threshold) { return threshold > 0 ? threshold / 127.0f : 1.0f; }

}  // namespace kiln::calibration
