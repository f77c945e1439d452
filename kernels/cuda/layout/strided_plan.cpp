#include "strided_plan.h"

#include "copy_unit.h"

#include <algorithm>
#include <cstdlib>

namespace kiln::kernels::cuda {

std::optional<StridedView> transposeView(const std::vector<int64_t>& dims, const std::vector<int64_t>& perm) {
  if (perm.size() != dims.size()) return std::nullopt;
  std::vector<bool> seen(dims.size(), false);
  const std::vector<int64_t> strides = contiguousStrides(dims);
  StridedView view;
  for (int64_t axis : perm) {
    if (axis < 0 || axis >= int64_t(dims.size()) || seen[size_t(axis)]) return std::nullopt;
    seen[size_t(axis)] = true;
    view.dims.push_back(dims[size_t(axis)]);
    view.strides.push_back(strides[size_t(axis)]);
  }
  return view;
}

std::optional<StridedView> sliceView(const std::vector<int64_t>& inDims, const std::vector<int64_t>& starts,
                                     const std::vector<int64_t>& steps, const std::vector<int64_t>& outDims) {
  const size_t rank = inDims.size();
  if (starts.size() != rank || steps.size() != rank || outDims.size() != rank) return std::nullopt;
  const std::vector<int64_t> inStrides = contiguousStrides(inDims);
  StridedView view;
  view.dims = outDims;
  for (size_t d = 0; d < rank; ++d) {
    if (steps[d] == 0 || outDims[d] < 0) return std::nullopt;
    if (outDims[d] > 0) {  // the first and the last coordinate read must lie inside the input
      const int64_t last = starts[d] + (outDims[d] - 1) * steps[d];
      if (starts[d] < 0 || starts[d] >= inDims[d] || last < 0 || last >= inDims[d]) return std::nullopt;
      view.offset += starts[d] * inStrides[d];
    }
    view.strides.push_back(steps[d] * inStrides[d]);
  }
  return view;
}

std::optional<StridedView> expandView(const std::vector<int64_t>& inDims, const std::vector<int64_t>& outDims) {
  if (inDims.size() > outDims.size()) return std::nullopt;
  const std::vector<int64_t> inStrides = contiguousStrides(inDims);
  const size_t lead = outDims.size() - inDims.size();
  StridedView view;
  view.dims = outDims;
  view.strides.assign(outDims.size(), 0);  // broadcast axes read the same element again
  for (size_t d = 0; d < inDims.size(); ++d) {
    if (inDims[d] == outDims[lead + d])
      view.strides[lead + d] = inStrides[d];
    else if (inDims[d] != 1)
      return std::nullopt;
  }
  return view;
}

std::optional<StridedView> tileView(const std::vector<int64_t>& inDims, const std::vector<int64_t>& repeats) {
  if (repeats.size() != inDims.size()) return std::nullopt;
  const std::vector<int64_t> inStrides = contiguousStrides(inDims);
  StridedView view;
  for (size_t d = 0; d < inDims.size(); ++d) {
    if (repeats[d] < 0) return std::nullopt;
    view.dims.insert(view.dims.end(), {repeats[d], inDims[d]});
    view.strides.insert(view.strides.end(), {0, inStrides[d]});
  }
  return view;
}

namespace {

// inDims viewed as `viewDims` (same element count, dense), read in the order `perm`.
StridedView permutedView(const std::vector<int64_t>& viewDims, const std::vector<int64_t>& perm) {
  return *transposeView(viewDims, perm);
}

}  // namespace

std::optional<StridedView> depthToSpaceView(const std::vector<int64_t>& inDims, int64_t b, DepthToSpaceMode mode) {
  if (inDims.size() != 4 || b < 1 || inDims[1] % (b * b) != 0) return std::nullopt;
  const int64_t n = inDims[0], c = inDims[1] / (b * b), h = inDims[2], w = inDims[3];
  // DCR: depth is [b, b, c]; CRD: [c, b, b]. Output [n, c, h, b, w, b].
  if (mode == DepthToSpaceMode::kDCR) return permutedView({n, b, b, c, h, w}, {0, 3, 4, 1, 5, 2});
  return permutedView({n, c, b, b, h, w}, {0, 1, 4, 2, 5, 3});
}

std::optional<StridedView> spaceToDepthView(const std::vector<int64_t>& inDims, int64_t b) {
  if (inDims.size() != 4 || b < 1 || inDims[2] % b != 0 || inDims[3] % b != 0) return std::nullopt;
  const int64_t n = inDims[0], c = inDims[1], h = inDims[2] / b, w = inDims[3] / b;
  return permutedView({n, c, h, b, w, b}, {0, 3, 5, 1, 2, 4});
}

void simplifyView(std::vector<int64_t>& dims, std::vector<int64_t>& strides) {
  for (int64_t d : dims)
    if (d == 0) return;  // nothing to copy: keep the zero so callers see it
  std::vector<int64_t> keptDims, keptStrides;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 1) continue;
    if (!keptDims.empty() && keptStrides.back() == strides[i] * dims[i]) {
      keptDims.back() *= dims[i];
      keptStrides.back() = strides[i];
      continue;
    }
    keptDims.push_back(dims[i]);
    keptStrides.push_back(strides[i]);
  }
  dims = std::move(keptDims);
  strides = std::move(keptStrides);
}

