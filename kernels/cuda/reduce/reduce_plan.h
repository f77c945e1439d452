#pragma once
// How a reduction over any set of axes walks its input: size-1 dims dropped, neighbouring dims of
// the same kind (kept or reduced) merged, then two strided layouts: `kept` maps an output index
// (row-major over the kept dims, the output's own order) to the offset of its first input
// element, `folded` maps a reduction index to the offset from there. No data is permuted. When
// the input's innermost merged dim is reduced, the elements of one output lie in contiguous runs
// (kernels put their lanes along the reduction); otherwise neighbouring outputs are contiguous
// (lanes go along the outputs). Host code, shared with the host tests.
#include "kernels/cuda/common/tensor_geometry.h"
#include "kernels/cuda/elementwise/broadcast_indexer.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace kiln::kernels::cuda {

struct ReducePlan {
  int64_t outputs = 1;  // 0: nothing to write
  int64_t reduced = 1;  // elements folded into each output (0: every output is the identity)
  StridedLayout kept, folded;
  bool innerReduced = true;
};

// Throws std::invalid_argument when `reduced` does not have one flag per dim or a layout would
// need more than kMaxRank dims.
inline ReducePlan planReduce(const std::vector<int64_t>& dims, const std::vector<bool>& reduced) {
  if (reduced.size() != dims.size()) throw std::invalid_argument("one reduced flag per dim is needed");
  std::vector<int64_t> mergedDims;
  std::vector<bool> mergedReduced;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] < 0) throw std::invalid_argument("negative dim");
    if (dims[d] == 1) continue;
    if (!mergedDims.empty() && mergedReduced.back() == reduced[d]) {
      mergedDims.back() *= dims[d];
    } else {
      mergedDims.push_back(dims[d]);
      mergedReduced.push_back(reduced[d]);
    }
  }
  ReducePlan plan;
  std::vector<int64_t> strides(mergedDims.size(), 1);
  for (size_t d = mergedDims.size(); d-- > 1;) strides[d - 1] = strides[d] * mergedDims[d];
  for (size_t d = 0; d < mergedDims.size(); ++d) {
    StridedLayout& layout = mergedReduced[d] ? plan.folded : plan.kept;
    if (layout.rank == kMaxRank) throw std::invalid_argument("too many alternating kept and reduced dims");
    layout.dims[layout.rank] = mergedDims[d];
    layout.strides[layout.rank] = strides[d];
    ++layout.rank;
    (mergedReduced[d] ? plan.reduced : plan.outputs) *= mergedDims[d];
  }
  plan.innerReduced = mergedDims.empty() || mergedReduced.back();
  return plan;
}

// A layout's offsets by linear index (an indexer with one input), for `count` indices.
inline BroadcastIndexer<1> indexerFor(const StridedLayout& layout, int64_t count) {
  BroadcastIndexer<1> ix;
  ix.rank = layout.rank;
  ix.narrow = count < (int64_t(1) << 31);
  for (int d = 0; d < layout.rank; ++d) {
    ix.dims[d] = layout.dims[d];
    ix.strides[0][d] = layout.strides[d];
    if (ix.narrow) ix.dividers[d] = FastDivider(uint32_t(layout.dims[d]));
  }
  return ix;
}

// How the reduction kernel covers a plan: blocks of `lanes` x `outputLanes` threads, lanes along
// x in row mode (the plan's innerReduced) and along y otherwise; when the outputs alone would fill
// few blocks, each output's reduction is cut into `splits` chunks (grid y) whose partial results
// a second kernel combines, so that one long reduction still spreads over the GPU.
struct ReduceGeometry {
  bool rowMode = true;
  int lanes = 1;
  int outputLanes = 1;
  int64_t blocks = 0;  // along the outputs
  int64_t splits = 1;
  int64_t chunk = 0;   // reduction indices per split
};

constexpr int kReduceBlockThreads = 256;
constexpr int64_t kReduceTargetBlocks = 1024;  // about 8 resident blocks on each of an H200's 132 SMs
constexpr int64_t kReduceMinPerLane = 32;      // a split gives each lane at least this many elements

inline int64_t powerOfTwoCeil(int64_t n, int64_t cap) {
  int64_t p = 1;
  while (p < cap && p < n) p *= 2;
  return p;
}

inline ReduceGeometry reduceGeometry(const ReducePlan& plan) {
  ReduceGeometry g;
  g.rowMode = plan.innerReduced;
  const int64_t r = plan.reduced;
  if (g.rowMode) {
    g.lanes = int(powerOfTwoCeil(r, kReduceBlockThreads));
    g.outputLanes = int(powerOfTwoCeil(plan.outputs, kReduceBlockThreads / g.lanes));
  } else {
    const int64_t keptInner = plan.kept.rank > 0 ? plan.kept.dims[plan.kept.rank - 1] : 1;
    const int64_t x = powerOfTwoCeil(keptInner, 32);
    g.lanes = int(powerOfTwoCeil(r, kReduceBlockThreads / x));
    g.outputLanes = int(powerOfTwoCeil(plan.outputs, kReduceBlockThreads / g.lanes));
  }
  g.blocks = plan.outputs == 0 ? 0 : (plan.outputs + g.outputLanes - 1) / g.outputLanes;
  g.chunk = r;
  if (g.blocks > 0 && g.blocks < kReduceTargetBlocks) {
    const int64_t byWork = r / (int64_t(g.lanes) * kReduceMinPerLane);
    const int64_t wanted = std::min<int64_t>({(kReduceTargetBlocks + g.blocks - 1) / g.blocks, byWork, 65535});
    if (wanted >= 2) {
      g.chunk = (r + wanted - 1) / wanted;
      g.splits = (r + g.chunk - 1) / g.chunk;
    }
  }
  return g;
}

}  // namespace kiln::kernels::cuda
