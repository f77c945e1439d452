#pragma once
// The geometry of a NumPy-style matmul of A [..., M, K] by B [..., K, N], shared by every backend:
// 1-D operands promoted ([K] -> [1, K] for A, [K] -> [K, 1] for B, the added dim dropped from the
// output again), batch dims broadcast right-aligned. The output is [batch..., M, N] in memory.
#include <cstdint>
#include <vector>

namespace kiln {

struct MatMulGeometry {
  int64_t M = 1, N = 1, K = 1;
  std::vector<int64_t> batchDims;  // the output's batch dims
  // Elements from one matrix of an operand to the next along each batch dim; 0 where it
  // broadcasts (its dim is 1 or missing).
  std::vector<int64_t> aStrides, bStrides;

  int64_t batchCount() const;
};

MatMulGeometry matMulGeometry(std::vector<int64_t> aDims, std::vector<int64_t> bDims);

}  // namespace kiln
