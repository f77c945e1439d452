#include "resize_plan.h"

#include <algorithm>
#include <cmath>

namespace kiln::kernels::cuda {

AxisSampler makeAxisSampler(int64_t inSize, int64_t outSize, double scale, double roiStart, double roiEnd,
                            const ResizeOptions& options) {
  AxisSampler s;
  s.inSize = inSize;
  s.outSize = outSize;
  s.scale = scale;
  s.roiStart = roiStart;
  s.roiEnd = roiEnd;
  s.mode = options.mode;
  s.coordinates = options.coordinates;
  s.nearest = options.nearest;
  s.cubicA = options.cubicCoeffA;
  s.excludeOutside = options.excludeOutside;
  s.normalise = options.antialias || options.excludeOutside;
  // Taps relative to floor(x): [first, first + taps). Antialiasing widens the filter when downsampling.
  const double filterScale = options.antialias ? std::min(scale, 1.0) : 1.0;
  const double support = options.mode == ResizeMode::kCubic ? 2.0 : 1.0;
  s.filterScale = float(filterScale);
  s.first = options.mode == ResizeMode::kNearest ? 0 : int(std::floor(-support / filterScale)) + 1;
  s.taps = options.mode == ResizeMode::kNearest ? 1 : 2 - 2 * s.first;
  return s;
}

bool isIdentityAxis(const AxisSampler& s) {
  if (s.inSize != s.outSize) return false;
  for (int64_t o = 0; o < s.outSize; ++o) {
    const double x = s.sourceCoordinate(o);
    if (s.outside(x)) return false;
    if (s.mode == ResizeMode::kNearest) {
      if (s.nearestIndex(x) != o) return false;
      continue;
    }
    const AxisSampler::Window w = s.window(x);
    float onTarget = 0, elsewhere = 0;
    for (int k = 0; k < s.taps; ++k) {
      const float weight = s.weight(w, k);
      if (s.index(w, k) == o)
        onTarget += weight;
      else
        elsewhere += std::abs(weight);
    }
    if (std::abs(onTarget - 1.0f) > 1e-6f || elsewhere > 1e-6f) return false;
  }
  return true;
}

std::optional<ResizePlan> planResize(const std::vector<int64_t>& srcDims, const std::vector<int64_t>& dstDims,
                                     const std::vector<double>& scales, const std::vector<double>& roiStart,
                                     const std::vector<double>& roiEnd, const ResizeOptions& options) {
  const size_t rank = srcDims.size();
  if (rank > size_t(kMaxRank) || dstDims.size() != rank || scales.size() != rank) return std::nullopt;
  if ((!roiStart.empty() && roiStart.size() != rank) || roiEnd.size() != roiStart.size()) return std::nullopt;
  int64_t inCount = 1, outCount = 1;
  for (size_t d = 0; d < rank; ++d) {
    if (srcDims[d] < 0 || dstDims[d] < 0 || !(scales[d] > 0)) return std::nullopt;
    inCount *= srcDims[d];
    outCount *= dstDims[d];
  }
  if (inCount == 0 && outCount > 0) return std::nullopt;  // nothing to sample from

  std::vector<AxisSampler> samplers;
  std::vector<bool> sampled;
  for (size_t d = 0; d < rank; ++d) {
    samplers.push_back(makeAxisSampler(srcDims[d], dstDims[d], scales[d], roiStart.empty() ? 0.0 : roiStart[d],
                                       roiEnd.empty() ? 1.0 : roiEnd[d], options));
    sampled.push_back(outCount > 0 && !isIdentityAxis(samplers.back()));
  }
  ResizePlan plan;
  size_t d = 0;
  for (; d < rank && !sampled[d]; ++d) plan.planes *= srcDims[d];  // leading copied axes: planes
  std::vector<int64_t> inDims;
  for (; d < rank; ++d) {
    if (!sampled[d] && plan.rank > 0 && !plan.sampled[plan.rank - 1]) {  // merge neighbouring copied axes
      plan.outDims[plan.rank - 1] *= dstDims[d];
      inDims.back() *= srcDims[d];
      continue;
    }
    plan.outDims[plan.rank] = dstDims[d];
    plan.sampled[plan.rank] = sampled[d];
    plan.axes[plan.rank] = samplers[d];
    inDims.push_back(srcDims[d]);
    ++plan.rank;
  }
  const std::vector<int64_t> strides = contiguousStrides(inDims);
  for (int a = 0; a < plan.rank; ++a) {
    plan.inStrides[a] = strides[size_t(a)];
    plan.planeIn *= inDims[size_t(a)];
    plan.planeOut *= plan.outDims[a];
  }
  return plan;
}

}  // namespace kiln::kernels::cuda
