#pragma once
// The calibrators' arithmetic: from the values an activation took over the calibration batches to
// the threshold T of its symmetric int8 range [-T, T] (scale = T / 127).
#include <kiln/builder_config.h>

#include <cstdint>
#include <vector>

namespace kiln::calibration {

// A histogram of |x| over [0, range] in kBins equal bins (|x| >= range lands in the last one).
class AbsHistogram {
 public:
  static constexpr int kBins = 2048;
  explicit AbsHistogram(float range);
  void add(const float* values, int64_t count);
  float range() const { return range_; }
  double binWidth() const { return double(range_) / kBins; }
  const std::vector<double>& counts() const { return counts_; }

 private:
  float range_;
  std::vector<double> counts_;
};

// TensorRT's entropy calibration: for each candidate threshold i bins wide (i = 128 ... 2048), the
// reference distribution P is the first i bins with everything beyond folded into bin i-1, and Q
// is those i bins merged into 128 levels and spread back evenly over each level's non-empty bins;
// the threshold is the edge i * binWidth of the candidate with the least KL(P || Q) (the widest on
// a tie). Bin 0 counts as much as bin 1, as in NVIDIA's pytorch-quantization: otherwise the exact
// zeros a ReLU makes dominate P and pull the threshold down. One guard of Kiln's own: a candidate
// whose kept bins hold values in fewer than 128 of them is skipped. 128 levels represent such
// values exactly, so KL(P || Q) is near 0 however much was clipped: a distribution that keeps away
// from zero (openWakeWord's mel features lie in [3.4, 12.3]) would otherwise get the threshold 3.4
// and lose 99.99% of its values. Without any such candidate the threshold is the range.
float entropyThreshold(const AbsHistogram& histogram);

// The smallest bin edge below which `percentile` percent of the values lie.
float percentileThreshold(const AbsHistogram& histogram, double percentile);

// threshold / 127; 1 for a threshold of 0 (an all-zero tensor quantizes to zeros at any scale).
float scaleForThreshold(float threshold);

}  // namespace kiln::calibration
