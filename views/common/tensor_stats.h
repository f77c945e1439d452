#pragma once
// Summary statistics and a histogram of a weight tensor, for the inspector.
#include <kiln/host_tensor.h>

#include <cstdint>
#include <vector>

namespace kiln::views {

struct TensorStats {
  int64_t count = 0;     // finite values counted
  int64_t nonFinite = 0; // NaN and ±Inf, left out of everything else
  double min = 0, max = 0, mean = 0, stddev = 0;
  std::vector<int64_t> histogram;  // equal-width bins over [min, max]
};

// Throws kiln::Error for tensors without numeric values (strings).
TensorStats computeTensorStats(const HostTensor& tensor, int bins = 64);

}  // namespace kiln::views
