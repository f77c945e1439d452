#pragma once
// Strided views of up to kMaxRank dims, passed to kernels by value. An element's offset comes from
// its linear index in the output's row-major order; a broadcast input has stride 0 along the dims
// it repeats. Host and device share this code (host_device.h), so CI tests it without a GPU.
#include "host_device.h"

#include <cstdint>
#include <vector>

namespace kiln::kernels::cuda {

constexpr int kMaxRank = 8;

struct StridedLayout {
  int rank = 0;
  int64_t dims[kMaxRank] = {};     // the iteration space (the output's dims)
  int64_t strides[kMaxRank] = {};  // element strides of this tensor along those dims (0: broadcast)

  // Offset, in elements, of the element at row-major linear index `linear` of dims.
  KILN_HD int64_t offsetOf(int64_t linear) const {
    int64_t offset = 0;
    for (int d = rank - 1; d >= 0; --d) {
      const int64_t size = dims[d];
      const int64_t coordinate = linear % size;
      linear /= size;
      offset += coordinate * strides[d];
    }
    return offset;
  }
};

// Row-major strides of a dense tensor of `dims`.
std::vector<int64_t> contiguousStrides(const std::vector<int64_t>& dims);

// The layout that reads a dense tensor of `inputDims` (numpy-broadcastable to `outputDims`) at the
// output's indices. Throws std::invalid_argument when the dims do not broadcast or the rank is
// above kMaxRank.
StridedLayout broadcastLayout(const std::vector<int64_t>& outputDims, const std::vector<int64_t>& inputDims);

// A dense layout of `dims` (strides row-major).
StridedLayout denseLayout(const std::vector<int64_t>& dims);

// Merges neighbouring dims that every layout steps through alike (fewer divisions per element) and
// drops size-1 dims. All layouts must share dims; rank can drop to 0 (one element).
void coalesceDims(std::vector<StridedLayout*> layouts);

}  // namespace kiln::kernels::cuda
