#pragma once
// Host-side planning of the strided copy behind Transpose, Slice, Expand, Tile, DepthToSpace and
// SpaceToDepth: each op is a view (dims and source strides of a dense output), and one planner
// turns a view into the cheapest kernel. Plain C++ so CI tests it without a GPU.
#include "transpose_tiles.h"

#include <kernels/cuda/common/tensor_geometry.h>

#include <cstdint>
#include <optional>
#include <vector>

namespace kiln::kernels::cuda {

// A dense output of `dims` whose element (i0..in) reads src[offset + sum(i_d * strides[d])].
struct StridedView {
  std::vector<int64_t> dims, strides;
  int64_t offset = 0;
};

enum class DepthToSpaceMode { kDCR, kCRD };

// Each returns nullopt for arguments the op does not take (wrong sizes, a perm that is not a
// permutation, a slice that leaves the input, dims that do not broadcast, a bad block size).
std::optional<StridedView> transposeView(const std::vector<int64_t>& dims, const std::vector<int64_t>& perm);
// Resolved Slice: per axis the first input coordinate read and the step (ONNX clamping already
// applied, as the engine's resolveSlice does); outDims[d] coordinates are read on axis d.
std::optional<StridedView> sliceView(const std::vector<int64_t>& inDims, const std::vector<int64_t>& starts,
                                     const std::vector<int64_t>& steps, const std::vector<int64_t>& outDims);
// Expand: numpy broadcasting of inDims to outDims (outDims is the broadcast result).
std::optional<StridedView> expandView(const std::vector<int64_t>& inDims, const std::vector<int64_t>& outDims);
// Tile: output axis d is [repeats[d], inDims[d]] in row-major order (a zero-stride repeat axis).
std::optional<StridedView> tileView(const std::vector<int64_t>& inDims, const std::vector<int64_t>& repeats);
// DepthToSpace / SpaceToDepth on a 4-D NCHW input.
std::optional<StridedView> depthToSpaceView(const std::vector<int64_t>& inDims, int64_t blocksize,
                                            DepthToSpaceMode mode);
std::optional<StridedView> spaceToDepthView(const std::vector<int64_t>& inDims, int64_t blocksize);

// Drops size-1 axes and merges neighbours the source steps through contiguously (the output is
// dense, so it always can). Empty dims stay (the copy is then empty).
void simplifyView(std::vector<int64_t>& dims, std::vector<int64_t>& strides);

struct StridedCopyPlan {
  enum class Kind { kNothing, kUnits, kTiles };
  Kind kind = Kind::kNothing;
  int unitBytes = 0;     // kUnits: bytes per unit (the element size or a multiple up to 16)
  int64_t count = 0;     // kUnits: units written
  StridedLayout source;  // kUnits: source offset, in units, of output unit i
  TransposeTiles tiles;  // kTiles: in elements
};

// Plans dst (dense, dims) <- src (srcStrides in elements). Contiguous innermost runs are copied in
// vector units; a transpose whose source-contiguous axis is not the output's last goes through
// shared-memory tiles. Returns false when the simplified view needs more than kMaxRank dims.
bool planStridedCopy(std::vector<int64_t> dims, std::vector<int64_t> srcStrides, int elementBytes, int64_t srcAddress,
                     int64_t dstAddress, StridedCopyPlan& plan);

// Tile's fallback when its view does not fit kMaxRank dims: output coordinate c_d reads input
// coordinate c_d % inDims[d].
struct TileModulo {
  int rank = 0;
  int64_t outDims[kMaxRank] = {};
  int64_t inDims[kMaxRank] = {};
  int64_t inStrides[kMaxRank] = {};

  KILN_HD int64_t sourceOffset(int64_t linear) const {
    int64_t offset = 0;
    for (int d = rank - 1; d >= 0; --d) {
      offset += (linear % outDims[d]) % inDims[d] * inStrides[d];
      linear /= outDims[d];
    }
    return offset;
  }
};

// The modulo form of a Tile; nullopt above kMaxRank dims or for bad repeats.
std::optional<TileModulo> tileModulo(const std::vector<int64_t>& inDims, const std::vector<int64_t>& repeats);

}  // namespace kiln::kernels::cuda
