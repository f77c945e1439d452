// TopK by sorting each line's (key, index) items (topk_keys.h) with a bitonic sort and keeping the
// first k. A line of up to kTileItems elements sorts in shared memory on one block; longer lines
// sort in the workspace: tiles in shared memory first, then for each merge size the strides that
// cross tiles one launch each, and the rest inside the tiles again.
#include "reduce.h"
#include "topk_keys.h"

#include "kernels/cuda/common/device_types.cuh"
#include "kernels/cuda/common/launch.cuh"

namespace kiln::kernels::cuda {
namespace {

constexpr int64_t kTileItems = kTopKTileItems;

struct TopKShape {
  int64_t outer, n, inner, k;
  int64_t padded;  // items per line: n rounded up to a power of two
  bool largest;

  KILN_HD int64_t lines() const { return outer * inner; }
  // Offset of element i of line `line` in the input ([outer, n, inner]), and of result t ([outer, k, inner]).
  KILN_HD int64_t inputOffset(int64_t line, int64_t i) const { return ((line / inner) * n + i) * inner + line % inner; }
  KILN_HD int64_t outputOffset(int64_t line, int64_t t) const {
    return ((line / inner) * k + t) * inner + line % inner;
  }
};

// Runs sizes firstSize..lastSize of the network on `count` (a power of two) items in shared
// memory; `origin` is the position of items[0] in its line (a tile of a longer line).
__device__ void bitonicInShared(TopKItem* items, int64_t count, int64_t origin, int64_t firstSize, int64_t lastSize) {
  for (int64_t size = firstSize; size <= lastSize; size *= 2)
    for (int64_t stride = firstTileStride(size, count); stride > 0; stride /= 2) {
      for (int64_t p = threadIdx.x; p < count / 2; p += blockDim.x) bitonicStep(items, origin, size, stride, p);
      __syncthreads();
    }
}

template <class T>
__device__ TopKItem itemOf(const T* in, const TopKShape& s, int64_t line, int64_t i) {
  if (i >= s.n) return kTopKSentinel;
  return TopKItem{topKKey(toCompute(in[s.inputOffset(line, i)]), s.largest), i};
}

// Short lines: one block per line, everything in shared memory.
template <class T>
__global__ void __launch_bounds__(1024) topKInSharedKernel(const T* in, T* values, int64_t* indices, TopKShape s) {
  extern __shared__ TopKItem items[];
  for (int64_t line = blockIdx.x; line < s.lines(); line += gridDim.x) {
    for (int64_t i = threadIdx.x; i < s.padded; i += blockDim.x) items[i] = itemOf(in, s, line, i);
    __syncthreads();
    bitonicInShared(items, s.padded, 0, 2, s.padded);
    for (int64_t t = threadIdx.x; t < s.k; t += blockDim.x) {
      const int64_t index = items[t].index;
      values[s.outputOffset(line, t)] = in[s.inputOffset(line, index)];
      indices[s.outputOffset(line, t)] = index;
    }
    __syncthreads();
  }
}

template <class T>
__global__ void fillItemsKernel(const T* in, TopKItem* items, TopKShape s) {
  KILN_GRID_STRIDE_LOOP(g, s.lines() * s.padded) items[g] = itemOf(in, s, g / s.padded, g % s.padded);
}

// Each tile of kTileItems: sizes firstSize..lastSize, strides below the tile size.
__global__ void __launch_bounds__(1024) sortTilesKernel(TopKItem* items, int64_t padded, int64_t firstSize,
                                                        int64_t lastSize) {
  __shared__ TopKItem tile[kTileItems];
  TopKItem* base = items + int64_t(blockIdx.x) * kTileItems;
  for (int64_t i = threadIdx.x; i < kTileItems; i += blockDim.x) tile[i] = base[i];
  __syncthreads();
  bitonicInShared(tile, kTileItems, (int64_t(blockIdx.x) * kTileItems) % padded, firstSize, lastSize);
  for (int64_t i = threadIdx.x; i < kTileItems; i += blockDim.x) base[i] = tile[i];
}

// One stride (at least a tile) of merge size `size`, over every line: pair p of the whole array
// is pair p % (padded / 2) of line p / (padded / 2).
__global__ void mergeStrideKernel(TopKItem* items, int64_t total, int64_t padded, int64_t size, int64_t stride) {
  KILN_GRID_STRIDE_LOOP(p, total / 2) {
    const int64_t line = p / (padded / 2);
    bitonicStep(items + line * padded, 0, size, stride, p % (padded / 2));
  }
}

template <class T>
__global__ void gatherKernel(const T* in, const TopKItem* items, T* values, int64_t* indices, TopKShape s) {
  KILN_GRID_STRIDE_LOOP(g, s.lines() * s.k) {
    const int64_t line = g / s.k, t = g % s.k;
    const int64_t index = items[line * s.padded + t].index;
    values[s.outputOffset(line, t)] = in[s.inputOffset(line, index)];
    indices[s.outputOffset(line, t)] = index;
  }
}

int64_t paddedLength(int64_t n) {
  int64_t p = 1;
  while (p < n) p *= 2;
  return p;
}

bool isNumeric(ElementType type) {
  return type != ElementType::kBool && type != ElementType::kFloat8E4M3 && type != ElementType::kFloat8E5M2 &&
         uint8_t(type) <= uint8_t(ElementType::kFloat8E5M2);
}

template <class T>
cudaError_t runTopK(const T* in, T* values, int64_t* indices, const TopKShape& s, TopKItem* workspace,
                    cudaStream_t stream) {
  const int64_t lines = s.lines();
  const unsigned lineBlocks = unsigned(std::min<int64_t>(lines, 65535 * 8));
  if (s.padded <= kTileItems) {
    const int threads = int(std::max<int64_t>(32, s.padded / 2));
    topKInSharedKernel<<<lineBlocks, threads, size_t(s.padded) * sizeof(TopKItem), stream>>>(in, values, indices, s);
    return launchStatus();
  }
  const int64_t total = lines * s.padded;
  fillItemsKernel<<<gridFor(total), kThreadsPerBlock, 0, stream>>>(in, workspace, s);
  if (const cudaError_t status = launchStatus(); status != cudaSuccess) return status;
  const unsigned tiles = unsigned(total / kTileItems);
  for (const BitonicPass& pass : bitonicPasses(s.padded)) {
    if (pass.inTiles)
      sortTilesKernel<<<tiles, 1024, 0, stream>>>(workspace, s.padded, pass.firstSize, pass.lastSize);
    else
      mergeStrideKernel<<<gridFor(total / 2), kThreadsPerBlock, 0, stream>>>(workspace, total, s.padded, pass.size,
                                                                          pass.stride);
  }
  if (const cudaError_t status = launchStatus(); status != cudaSuccess) return status;
  gatherKernel<<<gridFor(lines * s.k), kThreadsPerBlock, 0, stream>>>(in, workspace, values, indices, s);
  return launchStatus();
}

}  // namespace

size_t topKWorkspaceBytes(int64_t outer, int64_t n, int64_t inner, int64_t k) {
  (void)k;
  if (outer <= 0 || n <= 0 || inner <= 0) return 0;
  const int64_t padded = paddedLength(n);
  return padded <= kTileItems ? 0 : size_t(outer * inner * padded) * sizeof(TopKItem);
}

cudaError_t launchTopK(const void* in, void* values, int64_t* indices, int64_t outer, int64_t n, int64_t inner,
                       int64_t k, bool largest, ElementType type, void* workspace, size_t workspaceBytes,
                       cudaStream_t stream) {
  if (!isNumeric(type) || outer < 0 || n < 0 || inner < 0 || k < 0 || k > n) return cudaErrorInvalidValue;
  if (outer * inner * k == 0) return cudaSuccess;
  const size_t needed = topKWorkspaceBytes(outer, n, inner, k);
  if (workspaceBytes < needed || (needed > 0 && workspace == nullptr)) return cudaErrorInvalidValue;
  const TopKShape shape{outer, n, inner, k, paddedLength(n), largest};
  return dispatchNumeric(type, [&](auto tag) {
    using T = decltype(tag);
    return runTopK(static_cast<const T*>(in), static_cast<T*>(values), indices, shape,
                   static_cast<TopKItem*>(workspace), stream);
  });
}

}  // namespace kiln::kernels::cuda
