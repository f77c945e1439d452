#pragma once
// Where the indexed ops read and write, element by element; shared by the kernels and the host
// tests. Offsets are in elements; -1 marks an out-of-range index.
#include "index_values.h"

#include <kernels/cuda/common/host_device.h>
#include <kernels/cuda/common/tensor_geometry.h>

#include <cstdint>
#include <optional>
#include <vector>

namespace kiln::kernels::cuda {

// Gather along an axis: data [outer, axisDim, inner], indices [indexCount], output
// [outer, indexCount, inner]. `inner` may be counted in copy units instead of elements.
struct GatherGeometry {
  int64_t outer = 1, axisDim = 1, inner = 1, indexCount = 0;

  KILN_HD int64_t count() const { return outer * indexCount * inner; }
  KILN_HD int64_t sourceOffset(int64_t i, IndexReader indices) const {
    const int64_t k = i % inner, row = i / inner, j = row % indexCount, o = row / indexCount;
    const int64_t v = normalizeIndex(indices[j], axisDim);
    return v < 0 ? -1 : (o * axisDim + v) * inner + k;
  }
};

// GatherElements / ScatterElements: position `linear` of the index tensor (dims indexDims, the
// data's rank) addresses data with its `axis` coordinate replaced by the index value.
struct AxisGeometry {
  int rank = 0, axis = 0;
  int64_t axisDim = 0;
  int64_t indexDims[kMaxRank] = {};
  int64_t dataStrides[kMaxRank] = {};

  KILN_HD int64_t dataOffset(int64_t linear, IndexReader indices) const {
    const int64_t v = normalizeIndex(indices[linear], axisDim);
    if (v < 0) return -1;
    int64_t offset = 0;
    for (int d = rank - 1; d >= 0; --d) {
      const int64_t c = linear % indexDims[d];
      linear /= indexDims[d];
      offset += (d == axis ? v : c) * dataStrides[d];
    }
    return offset;
  }
};

// GatherND / ScatterND: tuple t (the last axis of indices) picks a slice of data within its batch
// (the first batch_dims axes of data and indices agree).
struct TupleGeometry {
  int tupleLength = 0;
  int64_t dims[kMaxRank] = {};     // the data dims the tuple indexes
  int64_t strides[kMaxRank] = {};  // and their strides in data
  int64_t tuplesPerBatch = 1;
  int64_t batchElements = 0;  // data elements per batch
  int64_t sliceElements = 1;  // elements each tuple addresses
  int64_t tupleCount = 0;

  KILN_HD int64_t sliceOffset(int64_t t, IndexReader indices) const {
    int64_t offset = t / tuplesPerBatch * batchElements;
    for (int j = 0; j < tupleLength; ++j) {
      const int64_t v = normalizeIndex(indices[t * tupleLength + j], dims[j]);
      if (v < 0) return -1;
      offset += v * strides[j];
    }
    return offset;
  }
};

// Geometry builders (host); nullopt for shapes the ops do not take: ranks above kMaxRank, an index
// tensor larger than data on a non-axis dim, mismatched batch dims, a tuple longer than the data's
// remaining rank.
std::optional<GatherGeometry> gatherGeometry(const std::vector<int64_t>& dataDims, int64_t indexCount, int axis);
std::optional<AxisGeometry> axisGeometry(const std::vector<int64_t>& dataDims, const std::vector<int64_t>& indexDims,
                                         int axis);
std::optional<TupleGeometry> tupleGeometry(const std::vector<int64_t>& dataDims, const std::vector<int64_t>& indexDims,
                                           int batchDims);

}  // namespace kiln::kernels::cuda
