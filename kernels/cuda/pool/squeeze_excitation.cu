#include "squeeze_excitation.h"

#include "pool.h"

#include <kernels/cuda/common/device_types.cuh>
#include <kernels/cuda/common/launch.cuh>
#include <kernels/cuda/common/resident_blocks.cuh>
#include <kernels/cuda/elementwise/fused_activation.cuh>

#include <algorithm>
#include <type_traits>

namespace kiln::kernels::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarp = 32, kWarps = kThreads / kWarp;
constexpr int kRowsPerWarp = 2;  // weight rows a warp takes in one kernel
constexpr int kRowsPerBlock = kWarps * kRowsPerWarp;
constexpr int kGroup = 8;             // images a block takes where there are many
constexpr int64_t kGroupedFrom = 16;  // batches from which blocks take groups
constexpr int kParts = 8;             // threads that add one mean's position splits

uint64_t alignUp16(uint64_t bytes) { return (bytes + 15) / 16 * 16; }

// Where the means come from: fp32 sums of `splits` position splits ([splits][batch][channels],
// divided here), or (splits 0) means already pooled in T ([batch][channels]).
struct MeansSource {
  const float* partials = nullptr;
  int64_t splits = 0;
  const void* pooled = nullptr;
  float inverseSpatial = 1.0f;
};

// out[i][row] = activation(bias[row] + sum over k of w[row][k] · in[i][k]) for the block's images i
// and rows: a warp takes kRowsPerWarp rows at once (lanes along k, several loads in flight), the
// images' inputs in shared memory. Small matrix-vector products are latency-bound: spreading the
// rows over blocks, not a block's threads, is what makes them fast (one block per image took
// 0.13 ms for MobileNetV3's 960 -> 240 -> 960).
template <class T, int kImages>
__device__ __forceinline__ void rowsTimesInputs(const T* __restrict__ w, const T* __restrict__ bias, const float* in,
                                                int64_t columns, int64_t rows, int64_t row0, int images,
                                                Activation activation, float alpha, float beta, float* out,
                                                int64_t outStride, int64_t outRow0) {
  const int warp = int(threadIdx.x) / kWarp, lane = int(threadIdx.x) % kWarp;
  const int64_t first = row0 + int64_t(warp) * kRowsPerWarp;
  if (first >= rows) return;  // past the last row (the whole warp: no shuffle waits on it)
  float acc[kRowsPerWarp][kImages] = {};
  const T* row[kRowsPerWarp];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) row[r] = w + (first + r < rows ? first + r : first) * columns;
#pragma unroll 4
  for (int64_t k = lane; k < columns; k += kWarp) {
    float weights[kRowsPerWarp];
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) weights[r] = float(toCompute(row[r][k]));
#pragma unroll
    for (int i = 0; i < kImages; ++i) {
      const float x = in[i * columns + k];
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) acc[r][i] += weights[r] * x;
    }
  }
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int64_t at = first + r;
    const float b = bias && at < rows ? float(toCompute(bias[at])) : 0.0f;
#pragma unroll
    for (int i = 0; i < kImages; ++i) {
      float sum = acc[r][i];
      for (int offset = kWarp / 2; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xFFFFFFFFu, sum, offset);
      if (lane == 0 && at < rows && i < images)
        out[i * outStride + (at - outRow0)] = fusedActivation(sum + b, activation, alpha, beta);
    }
  }
}

