#include "common/tensor_stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kiln::views {
namespace {

template <class T>
TensorStats statsOf(const T* values, int64_t count, int bins) {
  TensorStats stats;
  double sum = 0, sumSquares = 0;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (int64_t i = 0; i < count; ++i) {
    const double v = double(values[i]);
    if (!std::isfinite(v)) {
      ++stats.nonFinite;
      continue;
    }
    ++stats.count;
    sum += v;
    sumSquares += v * v;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  if (stats.count == 0) return stats;
  stats.min = lo;
  stats.max = hi;
  stats.mean = sum / double(stats.count);
  stats.stddev = std::sqrt(std::max(0.0, sumSquares / double(stats.count) - stats.mean * stats.mean));
  stats.histogram.assign(size_t(std::max(1, bins)), 0);
  const double width = (hi - lo) / double(stats.histogram.size());
  for (int64_t i = 0; i < count; ++i) {
    const double v = double(values[i]);
    if (!std::isfinite(v)) continue;
    size_t bin = width > 0 ? size_t((v - lo) / width) : 0;
    ++stats.histogram[std::min(bin, stats.histogram.size() - 1)];
  }
  return stats;
}

}  // namespace

TensorStats computeTensorStats(const HostTensor& tensor, int bins) {
  switch (tensor.dtype()) {
    // The common weight types are read in place; the rest go through a double copy.
    case DataType::kFloat32: return statsOf(tensor.data<float>(), tensor.elementCount(), bins);
    case DataType::kFloat64: return statsOf(tensor.data<double>(), tensor.elementCount(), bins);
    case DataType::kInt8: return statsOf(tensor.data<int8_t>(), tensor.elementCount(), bins);
    case DataType::kUInt8: return statsOf(tensor.data<uint8_t>(), tensor.elementCount(), bins);
    case DataType::kInt32: return statsOf(tensor.data<int32_t>(), tensor.elementCount(), bins);
    case DataType::kInt64: return statsOf(tensor.data<int64_t>(), tensor.elementCount(), bins);
    default: {
      std::vector<double> values = tensor.toDoubleVector();
      return statsOf(values.data(), int64_t(values.size()), bins);
    }
  }
}

}  // namespace kiln::views
