#include "strided_copy.h"

#include "element_types.h"

#include <kernels/cpu/common/parallel.h>

#include <algorithm>
#include <optional>

namespace kiln::kernels {
namespace {

// Drops size-1 axes and merges neighbours whose source layout is already contiguous, so that e.g. a
// [0,2,1,3] transpose becomes three axes with a contiguous innermost run.
void simplify(std::vector<int64_t>& dims, std::vector<int64_t>& strides) {
  std::vector<int64_t> d, s;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 1) continue;
    if (!d.empty() && s.back() == strides[i] * dims[i]) {
      d.back() *= dims[i];
      s.back() = strides[i];
      continue;
    }
    d.push_back(dims[i]);
    s.push_back(strides[i]);
  }
  dims = std::move(d);
  strides = std::move(s);
}

// Source offset of the first element of output row `row`, where rows run over dims[0..rank-2].
int64_t rowOffset(int64_t row, const std::vector<int64_t>& dims, const std::vector<int64_t>& strides,
                  std::vector<int64_t>& index) {
  int64_t offset = 0;
  for (size_t d = dims.size() - 1; d-- > 0;) {
    index[d] = row % dims[d];
    row /= dims[d];
    offset += index[d] * strides[d];
  }
  return offset;
}

// Advances the multi-index over dims[0..rank-2] by one row, keeping the offset in step.
void nextRow(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides, std::vector<int64_t>& index,
             int64_t& offset) {
  for (size_t d = dims.size() - 1; d-- > 0;) {
    offset += strides[d];
    if (++index[d] < dims[d]) return;
    offset -= strides[d] * dims[d];
    index[d] = 0;
  }
}

// Tiled 2-D transposes: output axis `rowAxis` has source stride 1 and the last output axis a larger
// source stride; every other axis is a batch. 32x32 tiles keep both the reads and the writes within
// cache lines; each row of a tile is written contiguously.
template <class T>
void tiledTranspose(const T* src, T* dst, const std::vector<int64_t>& dims, const std::vector<int64_t>& strides,
                    size_t rowAxis) {
  constexpr int64_t kTile = 32;
  size_t rank = dims.size();
  std::vector<int64_t> dstStrides = denseStrides(dims);
  int64_t rows = dims[rowAxis], cols = dims.back(), colStride = strides.back(), rowDstStride = dstStrides[rowAxis];
  std::vector<int64_t> batchDims, batchSrc, batchDst;
  for (size_t d = 0; d + 1 < rank; ++d) {
    if (d == rowAxis) continue;
    batchDims.push_back(dims[d]);
    batchSrc.push_back(strides[d]);
    batchDst.push_back(dstStrides[d]);
  }
  int64_t batches = 1;
  for (int64_t d : batchDims) batches *= d;
  int64_t rowTiles = (rows + kTile - 1) / kTile, colTiles = (cols + kTile - 1) / kTile;
  parallelFor(batches * rowTiles * colTiles, 1, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      int64_t batch = task / (rowTiles * colTiles), tile = task % (rowTiles * colTiles);
      const T* in = src;
      T* out = dst;
      for (size_t d = batchDims.size(); d-- > 0;) {
        int64_t i = batch % batchDims[d];
        batch /= batchDims[d];
        in += i * batchSrc[d];
        out += i * batchDst[d];
      }
      int64_t r0 = (tile / colTiles) * kTile, c0 = (tile % colTiles) * kTile;
      int64_t r1 = std::min(rows, r0 + kTile), c1 = std::min(cols, c0 + kTile);
      for (int64_t r = r0; r < r1; ++r) {
        T* row = out + r * rowDstStride;
        for (int64_t c = c0; c < c1; ++c) row[c] = in[r + c * colStride];
      }
    }
  });
}

