#pragma once
// A batched 2-D transpose seen from its output: out[b][i][j], where j runs contiguously in the
// destination and i runs contiguously in the source. A tile of 32 x 32 is read along i and
// written along j through shared memory, so both sides move whole cache lines. Positions beyond
// the source's extent (validRows, validCols) are written as zero: that is how the channel-padded
// NHWC reformat fills its padding.
#include <kernels/cuda/common/host_device.h>
#include <kernels/cuda/common/tensor_geometry.h>

#include <cstdint>

namespace kiln::kernels::cuda {

constexpr int kTransposeTile = 32;
constexpr int kTransposeTileRows = 8;  // threads along i per block: each reads and writes 4 rows

struct TransposeTiles {
  int64_t rows = 0, cols = 0;            // output extent along i and j
  int64_t validRows = 0, validCols = 0;  // source extent along i and j (at most rows, cols)
  int64_t srcColStride = 0;              // source stride along j; along i it is 1
  int64_t dstRowStride = 0;              // destination stride along i; along j it is 1
  int64_t batches = 1;
  StridedLayout srcBatch, dstBatch;  // offsets of batch b (both over the same batch dims)

  KILN_HD bool inSource(int64_t i, int64_t j) const { return i < validRows && j < validCols; }
  KILN_HD int64_t srcOffset(int64_t batchOffset, int64_t i, int64_t j) const {
    return batchOffset + i + j * srcColStride;
  }
  KILN_HD int64_t dstOffset(int64_t batchOffset, int64_t i, int64_t j) const {
    return batchOffset + i * dstRowStride + j;
  }
};

}  // namespace kiln::kernels::cuda

#include <cuda_runtime.h>

namespace kiln::kernels::cuda {

// Enqueues the tiled transpose for elements of 1, 2, 4 or 8 bytes (defined in strided_copy.cu).
cudaError_t launchTransposeTiles(const void* src, void* dst, const TransposeTiles& tiles, int elementBytes,
                                 cudaStream_t stream);

}  // namespace kiln::kernels::cuda
