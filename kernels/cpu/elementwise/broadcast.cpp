#include "broadcast.h"

#include <stdexcept>
#include <string>

namespace kiln::kernels {

BroadcastPlan::BroadcastPlan(const std::vector<int64_t>& outDims,
                             const std::vector<std::vector<int64_t>>& inputDims)
    : inputCount_(int(inputDims.size())) {
  if (inputDims.empty() || inputDims.size() > size_t(kMaxInputs))
    throw std::invalid_argument("BroadcastPlan takes 1 to 3 inputs");
  const size_t rank = outDims.size();
  outputCount_ = 1;
  for (int64_t d : outDims) outputCount_ *= d;

  // Per kept output dimension: its size and which inputs repeat along it (bit k: input k).
  struct MergedDim {
    int64_t size;
    unsigned repeatMask;
  };
  std::vector<MergedDim> merged;
  for (size_t d = 0; d < rank; ++d) {
    if (outDims[d] == 1) continue;
    unsigned repeatMask = 0;
    for (size_t k = 0; k < inputDims.size(); ++k) {
      const auto& in = inputDims[k];
      if (in.size() > rank) throw std::invalid_argument("an input has a higher rank than the output");
      const size_t lead = rank - in.size();
      const int64_t size = d < lead ? 1 : in[d - lead];
      if (size == 1) repeatMask |= 1u << k;
      else if (size != outDims[d])
        throw std::invalid_argument("input dimension " + std::to_string(size) + " does not broadcast to " +
                                    std::to_string(outDims[d]));
    }
    if (!merged.empty() && merged.back().repeatMask == repeatMask) merged.back().size *= outDims[d];
    else merged.push_back({outDims[d], repeatMask});
  }
  if (merged.empty()) merged.push_back({1, 0});  // a single element

  // Row-major element strides of each input along the merged dimensions (0 where it repeats).
  std::vector<Offsets> strides(merged.size());
  for (int k = 0; k < inputCount_; ++k) {
    int64_t running = 1;
    for (size_t d = merged.size(); d-- > 0;) {
      const bool repeats = (merged[d].repeatMask >> k) & 1u;
      strides[d][size_t(k)] = repeats ? 0 : running;
      if (!repeats) running *= merged[d].size;
    }
  }
  for (int k = 0; k < inputCount_; ++k) {
    uniform_[size_t(k)] = matchesOutput_[size_t(k)] = true;
    for (const auto& dim : merged) {
      const bool repeats = (dim.repeatMask >> k) & 1u;
      uniform_[size_t(k)] = uniform_[size_t(k)] && repeats;
      matchesOutput_[size_t(k)] = matchesOutput_[size_t(k)] && !repeats;
    }
  }
  innerSize_ = merged.back().size;
  innerStep_ = strides.back();
  for (size_t d = 0; d + 1 < merged.size(); ++d) {
    outerDims_.push_back(merged[d].size);
    outerStrides_.push_back(strides[d]);
  }
}

}  // namespace kiln::kernels