// The output axis (other than the last) that reads the source contiguously, when tiling pays off.
std::optional<size_t> transposeRowAxis(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides) {
  size_t rank = dims.size();
  if (rank < 2 || strides.back() == 1 || strides.back() == 0 || dims.back() < 8) return std::nullopt;
  for (size_t d = 0; d + 1 < rank; ++d)
    if (strides[d] == 1 && dims[d] >= 8) return d;
  return std::nullopt;
}

}  // namespace

std::vector<int64_t> denseStrides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;) strides[d - 1] = strides[d] * dims[d];
  return strides;
}

template <class T>
void copyStrided(const T* src, T* dst, std::vector<int64_t> dims, std::vector<int64_t> srcStrides) {
  for (int64_t d : dims)
    if (d == 0) return;
  simplify(dims, srcStrides);
  if (dims.empty()) {
    dst[0] = src[0];
    return;
  }
  size_t rank = dims.size();
  int64_t inner = dims.back(), innerStride = srcStrides.back();
  if (auto rowAxis = transposeRowAxis(dims, srcStrides)) {
    tiledTranspose(src, dst, dims, srcStrides, *rowAxis);
    return;
  }
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < rank; ++d) rows *= dims[d];
  parallelFor(rows, std::max<int64_t>(1, kCopyGrainElements / inner), [&](int64_t begin, int64_t end) {
    std::vector<int64_t> index(rank);
    int64_t offset = rowOffset(begin, dims, srcStrides, index);
    T* out = dst + begin * inner;
    for (int64_t row = begin; row < end; ++row, out += inner) {
      const T* in = src + offset;
      if (innerStride == 1) {
        std::copy_n(in, inner, out);
      } else if (innerStride == 0) {
        std::fill_n(out, inner, *in);
      } else {
        for (int64_t i = 0; i < inner; ++i) out[i] = in[i * innerStride];
      }
      nextRow(dims, srcStrides, index, offset);
    }
  });
}

// Copies each part's block of every outer row between the parts and the joined tensor: from the
// parts when they are const (concat), into them otherwise (split, where a null part is skipped).
template <class Joined, class Part>
void copyBlocks(Joined* joined, const std::vector<Part*>& parts, const std::vector<int64_t>& axisSizes,
                int64_t outer, int64_t inner) {
  int64_t total = 0;
  std::vector<int64_t> starts;
  for (int64_t size : axisSizes) {
    starts.push_back(total);
    total += size;
  }
  int64_t count = int64_t(parts.size());
  int64_t rowElements = std::max<int64_t>(1, total * inner / std::max<int64_t>(1, count));
  parallelFor(outer * count, std::max<int64_t>(1, kCopyGrainElements / rowElements), [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      int64_t o = task / count, p = task % count;
      if (!parts[p]) continue;
      int64_t block = axisSizes[p] * inner;
      Joined* whole = joined + (o * total + starts[p]) * inner;
      if constexpr (std::is_const_v<Part>) std::copy_n(parts[p] + o * block, block, whole);
      else std::copy_n(whole, block, parts[p] + o * block);
    }
  });
}

template <class T>
void concatBlocks(const std::vector<const T*>& parts, const std::vector<int64_t>& axisSizes, T* dst,
                  int64_t outer, int64_t inner) {
  copyBlocks(dst, parts, axisSizes, outer, inner);
}

template <class T>
void splitBlocks(const T* src, const std::vector<T*>& parts, const std::vector<int64_t>& axisSizes, int64_t outer,
                 int64_t inner) {
  copyBlocks(src, parts, axisSizes, outer, inner);
}

#define KILN_INSTANTIATE(T)                                                                                     \
  template void copyStrided<T>(const T*, T*, std::vector<int64_t>, std::vector<int64_t>);                      \
  template void concatBlocks<T>(const std::vector<const T*>&, const std::vector<int64_t>&, T*, int64_t, int64_t); \
  template void splitBlocks<T>(const T*, const std::vector<T*>&, const std::vector<int64_t>&, int64_t, int64_t);
KILN_FOR_EACH_STORAGE_TYPE(KILN_INSTANTIATE)
#undef KILN_INSTANTIATE

}  // namespace kiln::kernels
