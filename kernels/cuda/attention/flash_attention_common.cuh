#pragma once
// What the flash-attention kernels share (flash_attention.cu on fp16 / bf16, flash_attention_tf32.cu
// on fp32 storage): the launch arguments, tile copies from global to shared memory in 16-byte
// chunks, the batch-head's offsets, and the online softmax over the scores' accumulators. Both
// kernels' score and output accumulators have mma.sync's fp32 C layout (16 x 8 per accumulator;
// lane 4g + t holds rows g and g + 8 at columns 2t and 2t + 1), so the softmax code is one.
#include "flash_attention.h"

#include "kernels/cuda/common/warp_matrix.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cfloat>
#include <cmath>
#include <cstring>

namespace kiln::kernels::cuda::flash {

constexpr float kLog2e = 1.4426950408889634f;

struct Args {
  FlashAttentionProblem p;
  const void *q, *k, *v;
  const void* mask;
  ElementType maskType;
  void* out;
  int64_t queryTiles;
  int64_t batchHeads;
  float scaleLog2;
  bool vectorQ, vectorK, vectorV, pairedOut;  // 16-byte copies of Q, K, V rows; paired output stores
  // Key splits: split s walks key tiles [s * tilesPerSplit, (s + 1) * tilesPerSplit). With more
  // than one, blocks write `partial` (the splits' outputs [split, head, row, Dv], then their rows'
  // (max, sum) pairs [split, head, row, 2]) instead of out.
  int keySplits;
  int tilesPerSplit;
  float* partial;
};

// Where the partial outputs' row statistics start (floats into Args::partial).
__host__ __device__ __forceinline__ int64_t partialStatsAt(const Args& a) {
  return int64_t(a.keySplits) * a.batchHeads * a.p.queryLength * a.p.valueDim;
}

__host__ __device__ __forceinline__ int64_t smaller(int64_t a, int64_t b) { return a < b ? a : b; }

#if defined(KILN_CUDA_EMULATION)
// The host emulator (scripts/cuda_emulation) runs the warp-wide instructions by their PTX layouts.
__device__ __forceinline__ void copyAsync16(void* shared, const void* global) { std::memcpy(shared, global, 16); }
__device__ __forceinline__ float exp2Approx(float x) { return exp2f(x); }
#else
__device__ __forceinline__ void copyAsync16(void* shared, const void* global) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(sharedAddress(shared)), "l"(global) : "memory");
}
__device__ __forceinline__ float exp2Approx(float x) {  // exp2(-inf) = 0
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}
#endif

__device__ __forceinline__ float maskValueAt(const void* mask, ElementType type, int64_t at) {
  switch (type) {
    case ElementType::kFloat16:
      return __half2float(static_cast<const __half*>(mask)[at]);
    case ElementType::kBFloat16:
      return __bfloat162float(static_cast<const __nv_bfloat16*>(mask)[at]);
    default:
      return static_cast<const float*>(mask)[at];
  }
}

// A mask value in log2 units. A finite mask stays finite (float's lowest, where the product
// overflows): a row masked everywhere by -3.4e38 is then a uniform average, as on the CPU, while
// only -inf hides a key outright.
__device__ __forceinline__ float maskInLog2(float m) {
  const float scaled = m * kLog2e;
  return std::isinf(scaled) && !std::isinf(m) ? copysignf(FLT_MAX, m) : scaled;
}

// Where a block's batch-head starts in each tensor.
struct HeadOffsets {
  int64_t q = 0, k = 0, v = 0, out = 0, mask = 0;
};
__device__ __forceinline__ HeadOffsets headOffsetsOf(const FlashAttentionProblem& p, int64_t head) {
  HeadOffsets at;
  for (int64_t i = p.batchRank - 1, rest = head; i >= 0; --i) {
    const int64_t index = rest % p.batchDims[i];
    rest /= p.batchDims[i];
    at.q += index * p.q.batch[i];
    at.k += index * p.k.batch[i];
    at.v += index * p.v.batch[i];
    at.out += index * p.out.batch[i];
    at.mask += index * p.mask.batch[i];
  }
  return at;
}