namespace {

StridedLayout layoutOf(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides) {
  StridedLayout layout;
  layout.rank = int(dims.size());
  for (size_t d = 0; d < dims.size(); ++d) layout.dims[d] = dims[d], layout.strides[d] = strides[d];
  return layout;
}

// The output axis other than the last that reads the source contiguously, when tiling pays off:
// the last axis must not be contiguous in the source, and both axes long enough to fill tiles.
int tileRowAxis(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides) {
  const size_t rank = dims.size();
  if (rank < 2 || std::llabs(strides.back()) <= 1 || dims.back() < 8) return -1;
  for (size_t d = 0; d + 1 < rank; ++d)
    if (strides[d] == 1 && dims[d] >= 8) return int(d);
  return -1;
}

}  // namespace

bool planStridedCopy(std::vector<int64_t> dims, std::vector<int64_t> srcStrides, int elementBytes, int64_t srcAddress,
                     int64_t dstAddress, StridedCopyPlan& plan) {
  plan = StridedCopyPlan{};
  if (dims.size() != srcStrides.size()) return false;
  for (int64_t d : dims)
    if (d == 0) return true;  // kNothing
  simplifyView(dims, srcStrides);
  if (dims.size() > size_t(kMaxRank)) return false;
  const size_t rank = dims.size();

  if (const int r = tileRowAxis(dims, srcStrides); r >= 0) {
    const std::vector<int64_t> dstStrides = contiguousStrides(dims);
    TransposeTiles& t = plan.tiles;
    t.rows = t.validRows = dims[size_t(r)];
    t.cols = t.validCols = dims.back();
    t.srcColStride = srcStrides.back();
    t.dstRowStride = dstStrides[size_t(r)];
    std::vector<int64_t> batchDims, srcBatch, dstBatch;
    for (size_t d = 0; d + 1 < rank; ++d) {
      if (int(d) == r) continue;
      batchDims.push_back(dims[d]);
      srcBatch.push_back(srcStrides[d]);
      dstBatch.push_back(dstStrides[d]);
    }
    for (int64_t d : batchDims) t.batches *= d;
    t.srcBatch = layoutOf(batchDims, srcBatch);
    t.dstBatch = layoutOf(batchDims, dstBatch);
    plan.kind = StridedCopyPlan::Kind::kTiles;
    return true;
  }

  int64_t count = 1;
  for (int64_t d : dims) count *= d;
  int unit = elementBytes;
  if (rank > 0 && srcStrides.back() == 1) {  // contiguous runs: widen to vector units
    const int64_t e = elementBytes;
    int64_t runBytes = dims.back() * e;
    unit = copyUnitBytes(elementBytes, {runBytes, srcAddress, dstAddress});
    for (size_t d = 0; d + 1 < rank; ++d) unit = std::min(unit, copyUnitBytes(elementBytes, {srcStrides[d] * e}));
    const int64_t factor = unit / elementBytes;
    dims.back() /= factor;
    for (size_t d = 0; d + 1 < rank; ++d) srcStrides[d] /= factor;
    count /= factor;
  }
  plan.kind = StridedCopyPlan::Kind::kUnits;
  plan.unitBytes = unit;
  plan.count = count;
  plan.source = layoutOf(dims, srcStrides);
  return true;
}

std::optional<TileModulo> tileModulo(const std::vector<int64_t>& inDims, const std::vector<int64_t>& repeats) {
  if (inDims.size() > size_t(kMaxRank) || repeats.size() != inDims.size()) return std::nullopt;
  TileModulo modulo;
  modulo.rank = int(inDims.size());
  const std::vector<int64_t> inStrides = contiguousStrides(inDims);
  for (size_t d = 0; d < inDims.size(); ++d) {
    if (repeats[d] < 0) return std::nullopt;
    modulo.outDims[d] = inDims[d] * repeats[d];
    modulo.inDims[d] = inDims[d];
    modulo.inStrides[d] = inStrides[d];
  }
  return modulo;
}

}  // namespace kiln::kernels::cuda
