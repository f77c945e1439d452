#include "int4_weights.h"

#include <kernels/cpu/common/parallel.h>
#include <kernels/cpu/gemm/gemm.h>

#include "int4_weight_format.h"

#include <algorithm>
#include <cmath>

namespace kiln::kernels {
namespace {

constexpr int64_t kTileFloats = int64_t(64) << 10;  // a tile of 256 KiB: L2-sized

}  // namespace

int64_t Int4Weights::groups() const { return int4GroupCount(k, groupSize); }
int64_t Int4Weights::bytesPerColumn() const { return groups() * groupSize / 2; }

void quantizeInt4Weights(const float* w, int64_t k, int64_t n, int64_t kStride, int64_t nStride, int64_t groupSize,
                         uint8_t* packed, float* scales) {
  const int64_t groups = int4GroupCount(k, groupSize);
  parallelFor(n * groups, std::max<int64_t>(1, 4096 / groupSize), [&](int64_t begin, int64_t end) {
    for (int64_t cell = begin; cell < end; ++cell) {
      const int64_t column = cell / groups, first = (cell % groups) * groupSize;
      const int64_t last = std::min(first + groupSize, k);
      auto value = [&](int64_t row) { return w[row * kStride + column * nStride]; };
      float amax = 0;
      for (int64_t row = first; row < last; ++row) amax = std::max(amax, std::fabs(value(row)));
      const float scale = int4GroupScale(amax);
      scales[cell] = scale;
      uint8_t* bytes = packed + cell * (groupSize / 2);
      for (int64_t j = 0; j < groupSize / 2; ++j) {
        const int64_t row = first + 2 * j;
        const int low = row < last ? quantizeInt4(value(row), scale) : 0;
        const int high = row + 1 < last ? quantizeInt4(value(row + 1), scale) : 0;
        bytes[j] = packInt4Pair(low, high);
      }
    }
  });
}

void dequantizeInt4Tile(const Int4Weights& w, int64_t k0, int64_t kCount, float* tile) {
  const int64_t groups = w.groups(), columnBytes = w.bytesPerColumn(), group = w.groupSize;
  parallelFor(w.n, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, kCount)), [&](int64_t begin, int64_t end) {
    for (int64_t column = begin; column < end; ++column) {
      float* out = tile + column * kCount;  // out[row - k0] for rows k0 .. k0 + kCount
      for (int64_t row = k0; row < k0 + kCount;) {
        const int64_t g = row / group, cell = column * groups + g;
        const int64_t groupEnd = std::min((g + 1) * group, k0 + kCount);
        // The group's 16 possible weights, by nibble: each value the rule gives, computed once.
        float byNibble[16];
        for (int nibble = 0; nibble < 16; ++nibble)
          byNibble[nibble] =
              dequantizeInt4(unpackInt4(uint8_t(nibble), 0), w.zeros ? int(w.zeros[cell]) : 0, w.scales[cell]);
        // Groups are whole bytes (G is even), so element k of the column sits in byte k / 2.
        const uint8_t* bytes = w.packed + column * columnBytes;
        if (row % 2 != 0) {  // a tile starting on a high nibble
          out[row - k0] = byNibble[bytes[row / 2] >> 4];
          ++row;
        }
        for (; row + 1 < groupEnd; row += 2) {
          const uint8_t b = bytes[row / 2];
          out[row - k0] = byNibble[b & 0xF];
          out[row + 1 - k0] = byNibble[b >> 4];
        }
        if (row < groupEnd) {  // the group or the tile ends on a low nibble
          out[row - k0] = byNibble[bytes[row / 2] & 0xF];
          ++row;
        }
      }
    }
  });
}

int64_t int4TileRows(const Int4Weights& w) {
  const int64_t groupsPerTile = std::max<int64_t>(1, kTileFloats / std::max<int64_t>(1, w.n) / w.groupSize);
  return std::min(w.k, groupsPerTile * w.groupSize);
}

int64_t int4MatMulWorkspaceFloats(const Int4Weights& w) { return int4TileRows(w) * w.n; }

void int4MatMul(const float* a, int64_t rows, const Int4Weights& w, float* y, float* workspace) {
  const int64_t tileRows = int4TileRows(w);
  if (rows == 0) return;
  if (w.k == 0) std::fill(y, y + rows * w.n, 0.0f);
  for (int64_t k0 = 0; k0 < w.k; k0 += tileRows) {
    const int64_t kCount = std::min(tileRows, w.k - k0);
    dequantizeInt4Tile(w, k0, kCount, workspace);
    // y (+)= a[:, k0 : k0 + kCount] · tile^T: the first tile writes, later ones accumulate.
    gemm<float>(false, true, rows, w.n, kCount, 1.0f, a + k0, w.k, workspace, kCount, k0 == 0 ? 0.0f : 1.0f, y, w.n);
  }
}

}  // namespace kiln::kernels
