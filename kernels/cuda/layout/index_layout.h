#pragma once
// StridedLayout narrowed to the index type a kernel runs in: 32-bit division is several times
// cheaper than 64-bit on the GPU, so copies whose indices and offsets fit in int32 use it.
#include <kernels/cuda/common/host_device.h>
#include <kernels/cuda/common/tensor_geometry.h>

#include <cstdint>
#include <cstdlib>

namespace kiln::kernels::cuda {

template <class Index>
struct IndexLayout {
  int rank = 0;
  Index dims[kMaxRank] = {};
  Index strides[kMaxRank] = {};

  KILN_HD Index offsetOf(Index linear) const {
    Index offset = 0;
    for (int d = rank - 1; d >= 0; --d) {
      const Index size = dims[d];
      offset += (linear % size) * strides[d];
      linear /= size;
    }
    return offset;
  }
};

template <class Index>
IndexLayout<Index> narrowLayout(const StridedLayout& layout) {
  IndexLayout<Index> narrow;
  narrow.rank = layout.rank;
  for (int d = 0; d < layout.rank; ++d) {
    narrow.dims[d] = Index(layout.dims[d]);
    narrow.strides[d] = Index(layout.strides[d]);
  }
  return narrow;
}

// Below this, an index, an offset and a grid-stride step past the end all fit in int32.
constexpr int64_t kInt32IndexLimit = int64_t(1) << 30;

// True when `count` linear indices and every offset the layout reaches stay below kInt32IndexLimit.
inline bool fitsInt32(const StridedLayout& layout, int64_t count) {
  int64_t reach = 0;
  for (int d = 0; d < layout.rank; ++d) reach += (layout.dims[d] - 1) * std::llabs(layout.strides[d]);
  return count < kInt32IndexLimit && reach < kInt32IndexLimit;
}

}  // namespace kiln::kernels::cuda
