#include "tensor_geometry.h"

#include <stdexcept>
#include <string>

namespace kiln::kernels::cuda {

std::vector<int64_t> contiguousStrides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;) strides[d - 1] = strides[d] * dims[d];
  return strides;
}

StridedLayout denseLayout(const std::vector<int64_t>& dims) { return broadcastLayout(dims, dims); }

StridedLayout broadcastLayout(const std::vector<int64_t>& outputDims, const std::vector<int64_t>& inputDims) {
  if (outputDims.size() > size_t(kMaxRank))
    throw std::invalid_argument("rank " + std::to_string(outputDims.size()) + " is above the CUDA kernels' limit of " +
                                std::to_string(kMaxRank));
  if (inputDims.size() > outputDims.size())
    throw std::invalid_argument("an input of rank " + std::to_string(inputDims.size()) +
                                " cannot broadcast to rank " + std::to_string(outputDims.size()));
  StridedLayout layout;
  layout.rank = int(outputDims.size());
  const std::vector<int64_t> inputStrides = contiguousStrides(inputDims);
  const size_t lead = outputDims.size() - inputDims.size();
  for (size_t d = 0; d < outputDims.size(); ++d) {
    layout.dims[d] = outputDims[d];
    if (d < lead) continue;  // missing leading dims repeat
    const int64_t in = inputDims[d - lead];
    if (in == outputDims[d]) layout.strides[d] = inputStrides[d - lead];
    else if (in != 1)
      throw std::invalid_argument("dimension " + std::to_string(d - lead) + " of size " + std::to_string(in) +
                                  " does not broadcast to " + std::to_string(outputDims[d]));
  }
  return layout;
}

void coalesceDims(std::vector<StridedLayout*> layouts) {
  if (layouts.empty()) return;
  const int rank = layouts[0]->rank;
  int kept = 0;
  for (int d = 0; d < rank; ++d) {
    const int64_t size = layouts[0]->dims[d];
    if (size == 1) continue;  // contributes nothing to any offset
    bool merge = kept > 0;
    for (const StridedLayout* l : layouts)
      merge = merge && l->strides[kept - 1] == l->strides[d] * size;
    for (StridedLayout* l : layouts) {
      if (merge) {
        l->dims[kept - 1] *= size;
        l->strides[kept - 1] = l->strides[d];
      } else {
        l->dims[kept] = size;
        l->strides[kept] = l->strides[d];
      }
    }
    if (!merge) ++kept;
  }
  for (StridedLayout* l : layouts) {
    l->rank = kept;
    for (int d = kept; d < kMaxRank; ++d) l->dims[d] = 0, l->strides[d] = 0;
  }
}

}  // namespace kiln::kernels::cuda
