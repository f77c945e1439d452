#pragma once
// INT4 weight-only matrix products on the CPU (format and rule: int4_weight_format.h): the
// builder's quantization of float weights into the packed format, and Y = A · W with W
// dequantized one K-tile at a time into float and multiplied by the ordinary sgemm, each tile's
// product added into Y, as the GPU kernel dequantizes in its GEMM prologue.
#include <cstdint>

namespace kiln::kernels {

// A weight matrix W [K, N] in the packed format.
struct Int4Weights {
  const uint8_t* packed = nullptr;  // [N, groups, groupSize / 2]
  const float* scales = nullptr;    // [N, groups]
  const int8_t* zeros = nullptr;    // [N, groups] or null (symmetric)
  int64_t k = 0, n = 0, groupSize = 0;

  int64_t groups() const;
  int64_t bytesPerColumn() const;  // groups * groupSize / 2
};

// Quantizes W (element (k, n) at w[k * kStride + n * nStride]) symmetrically per group of
// `groupSize` (even) along K: fills packed [N, groups, groupSize / 2] and scales [N, groups].
void quantizeInt4Weights(const float* w, int64_t k, int64_t n, int64_t kStride, int64_t nStride, int64_t groupSize,
                         uint8_t* packed, float* scales);

// The dequantized weights of rows [k0, k0 + kCount) as a float tile [N, kCount] (each output
// column's values contiguous, the layout sgemm reads as a transposed B).
void dequantizeInt4Tile(const Int4Weights& w, int64_t k0, int64_t kCount, float* tile);

// The K-tile the product dequantizes at a time: whole groups, about 64 Ki floats.
int64_t int4TileRows(const Int4Weights& w);
// Scratch floats int4MatMul needs: one tile.
int64_t int4MatMulWorkspaceFloats(const Int4Weights& w);

// y [rows, N] = a [rows, K] · W, with `workspace` of int4MatMulWorkspaceFloats floats.
void int4MatMul(const float* a, int64_t rows, const Int4Weights& w, float* y, float* workspace);

}  // namespace kiln::kernels
