#include "quantize.h"

namespace kiln::kernels::cuda {

std::optional<QuantLayout> quantLayout(const std::vector<int64_t>& dims, int axis,
                                       const std::vector<int64_t>& scaleDims, int64_t blockSize) {
  const int rank = int(dims.size());
  int64_t scaleCount = 1;
  for (int64_t d : scaleDims) scaleCount *= d;
  QuantLayout layout;
  if (blockSize <= 0 && scaleCount == 1) {  // per tensor
    for (int64_t d : dims) layout.inner *= d;
    return layout;
  }
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank || blockSize < 0) return std::nullopt;
  for (int d = 0; d < rank; ++d)
    (d < axis ? layout.outer : d == axis ? layout.axisLen : layout.inner) *= dims[size_t(d)];
  if (blockSize == 0) {
    if (scaleDims.size() != 1 || scaleDims[0] != dims[size_t(axis)]) return std::nullopt;
    layout.granularity = QuantGranularity::kPerAxis;
    return layout;
  }
  layout.granularity = QuantGranularity::kBlocked;
  layout.blockSize = blockSize;
  if (scaleDims.size() != dims.size()) return std::nullopt;
  for (int d = 0; d < rank; ++d) {
    const int64_t expected = d == axis ? layout.blocks() : dims[size_t(d)];
    if (scaleDims[size_t(d)] != expected) return std::nullopt;
  }
  return layout;
}

}  // namespace kiln::kernels::cuda
