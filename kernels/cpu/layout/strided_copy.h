#pragma once
// Dense-from-strided copies: the one kernel behind Transpose, Slice, Expand, Tile, DepthToSpace and
// SpaceToDepth, plus block copies for Concat and Split.
#include <cstdint>
#include <vector>

namespace kiln::kernels {

// dst is dense row-major with shape `dims`; element (i0..in) comes from
// src[sum(i_d * srcStrides[d])]. Strides are in elements and may be zero (broadcast) or negative
// (reversed). Contiguous runs are copied as blocks; transposes of the two innermost axes are tiled.
template <class T>
void copyStrided(const T* src, T* dst, std::vector<int64_t> dims, std::vector<int64_t> srcStrides);

// Concat along an axis: the output is [outer, sum(axisSizes), inner]; part p is [outer, axisSizes[p], inner].
template <class T>
void concatBlocks(const std::vector<const T*>& parts, const std::vector<int64_t>& axisSizes, T* dst,
                  int64_t outer, int64_t inner);

// Split along an axis: the inverse of concatBlocks.
template <class T>
void splitBlocks(const T* src, const std::vector<T*>& parts, const std::vector<int64_t>& axisSizes,
                 int64_t outer, int64_t inner);

// Row-major strides (in elements) of a dense tensor with these dims.
std::vector<int64_t> denseStrides(const std::vector<int64_t>& dims);

}  // namespace kiln::kernels
