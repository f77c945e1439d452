#include "pool_window.h"

#include <algorithm>

namespace kiln::kernels::cuda {
namespace {

int64_t ceilDiv(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

}  // namespace

bool poolAxis(int64_t in, int64_t kernel, int64_t stride, int64_t dilation, AutoPad autoPad, bool ceilMode,
              int64_t& padBegin, int64_t& padEnd, int64_t& out) {
  if (in < 0 || kernel < 1 || stride < 1 || dilation < 1 || padBegin < 0 || padEnd < 0) return false;
  const int64_t k = (kernel - 1) * dilation + 1;
  if (autoPad == AutoPad::kSameUpper || autoPad == AutoPad::kSameLower) {
    out = ceilDiv(in, stride);
    const int64_t total = std::max<int64_t>(0, (out - 1) * stride + k - in);
    padBegin = autoPad == AutoPad::kSameUpper ? total / 2 : total - total / 2;
    padEnd = total - padBegin;
    return true;
  }
  if (autoPad == AutoPad::kValid) padBegin = padEnd = 0;
  const int64_t span = in + padBegin + padEnd - k;
  if (span < 0) return false;
  out = (ceilMode ? ceilDiv(span, stride) : span / stride) + 1;
  if (ceilMode && (out - 1) * stride >= in + padBegin) --out;  // the last window must start inside the input
  return true;
}

std::optional<PoolWindow> makePoolWindow(const std::vector<int64_t>& inSpatial, const std::vector<int64_t>& kernel,
                                         const std::vector<int64_t>& strides, const std::vector<int64_t>& dilations,
                                         const std::vector<int64_t>& pads, AutoPad autoPad, bool ceilMode) {
  const size_t rank = inSpatial.size();
  if (rank < 1 || rank > size_t(kPoolSpatialRank) || kernel.size() != rank) return std::nullopt;
  if ((!strides.empty() && strides.size() != rank) || (!dilations.empty() && dilations.size() != rank) ||
      (!pads.empty() && pads.size() != 2 * rank))
    return std::nullopt;
  PoolWindow w;
  const size_t first = size_t(kPoolSpatialRank) - rank;  // 1-D / 2-D fill the trailing axes
  for (size_t i = 0; i < rank; ++i) {
    const size_t a = first + i;
    w.in[a] = inSpatial[i];
    w.kernel[a] = kernel[i];
    w.stride[a] = strides.empty() ? 1 : strides[i];
    w.dilation[a] = dilations.empty() ? 1 : dilations[i];
    w.padBegin[a] = pads.empty() ? 0 : pads[i];
    w.padEnd[a] = pads.empty() ? 0 : pads[rank + i];
    if (!poolAxis(w.in[a], w.kernel[a], w.stride[a], w.dilation[a], autoPad, ceilMode, w.padBegin[a], w.padEnd[a],
                  w.out[a]))
      return std::nullopt;
  }
  return w;
}

}  // namespace kiln::kernels::cuda
