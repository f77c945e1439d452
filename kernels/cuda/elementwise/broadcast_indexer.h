#pragma once
// Input offsets of a numpy-broadcast elementwise op at each linear output index, for up to three
// inputs at once: one division per (coalesced) dim serves every input. Index spaces below 2^31
// use FastDivider; larger ones fall back to 64-bit division. Built on the host, passed to kernels
// by value, and shared with the host tests (KILN_HD).
#include "fast_divider.h"
#include "kernels/cuda/common/tensor_geometry.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace kiln::kernels::cuda {

template <int Inputs>
struct BroadcastIndexer {
  int rank = 0;
  bool narrow = true;  // every linear index is below 2^31
  int64_t dims[kMaxRank] = {};
  FastDivider dividers[kMaxRank];
  int64_t strides[Inputs][kMaxRank] = {};

  KILN_HD void offsets(int64_t linear, int64_t (&out)[Inputs]) const {
    for (int k = 0; k < Inputs; ++k) out[k] = 0;
    if (narrow) {
      uint32_t rest = uint32_t(linear);
      for (int d = rank - 1; d >= 0; --d) {
        const uint32_t quotient = dividers[d].divide(rest);
        const int64_t coordinate = int64_t(rest - quotient * dividers[d].divisor);
        rest = quotient;
        for (int k = 0; k < Inputs; ++k) out[k] += coordinate * strides[k][d];
      }
    } else {
      for (int d = rank - 1; d >= 0; --d) {
        const int64_t coordinate = linear % dims[d];
        linear /= dims[d];
        for (int k = 0; k < Inputs; ++k) out[k] += coordinate * strides[k][d];
      }
    }
  }
};

// How an elementwise launch walks its inputs: `simple` when every input either has an element
// per output element in the same order or is a single repeated element (then the kernels run
// over plain pointers, vectorised); the indexer otherwise.
template <int Inputs>
struct BroadcastPlan {
  int64_t count = 0;                  // output elements
  bool simple = true;
  std::array<bool, Inputs> repeats{};  // input k is one element (simple plans only)
  BroadcastIndexer<Inputs> indexer;
};

// Throws std::invalid_argument when an input does not broadcast to outDims or the rank is above
// kMaxRank.
template <int Inputs>
BroadcastPlan<Inputs> planBroadcast(const std::vector<int64_t>& outDims,
                                    const std::array<const std::vector<int64_t>*, Inputs>& inputDims) {
  BroadcastPlan<Inputs> plan;
  plan.count = 1;
  for (int64_t d : outDims) plan.count *= d;
  std::array<StridedLayout, Inputs> layouts;
  std::vector<StridedLayout*> pointers;
  for (int k = 0; k < Inputs; ++k) {
    layouts[size_t(k)] = broadcastLayout(outDims, *inputDims[size_t(k)]);
    pointers.push_back(&layouts[size_t(k)]);
  }
  if (plan.count == 0) return plan;
  coalesceDims(pointers);
  BroadcastIndexer<Inputs>& ix = plan.indexer;
  ix.rank = layouts[0].rank;
  ix.narrow = plan.count < (int64_t(1) << 31);
  for (int d = 0; d < ix.rank; ++d) {
    ix.dims[d] = layouts[0].dims[d];
    if (ix.narrow) ix.dividers[d] = FastDivider(uint32_t(ix.dims[d]));
  }
  for (int k = 0; k < Inputs; ++k) {
    const StridedLayout& l = layouts[size_t(k)];
    bool dense = l.rank == 0 || (l.rank == 1 && l.strides[0] == 1);
    bool repeated = true;
    for (int d = 0; d < l.rank; ++d) {
      repeated = repeated && l.strides[d] == 0;
      ix.strides[k][d] = l.strides[d];
    }
    plan.repeats[size_t(k)] = repeated && !dense;  // rank 0 (one output element) counts as dense
    plan.simple = plan.simple && (dense || repeated);
  }
  return plan;
}

}  // namespace kiln::kernels::cuda