// Where a thread works: its warp and lane, an accumulator's row (group, and group + 8) and column
// pair, its block's first query row, batch-head (and its offsets into every tensor), key split and
// that split's key tiles [firstTile, endTile). Blocks go split-fastest, then query tile, then head.
struct BlockPlace {
  int warp, lane, group, pair;
  int64_t q0, head;
  HeadOffsets at;
  int split, firstTile, endTile;
};
__device__ __forceinline__ BlockPlace blockPlaceOf(const Args& a, int rowsPerBlock, int keyTile) {
  BlockPlace place;
  place.warp = int(threadIdx.x) / 32, place.lane = int(threadIdx.x) % 32;
  place.group = place.lane / 4, place.pair = place.lane % 4;
  const int64_t tileOfBlock = int64_t(blockIdx.x) / a.keySplits;
  place.split = int(int64_t(blockIdx.x) % a.keySplits);
  place.q0 = (tileOfBlock % a.queryTiles) * rowsPerBlock;
  place.head = tileOfBlock / a.queryTiles;
  place.at = headOffsetsOf(a.p, place.head);
  const int keyTiles = int((a.p.keyLength + keyTile - 1) / keyTile);
  place.firstTile = place.split * a.tilesPerSplit;
  place.endTile = int(smaller(keyTiles, int64_t(place.firstTile) + a.tilesPerSplit));
  return place;
}

// A kTileRows x kTileColumns tile of E in 16-byte chunks, spread over the block's threads: thread t
// takes chunks t, t + kThreads, ...
template <class E, int kTileRows, int kTileColumns, int kThreads>
struct TileChunks {
  static constexpr int kChunk = 16 / int(sizeof(E));  // elements per chunk
  static constexpr int kPerRow = kTileColumns / kChunk, kTotal = kTileRows * kPerRow;
  static constexpr int kPerThread = (kTotal + kThreads - 1) / kThreads;
  // This thread's i-th chunk: its row and first column; false past the tile.
  __device__ static bool at(int i, int& r, int& c) {
    const int chunk = i * kThreads + int(threadIdx.x);
    r = chunk / kPerRow;
    c = chunk % kPerRow * kChunk;
    return kTotal % kThreads == 0 || chunk < kTotal;
  }
};

// Elements c.. of row r of a global tile (rows `stride` apart, columns contiguous) as one chunk,
// zeros past `rows` and `columns`.
template <class E>
__device__ __forceinline__ uint4 chunkOf(const E* global, int64_t stride, int r, int c, int rows, int columns) {
  constexpr int kChunk = 16 / int(sizeof(E));
  E values[kChunk];
#pragma unroll
  for (int e = 0; e < kChunk; ++e) values[e] = r < rows && c + e < columns ? global[r * stride + c + e] : E(0);
  uint4 chunk;
  std::memcpy(&chunk, values, 16);
  return chunk;
}

// Rows [0, rows) x columns [0, columns) of a global tile into a shared tile of rows kPitch apart,
// zeros elsewhere. Whole chunks go by cp.async where `vectorized` (aligned rows); the rest element
// by element.
template <class E, int kTileRows, int kTileColumns, int kPitch, int kThreads>
__device__ __forceinline__ void loadTile(E* shared, const E* global, int64_t stride, int rows, int columns,
                                         bool vectorized) {
  using Chunks = TileChunks<E, kTileRows, kTileColumns, kThreads>;
#pragma unroll
  for (int i = 0; i < Chunks::kPerThread; ++i) {
    int r, c;
    if (!Chunks::at(i, r, c)) break;
    E* to = shared + r * kPitch + c;
    if (vectorized && r < rows && c + Chunks::kChunk <= columns)
      copyAsync16(to, global + r * stride + c);
    else
      *reinterpret_cast<uint4*>(to) = chunkOf(global, stride, r, c, rows, columns);
  }
}