// hidden[n][j] = squeeze(W1 · mean(x[n]) + b1): blockIdx.x takes kRowsPerBlock rows j, blockIdx.y
// kImages images, whose means it makes first (from the split sums or the pooled values).
template <class T, int kImages>
__global__ void __launch_bounds__(kThreads)
    squeezeKernel(const SqueezeExcitation p, const MeansSource source, const T* __restrict__ w1,
                  const T* __restrict__ b1, float* __restrict__ hidden) {
  extern __shared__ float means[];  // [kImages][channels]
  const int64_t c = p.channels, n0 = int64_t(blockIdx.y) * kImages;
  const int images = p.batch - n0 < kImages ? int(p.batch - n0) : kImages;
  if (source.splits > 1) {
    // kParts threads a mean, each adding every kParts-th split (loads in flight side by side, not
    // one after another: EfficientNet's first maps split into 49 at batch 1), then a shuffle.
    const int64_t items = int64_t(kImages) * c, groups = blockDim.x / kParts;
    const int part = int(threadIdx.x) % kParts;
    for (int64_t base = 0; base < items; base += groups) {  // the same trips for every thread
      const int64_t i = base + threadIdx.x / kParts;
      float sum = 0.0f;
      if (i < items && i / c < images) {
        const float* at = source.partials + (n0 + i / c) * c + i % c;
#pragma unroll 4
        for (int64_t s = part; s < source.splits; s += kParts) sum += at[s * p.batch * c];
      }
      for (int offset = kParts / 2; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xFFFFFFFFu, sum, offset);
      if (i < items && part == 0) means[i] = sum * source.inverseSpatial;
    }
  } else {
    for (int64_t i = threadIdx.x; i < kImages * c; i += blockDim.x) {
      const int64_t n = n0 + i / c, channel = i % c;
      float mean = 0.0f;  // past the batch: computed, never stored
      if (i / c < images)
        mean = source.splits == 1 ? source.partials[n * c + channel] * source.inverseSpatial
                                  : float(toCompute(static_cast<const T*>(source.pooled)[n * c + channel]));
      means[i] = mean;
    }
  }
  __syncthreads();
  rowsTimesInputs<T, kImages>(w1, b1, means, c, p.hidden, int64_t(blockIdx.x) * kRowsPerBlock, images, p.squeeze,
                              p.squeezeAlpha, p.squeezeBeta, hidden + n0 * p.hidden, p.hidden, 0);
}

// gate[n][o] = excite(W2 · hidden[n] + b2), blocks as squeezeKernel's over the output rows.
template <class T, int kImages>
__global__ void __launch_bounds__(kThreads)
    exciteKernel(const SqueezeExcitation p, const float* __restrict__ hidden, const T* __restrict__ w2,
                 const T* __restrict__ b2, T* __restrict__ gate) {
  extern __shared__ float values[];  // [kImages][hidden] in fp32, then the gate rows [kImages][kRowsPerBlock]
  const int64_t r = p.hidden, n0 = int64_t(blockIdx.y) * kImages, o0 = int64_t(blockIdx.x) * kRowsPerBlock;
  const int images = p.batch - n0 < kImages ? int(p.batch - n0) : kImages;
  for (int64_t i = threadIdx.x; i < kImages * r; i += blockDim.x)
    values[i] = i / r < images ? hidden[n0 * r + i] : 0.0f;
  __syncthreads();
  float* const rows = values + kImages * r;
  rowsTimesInputs<T, kImages>(w2, b2, values, r, p.outChannels, o0, images, p.excite, p.exciteAlpha, p.exciteBeta, rows,
                              kRowsPerBlock, o0);
  __syncthreads();
  for (int i = int(threadIdx.x); i < images * kRowsPerBlock; i += blockDim.x) {  // coalesced stores
    const int64_t o = o0 + i % kRowsPerBlock;
    if (o < p.outChannels) gate[(n0 + i / kRowsPerBlock) * p.outChannels + o] = fromCompute<T>(rows[i]);
  }
}

// The workspace's parts: fp32 split sums (the packed path), or pooled means in T and globalPool's
// own workspace; then the hidden values in fp32.
struct Parts {
  int64_t splits = 0;  // 0: pooled by globalPool
  uint64_t partialBytes = 0, pooledBytes = 0, poolWorkspaceBytes = 0, hiddenBytes = 0;
  uint64_t hiddenAt() const { return partialBytes + pooledBytes + poolWorkspaceBytes; }
  uint64_t total() const { return hiddenAt() + hiddenBytes; }
};

Parts partsOf(const SqueezeExcitation& p, PoolLayout layout, ElementType type, bool alignedX = true) {
  Parts parts;
  if (layout == PoolLayout::kChannelsLast && alignedX)
    parts.splits = globalSumSplits(p.batch, p.channels, p.spatial, type);
  if (parts.splits > 0) {
    parts.partialBytes = alignUp16(uint64_t(parts.splits * p.batch * p.channels) * sizeof(float));
  } else {
    parts.pooledBytes = alignUp16(uint64_t(p.batch * p.channels) * elementBytes(type));
    parts.poolWorkspaceBytes = alignUp16(globalPoolWorkspaceBytes(p.batch, p.channels, p.spatial, layout, type));
  }
  parts.hiddenBytes = alignUp16(uint64_t(p.batch * p.hidden) * sizeof(float));
  return parts;
}

// Images a block takes: a group where there are many (each weight row read once for them) and
// their means fit the shared memory.
int imagesPerBlock(const SqueezeExcitation& p) {
  return p.batch >= kGroupedFrom && (p.channels + p.hidden + kRowsPerBlock) * kGroup <= kSqueezeExcitationMaxValues
             ? kGroup
             : 1;
}

