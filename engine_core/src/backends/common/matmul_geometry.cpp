#include "matmul_geometry.h"

#include <algorithm>

namespace kiln {

int64_t MatMulGeometry::batchCount() const {
  int64_t count = 1;
  for (int64_t d : batchDims) count *= d;
  return count;
}

MatMulGeometry matMulGeometry(std::vector<int64_t> aDims, std::vector<int64_t> bDims) {
  if (aDims.size() == 1) aDims.insert(aDims.begin(), 1);  // [K] -> [1, K]
  if (bDims.size() == 1) bDims.push_back(1);              // [K] -> [K, 1]
  MatMulGeometry g;
  g.M = aDims[aDims.size() - 2];
  g.K = aDims.back();
  g.N = bDims.back();
  const size_t aBatchRank = aDims.size() - 2, bBatchRank = bDims.size() - 2;
  const size_t rank = std::max(aBatchRank, bBatchRank);
  g.batchDims.assign(rank, 1);
  g.aStrides.assign(rank, 0);
  g.bStrides.assign(rank, 0);
  int64_t aStride = g.M * g.K, bStride = g.K * g.N;
  for (size_t i = 0; i < rank; ++i) {
    const size_t d = rank - 1 - i;
    const int64_t a = i < aBatchRank ? aDims[aBatchRank - 1 - i] : 1;
    const int64_t b = i < bBatchRank ? bDims[bBatchRank - 1 - i] : 1;
    g.batchDims[d] = std::max(a, b);
    if (a != 1) g.aStrides[d] = aStride;
    if (b != 1) g.bStrides[d] = bStride;
    aStride *= a;
    bStride *= b;
  }
  return g;
}

}  // namespace kiln
