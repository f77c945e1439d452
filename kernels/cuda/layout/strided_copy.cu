#include "copy_unit.cuh"
#include "index_layout.h"
#include "strided_copy.h"

#include <kernels/cuda/common/device_types.cuh>
#include <kernels/cuda/common/launch.cuh>

#include <algorithm>

namespace kiln::kernels::cuda {
namespace {

template <class Unit, class Index>
__global__ void copyUnitsKernel(const Unit* __restrict__ src, Unit* __restrict__ dst,
                                const __grid_constant__ IndexLayout<Index> source, Index count) {
  for (Index i = Index(blockIdx.x) * Index(blockDim.x) + Index(threadIdx.x); i < count;
       i += Index(blockDim.x) * Index(gridDim.x))
    dst[i] = src[source.offsetOf(i)];
}

// Reads a tile along i (contiguous in src), writes it along j (contiguous in dst). The tile's
// extra column keeps the column reads of the write phase off a single shared-memory bank.
template <class T>
__global__ void __launch_bounds__(kTransposeTile* kTransposeTileRows)
    transposeTilesKernel(const T* __restrict__ src, T* __restrict__ dst, const __grid_constant__ TransposeTiles t) {
  __shared__ T tile[kTransposeTile][kTransposeTile + 1];
  const int64_t rowTiles = (t.rows + kTransposeTile - 1) / kTransposeTile;
  const int64_t colTiles = (t.cols + kTransposeTile - 1) / kTransposeTile;
  for (int64_t b = blockIdx.z; b < t.batches; b += gridDim.z) {
    const int64_t srcBase = t.srcBatch.offsetOf(b), dstBase = t.dstBatch.offsetOf(b);
    for (int64_t ti = blockIdx.y; ti < rowTiles; ti += gridDim.y) {
      for (int64_t tj = blockIdx.x; tj < colTiles; tj += gridDim.x) {
        const int64_t i0 = ti * kTransposeTile, j0 = tj * kTransposeTile;
        const int64_t readI = i0 + threadIdx.x;
        for (int jj = threadIdx.y; jj < kTransposeTile; jj += kTransposeTileRows) {
          const int64_t j = j0 + jj;
          T value{};
          if (t.inSource(readI, j)) value = src[t.srcOffset(srcBase, readI, j)];
          tile[jj][threadIdx.x] = value;
        }
        __syncthreads();
        const int64_t writeJ = j0 + threadIdx.x;
        for (int ii = threadIdx.y; ii < kTransposeTile; ii += kTransposeTileRows) {
          const int64_t i = i0 + ii;
          if (i < t.rows && writeJ < t.cols) dst[t.dstOffset(dstBase, i, writeJ)] = tile[threadIdx.x][ii];
        }
        __syncthreads();
      }
    }
  }
}

template <class T>
__global__ void tileModuloKernel(const T* __restrict__ src, T* __restrict__ dst,
                                 const __grid_constant__ TileModulo tile, int64_t count) {
  KILN_GRID_STRIDE_LOOP(i, count) dst[i] = src[tile.sourceOffset(i)];
}

cudaError_t launchUnits(const void* src, void* dst, const StridedCopyPlan& plan, cudaStream_t stream) {
  return dispatchCopyUnit(plan.unitBytes, [&](auto unitTag) {
    using Unit = decltype(unitTag);
    const Unit* from = static_cast<const Unit*>(src);
    Unit* to = static_cast<Unit*>(dst);
    if (fitsInt32(plan.source, plan.count))
      copyUnitsKernel<Unit, int32_t><<<gridFor(plan.count), kThreadsPerBlock, 0, stream>>>(
          from, to, narrowLayout<int32_t>(plan.source), int32_t(plan.count));
    else
      copyUnitsKernel<Unit, int64_t><<<gridFor(plan.count), kThreadsPerBlock, 0, stream>>>(
          from, to, narrowLayout<int64_t>(plan.source), plan.count);
    return launchStatus();
  });
}

const void* advanced(const void* p, int64_t elements, ElementType type) {
  return static_cast<const char*>(p) + elements * int64_t(elementBytes(type));
}

}  // namespace

cudaError_t launchTransposeTiles(const void* src, void* dst, const TransposeTiles& tiles, int elementBytes,
                                 cudaStream_t stream) {
  if (tiles.rows <= 0 || tiles.cols <= 0 || tiles.batches <= 0) return cudaSuccess;
  const int64_t rowTiles = (tiles.rows + kTransposeTile - 1) / kTransposeTile;
  const int64_t colTiles = (tiles.cols + kTransposeTile - 1) / kTransposeTile;
  const dim3 grid(unsigned(std::min<int64_t>(colTiles, int64_t(1) << 20)), unsigned(std::min<int64_t>(rowTiles, 65535)),
                  unsigned(std::min<int64_t>(tiles.batches, 65535)));
  const dim3 block(kTransposeTile, kTransposeTileRows);
  auto launch = [&](auto tag) {
    using T = decltype(tag);
    transposeTilesKernel<T><<<grid, block, 0, stream>>>(static_cast<const T*>(src), static_cast<T*>(dst), tiles);
    return launchStatus();
  };
  switch (elementBytes) {
    case 1: return launch(uint8_t{});
    case 2: return launch(uint16_t{});
    case 4: return launch(uint32_t{});
    case 8: return launch(uint64_t{});
    default: return cudaErrorInvalidValue;
  }
}

cudaError_t copyStrided(const void* src, void* dst, const std::vector<int64_t>& dims,
                        const std::vector<int64_t>& srcStrides, ElementType type, cudaStream_t stream) {
  const int bytes = int(elementBytes(type));
  StridedCopyPlan plan;
  if (!planStridedCopy(dims, srcStrides, bytes, addressOf(src), addressOf(dst), plan)) return cudaErrorInvalidValue;
  switch (plan.kind) {
    case StridedCopyPlan::Kind::kNothing: return cudaSuccess;
    case StridedCopyPlan::Kind::kUnits: return launchUnits(src, dst, plan, stream);
    case StridedCopyPlan::Kind::kTiles: return launchTransposeTiles(src, dst, plan.tiles, bytes, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t copyStrided(const void* src, void* dst, const StridedView& view, ElementType type, cudaStream_t stream) {
  return copyStrided(advanced(src, view.offset, type), dst, view.dims, view.strides, type, stream);
}

cudaError_t transpose(const void* src, void* dst, const std::vector<int64_t>& dims, const std::vector<int64_t>& perm,
                      ElementType type, cudaStream_t stream) {
  const auto view = transposeView(dims, perm);
  return view ? copyStrided(src, dst, *view, type, stream) : cudaErrorInvalidValue;
}

cudaError_t slice(const void* src, void* dst, const std::vector<int64_t>& inDims, const std::vector<int64_t>& starts,
                  const std::vector<int64_t>& steps, const std::vector<int64_t>& outDims, ElementType type,
                  cudaStream_t stream) {
  const auto view = sliceView(inDims, starts, steps, outDims);
  return view ? copyStrided(src, dst, *view, type, stream) : cudaErrorInvalidValue;
}

cudaError_t expand(const void* src, void* dst, const std::vector<int64_t>& inDims, const std::vector<int64_t>& outDims,
                   ElementType type, cudaStream_t stream) {
  const auto view = expandView(inDims, outDims);
  return view ? copyStrided(src, dst, *view, type, stream) : cudaErrorInvalidValue;
}

cudaError_t tile(const void* src, void* dst, const std::vector<int64_t>& inDims, const std::vector<int64_t>& repeats,
                 ElementType type, cudaStream_t stream) {
  const auto view = tileView(inDims, repeats);
  if (!view) return cudaErrorInvalidValue;
  std::vector<int64_t> dims = view->dims, strides = view->strides;
  simplifyView(dims, strides);
  if (dims.size() <= size_t(kMaxRank)) return copyStrided(src, dst, *view, type, stream);
  // Too many repeat axes for one strided view: map each output coordinate back by modulo.
  const auto modulo = tileModulo(inDims, repeats);
  if (!modulo) return cudaErrorInvalidValue;
  int64_t count = 1;
  for (int d = 0; d < modulo->rank; ++d) count *= modulo->outDims[d];
  if (count == 0) return cudaSuccess;
  return dispatchBySize(type, [&](auto tag) {
    using T = decltype(tag);
    tileModuloKernel<T><<<gridFor(count), kThreadsPerBlock, 0, stream>>>(static_cast<const T*>(src),
                                                                         static_cast<T*>(dst), *modulo, count);
    return launchStatus();
  });
}

cudaError_t depthToSpace(const void* src, void* dst, const std::vector<int64_t>& inDims, int64_t blocksize,
                         DepthToSpaceMode mode, ElementType type, cudaStream_t stream) {
  const auto view = depthToSpaceView(inDims, blocksize, mode);
  return view ? copyStrided(src, dst, *view, type, stream) : cudaErrorInvalidValue;
}

cudaError_t spaceToDepth(const void* src, void* dst, const std::vector<int64_t>& inDims, int64_t blocksize,
                         ElementType type, cudaStream_t stream) {
  const auto view = spaceToDepthView(inDims, blocksize);
  return view ? copyStrided(src, dst, *view, type, stream) : cudaErrorInvalidValue;
}

}  // namespace kiln::kernels::cuda
