#include "pad.h"

namespace kiln::kernels::cuda {

std::optional<PadGeometry<int64_t>> padGeometry(const std::vector<int64_t>& srcDims,
                                                const std::vector<int64_t>& padsBegin,
                                                const std::vector<int64_t>& dstDims, PadMode mode) {
  const size_t rank = srcDims.size();
  if (padsBegin.size() != rank || dstDims.size() != rank) return std::nullopt;
  for (size_t d = 0; d < rank; ++d) {
    if (srcDims[d] < 0 || dstDims[d] < 0) return std::nullopt;
    if (mode != PadMode::kConstant && srcDims[d] == 0 && dstDims[d] > 0) return std::nullopt;  // nothing to mirror
  }
  // Axes whose output is their input merge with an unpadded neighbour; size-1 unpadded axes drop.
  std::vector<int64_t> src, dst, begin;
  std::vector<bool> padded;
  for (size_t d = 0; d < rank; ++d) {
    const bool isPadded = padsBegin[d] != 0 || dstDims[d] != srcDims[d];
    if (!isPadded && srcDims[d] == 1) continue;
    if (!isPadded && !padded.empty() && !padded.back()) {
      src.back() *= srcDims[d];
      dst.back() *= dstDims[d];
      continue;
    }
    src.push_back(srcDims[d]);
    dst.push_back(dstDims[d]);
    begin.push_back(padsBegin[d]);
    padded.push_back(isPadded);
  }
  if (src.size() > size_t(kMaxRank)) return std::nullopt;
  PadGeometry<int64_t> g;
  g.rank = int(src.size());
  g.mode = mode;
  const std::vector<int64_t> strides = contiguousStrides(src);
  for (size_t d = 0; d < src.size(); ++d) {
    g.dstDims[d] = dst[d];
    g.srcDims[d] = src[d];
    g.srcStrides[d] = strides[d];
    g.padsBegin[d] = begin[d];
  }
  return g;
}

}  // namespace kiln::kernels::cuda