// loadTile's element path in two halves, for tiles staged through registers.
template <class E, int kTileRows, int kTileColumns, int kThreads>
__device__ __forceinline__ void fetchTile(uint4 (&chunks)[TileChunks<E, kTileRows, kTileColumns, kThreads>::kPerThread],
                                          const E* global, int64_t stride, int rows, int columns) {
  using Chunks = TileChunks<E, kTileRows, kTileColumns, kThreads>;
#pragma unroll
  for (int i = 0; i < Chunks::kPerThread; ++i) {
    int r, c;
    if (Chunks::at(i, r, c)) chunks[i] = chunkOf(global, stride, r, c, rows, columns);
  }
}
template <class E, int kTileRows, int kTileColumns, int kPitch, int kThreads>
__device__ __forceinline__ void storeTile(
    E* shared, const uint4 (&chunks)[TileChunks<E, kTileRows, kTileColumns, kThreads>::kPerThread]) {
  using Chunks = TileChunks<E, kTileRows, kTileColumns, kThreads>;
#pragma unroll
  for (int i = 0; i < Chunks::kPerThread; ++i) {
    int r, c;
    if (Chunks::at(i, r, c)) *reinterpret_cast<uint4*>(shared + r * kPitch + c) = chunks[i];
  }
}

// A warp's scores for keys k0.. (kS accumulators of 8 keys): scaled into log2 units and masked;
// keys past `keys` (the last tile's end) are -inf. `row0` is the warp's row g.
template <int kS>
__device__ __forceinline__ void scaleAndMask(float (&s)[kS][4], const Args& a, int64_t maskAt0, int64_t row0,
                                             int64_t k0, int keys, int pair) {
#pragma unroll
  for (int n = 0; n < kS; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) s[n][e] *= a.scaleLog2;
  if (a.mask || keys < kS * 8) {
#pragma unroll
    for (int n = 0; n < kS; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int key = n * 8 + pair * 2 + (e & 1);
        const int64_t row = row0 + (e >= 2 ? 8 : 0);
        if (key >= keys)
          s[n][e] = -INFINITY;
        else if (a.mask && row < a.p.queryLength)
          s[n][e] +=
              maskInLog2(maskValueAt(a.mask, a.maskType, maskAt0 + row * a.p.mask.row + (k0 + key) * a.p.mask.column));
      }
  }
}

// The online softmax over one tile's scores, rows g (h = 0) and g + 8 (h = 1); a quad of lanes
// shares a row. The scores become exp2(s - running max); the output accumulators and each lane's
// part of the row sums are rescaled to the new maximum.
template <int kS, int kO>
__device__ __forceinline__ void onlineSoftmax(float (&s)[kS][4], float (&o)[kO][4], float (&rowMax)[2],
                                              float (&rowSum)[2]) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float m = rowMax[h];
#pragma unroll
    for (int n = 0; n < kS; ++n) m = fmaxf(m, fmaxf(s[n][2 * h], s[n][2 * h + 1]));
    m = fmaxf(m, __shfl_xor_sync(0xFFFFFFFFu, m, 1));
    m = fmaxf(m, __shfl_xor_sync(0xFFFFFFFFu, m, 2));
    const float base = m == -INFINITY ? 0.0f : m;  // a row hidden so far: every exp2 is 0, not NaN
    const float rescale = exp2Approx(rowMax[h] - base);
    rowMax[h] = m;
    float sum = 0.0f;
#pragma unroll
    for (int n = 0; n < kS; ++n) {
      s[n][2 * h] = exp2Approx(s[n][2 * h] - base);
      s[n][2 * h + 1] = exp2Approx(s[n][2 * h + 1] - base);
      sum += s[n][2 * h] + s[n][2 * h + 1];
    }
    rowSum[h] = rowSum[h] * rescale + sum;