template <class T, int kImages>
cudaError_t launchProducts(const SqueezeExcitation& p, const MeansSource& source, const void* w1, const void* b1,
                           const void* w2, const void* b2, float* hidden, void* gate, cudaStream_t stream) {
  const unsigned groups = unsigned((p.batch + kImages - 1) / kImages);
  const int64_t squeezeShared = int64_t(kImages * p.channels) * int64_t(sizeof(float));
  const int64_t exciteShared = int64_t(kImages * (p.hidden + kRowsPerBlock)) * int64_t(sizeof(float));
  if (const cudaError_t status = allowSharedBytes(squeezeKernel<T, kImages>, squeezeShared); status != cudaSuccess)
    return status;
  if (const cudaError_t status = allowSharedBytes(exciteKernel<T, kImages>, exciteShared); status != cudaSuccess)
    return status;
  const dim3 squeezeGrid(unsigned((p.hidden + kRowsPerBlock - 1) / kRowsPerBlock), groups);
  squeezeKernel<T, kImages><<<squeezeGrid, kThreads, size_t(squeezeShared), stream>>>(
      p, source, static_cast<const T*>(w1), static_cast<const T*>(b1), hidden);
  const dim3 exciteGrid(unsigned((p.outChannels + kRowsPerBlock - 1) / kRowsPerBlock), groups);
  exciteKernel<T, kImages><<<exciteGrid, kThreads, size_t(exciteShared), stream>>>(
      p, hidden, static_cast<const T*>(w2), static_cast<const T*>(b2), static_cast<T*>(gate));
  return launchStatus();
}

}  // namespace

bool squeezeExcitationTakes(const SqueezeExcitation& p) {
  return p.batch >= 0 && p.channels >= 1 && p.spatial >= 1 && p.hidden >= 1 && p.outChannels >= 1 &&
         p.channels + p.hidden <= kSqueezeExcitationMaxValues && p.batch <= int64_t(INT32_MAX);
}

uint64_t squeezeExcitationWorkspaceBytes(const SqueezeExcitation& p, PoolLayout layout, ElementType type) {
  if (!squeezeExcitationTakes(p)) return 0;
  return std::max(partsOf(p, layout, type, true).total(), partsOf(p, layout, type, false).total());
}

cudaError_t squeezeExcitation(const SqueezeExcitation& p, const void* x, const void* w1, const void* b1, const void* w2,
                              const void* b2, void* gate, PoolLayout layout, ElementType type, void* workspace,
                              uint64_t workspaceBytes, cudaStream_t stream) {
  if (!squeezeExcitationTakes(p)) return cudaErrorInvalidValue;
  if (type != ElementType::kFloat32 && type != ElementType::kFloat16 && type != ElementType::kBFloat16)
    return cudaErrorInvalidValue;
  if (p.batch == 0) return cudaSuccess;
  // The packed path reads 16-byte vectors; a misaligned x is pooled first (in no more workspace).
  const Parts parts = partsOf(p, layout, type, reinterpret_cast<uintptr_t>(x) % 16 == 0);
  if (workspaceBytes < parts.total() || !workspace) return cudaErrorInvalidValue;
  char* const base = static_cast<char*>(workspace);
  MeansSource source;
  if (parts.splits > 0) {
    source.partials = reinterpret_cast<float*>(base);
    source.splits = parts.splits;
    source.inverseSpatial = 1.0f / float(p.spatial);
    const cudaError_t status = globalSumPartials(x, reinterpret_cast<float*>(base), p.batch, p.channels, p.spatial,
                                                 parts.splits, type, stream);
    if (status != cudaSuccess) return status;
  } else {
    source.pooled = base;
    const cudaError_t status =
        globalPool(GlobalPoolKind::kAverage, x, base, p.batch, p.channels, p.spatial, 0.0f, layout, type, stream,
                   parts.poolWorkspaceBytes ? base + parts.pooledBytes : nullptr, parts.poolWorkspaceBytes);
    if (status != cudaSuccess) return status;
  }
  float* const hidden = reinterpret_cast<float*>(base + parts.hiddenAt());
  return dispatchFloat(type, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, double>)
      return cudaErrorInvalidValue;
    else if (imagesPerBlock(p) == kGroup)
      return launchProducts<T, kGroup>(p, source, w1, b1, w2, b2, hidden, gate, stream);
    else
      return launchProducts<T, 1>(p, source, w1, b1, w2, b2, hidden, gate, stream);
  });
}

}  // namespace kiln::kernels::cuda
