#include "index_geometry.h"

namespace kiln::kernels::cuda {
namespace {

int64_t product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t d = begin; d < end; ++d) n *= dims[d];
  return n;
}

}  // namespace

std::optional<GatherGeometry> gatherGeometry(const std::vector<int64_t>& dataDims, int64_t indexCount, int axis) {
  const int rank = int(dataDims.size());
  if (axis < 0 || axis >= rank || indexCount < 0) return std::nullopt;
  GatherGeometry g;
  g.outer = product(dataDims, 0, size_t(axis));
  g.axisDim = dataDims[size_t(axis)];
  g.inner = product(dataDims, size_t(axis) + 1, dataDims.size());
  g.indexCount = indexCount;
  return g;
}

std::optional<AxisGeometry> axisGeometry(const std::vector<int64_t>& dataDims, const std::vector<int64_t>& indexDims,
                                         int axis) {
  const int rank = int(dataDims.size());
  if (rank == 0 || rank > kMaxRank || int(indexDims.size()) != rank || axis < 0 || axis >= rank) return std::nullopt;
  AxisGeometry g;
  g.rank = rank;
  g.axis = axis;
  g.axisDim = dataDims[size_t(axis)];
  const std::vector<int64_t> strides = contiguousStrides(dataDims);
  for (int d = 0; d < rank; ++d) {
    if (indexDims[size_t(d)] < 0 || (d != axis && indexDims[size_t(d)] > dataDims[size_t(d)])) return std::nullopt;
    g.indexDims[d] = indexDims[size_t(d)];
    g.dataStrides[d] = strides[size_t(d)];
  }
  return g;
}

std::optional<TupleGeometry> tupleGeometry(const std::vector<int64_t>& dataDims, const std::vector<int64_t>& indexDims,
                                           int batchDims) {
  if (indexDims.empty() || dataDims.size() > size_t(kMaxRank) || batchDims < 0 ||
      size_t(batchDims) >= indexDims.size() || size_t(batchDims) > dataDims.size())
    return std::nullopt;
  const int64_t tuple = indexDims.back();
  if (tuple < 1 || size_t(batchDims) + size_t(tuple) > dataDims.size()) return std::nullopt;
  for (int d = 0; d < batchDims; ++d)
    if (indexDims[size_t(d)] != dataDims[size_t(d)]) return std::nullopt;
  TupleGeometry g;
  g.tupleLength = int(tuple);
  const std::vector<int64_t> strides = contiguousStrides(dataDims);
  for (int j = 0; j < g.tupleLength; ++j) {
    g.dims[j] = dataDims[size_t(batchDims + j)];
    g.strides[j] = strides[size_t(batchDims + j)];
  }
  const int64_t batches = product(indexDims, 0, size_t(batchDims));
  g.tupleCount = product(indexDims, 0, indexDims.size() - 1);
  g.tuplesPerBatch = batches > 0 ? g.tupleCount / batches : 1;
  if (g.tuplesPerBatch == 0) g.tuplesPerBatch = 1;  // no tuples at all: any value keeps the division defined
  g.batchElements = product(dataDims, size_t(batchDims), dataDims.size());
  g.sliceElements = product(dataDims, size_t(batchDims) + size_t(tuple), dataDims.size());
  return g;
}

}  // namespace kiln::kernels::cuda