#pragma unroll
    for (int n = 0; n < kO; ++n) {
      o[n][2 * h] *= rescale;
      o[n][2 * h + 1] *= rescale;
    }
  }
}

// out = O / l for the warp's rows g and g + 8 (l = 0, every key hidden or no keys, gives zeros):
// store(row, column, low, high) writes columns c and c + 1 of a row, the second only where
// c + 1 < Dv.
template <int kO, class Store>
__device__ __forceinline__ void finishRows(const float (&o)[kO][4], const float (&rowSum)[2], int64_t row0, int64_t lq,
                                           int dv, int pair, Store store) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float sum = rowSum[h];
    sum += __shfl_xor_sync(0xFFFFFFFFu, sum, 1);
    sum += __shfl_xor_sync(0xFFFFFFFFu, sum, 2);
    const float inverse = sum == 0.0f ? 0.0f : 1.0f / sum;
    const int64_t row = row0 + 8 * h;
    if (row >= lq) continue;
#pragma unroll
    for (int n = 0; n < kO; ++n) {
      const int c = n * 8 + pair * 2;
      if (c >= dv) break;
      store(row, c, o[n][2 * h] * inverse, o[n][2 * h + 1] * inverse);
    }
  }
}

// A block's end: out = O / l (finishRows), or with key splits O, the row maximum and the row sum
// as they are into the partial buffers, for combineKeySplits.
template <int kO, class Store>
__device__ __forceinline__ void finishBlock(const Args& a, const BlockPlace& place, const float (&o)[kO][4],
                                            const float (&rowMax)[2], const float (&rowSum)[2], int64_t row0,
                                            Store store) {
  const int64_t lq = a.p.queryLength;
  const int dv = int(a.p.valueDim);
  if (a.keySplits == 1) {
    finishRows(o, rowSum, row0, lq, dv, place.pair, store);
    return;
  }
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float sum = rowSum[h];
    sum += __shfl_xor_sync(0xFFFFFFFFu, sum, 1);
    sum += __shfl_xor_sync(0xFFFFFFFFu, sum, 2);
    const int64_t row = row0 + 8 * h;
    if (row >= lq) continue;
    const int64_t at = (int64_t(place.split) * a.batchHeads + place.head) * lq + row;
    float* const partial = a.partial + at * dv;
#pragma unroll
    for (int n = 0; n < kO; ++n) {
      const int c = n * 8 + place.pair * 2;
      if (c >= dv) break;
      partial[c] = o[n][2 * h];
      if (c + 1 < dv) partial[c + 1] = o[n][2 * h + 1];
    }
    if (place.pair == 0) {
      float* const stats = a.partial + partialStatsAt(a) + at * 2;
      stats[0] = rowMax[h];
      stats[1] = sum;
    }
  }
}

inline bool aligned(const void* p, uint64_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

// Rows (and batch-heads) of a tensor start at multiples of `elements`.
inline bool rowsAligned(const FlashAttentionProblem& p, const FlashStrides& s, int64_t elements) {
  if (s.row % elements != 0) return false;
  for (int i = 0; i < p.batchRank; ++i)
    if (s.batch[i] % elements != 0) return false;
  return true;
}

// The fp32-storage (TF32) kernels' launch, flash_attention_tf32.cu.
cudaError_t launchTf32(const Args& args, int64_t batchHeads, FlashQueryTile tile, cudaStream_t stream);

// Keys per shared tile: 64, but 32 for the TF32 kernel past head dims of 64 (its fp32 tiles fit
// the static shared memory then).
inline int keyTileOf(const FlashAttentionProblem& p, ElementType type) {
  return type == ElementType::kFloat32 && (p.headDim > 64 || p.valueDim > 64) ? 32 : 64;
}

// The key splits' second kernel: out from the partial buffers, in `type`
// (flash_attention_split.cu).
cudaError_t combineKeySplits(const Args& args, ElementType type, cudaStream_t stream);

}  // namespace kiln::kernels::cuda::flash
