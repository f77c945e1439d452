#include "int4_gemm.h"

#include <kernels/cpu/quant/int4_weight_format.h>
#include <kernels/cuda/common/device_types.cuh>
#include <kernels/cuda/common/launch.cuh>
#include <kernels/cuda/common/warp_matrix.cuh>
#include <kernels/cuda/elementwise/fused_activation.cuh>

#include <algorithm>
#include <cstring>
#include <type_traits>

namespace kiln::kernels::cuda {
namespace {

using Bits = uint16_t;  // an fp16 / bf16 element as stored

constexpr int kTileK = 64;          // K per shared-memory tile: four mma k-steps
constexpr int kPitch = kTileK + 8;  // elements per shared row: 144 bytes, so a warp's fragment reads hit 32 banks
constexpr int kChunkK = 32;         // weights per 16-byte load of one column's packed bytes
// Splitting K aims at this many blocks (two per SM of an H200), each split at least two K-tiles.
constexpr int64_t kTargetBlocks = 264, kMinTilesPerSplit = 2;

// A block of kWarpsM x kWarpsN warps, each computing kTilesM x kTilesN mma tiles (16 x 8).
template <int kWarpsM, int kWarpsN, int kTilesM, int kTilesN>
struct Config {
  static constexpr int kThreads = 32 * kWarpsM * kWarpsN;
  static constexpr int kRows = 16 * kTilesM * kWarpsM, kColumns = 8 * kTilesN * kWarpsN;
  static constexpr int kAChunks = kRows * (kTileK / 8) / kThreads;           // 16-byte loads of A per thread
  static constexpr int kBChunks = kColumns * (kTileK / kChunkK) / kThreads;  // of packed W per thread
  static_assert(kAChunks >= 1 && kAChunks * kThreads == kRows * (kTileK / 8), "A's tile in whole loads per thread");
  static_assert(kBChunks >= 1 && kBChunks * kThreads == kColumns * (kTileK / kChunkK), "W's tile likewise");
};
using SmallM = Config<1, 4, 1, 2>;   // 16 x 64: batch-1 decode and other M <= 16
using MediumM = Config<2, 2, 1, 4>;  // 32 x 64
using LargeM = Config<2, 2, 2, 4>;   // 64 x 64

struct GemmArgs {
  const Bits* a;
  void* y;
  Int4GemmEpilogue epilogue;
  float* partial;  // [splits, m, n] when K is split, else null
  Int4WeightsView w;
  int64_t m, groups, bytesPerColumn;
  int kTiles, tilesPerSplit;
  bool vectorA, vectorW;  // 16-byte loads of A's rows / of W's columns
  bool wholeGroupChunks;  // the group size is a multiple of 32: a 32-weight chunk lies in one group
};

__device__ __forceinline__ uint32_t wordAt(const Bits* p) { return *reinterpret_cast<const uint32_t*>(p); }

// Two weights as the activations' type, low k in the low half (the mma operands' pair order).
template <class T>
__device__ __forceinline__ uint32_t pairBits(float low, float high) {
  const T l = fromCompute<T>(low), h = fromCompute<T>(high);
  Bits lb, hb;
  std::memcpy(&lb, &l, 2);
  std::memcpy(&hb, &h, 2);
  return uint32_t(lb) | uint32_t(hb) << 16;
}

// One K-tile's global data in registers: A's 16-byte chunks, W's packed chunks with their group's
// scale and zero point (when a chunk lies in one group).
template <class C>
struct Staged {
  uint4 a[C::kAChunks];
  uint4 w[C::kBChunks];
  float scale[C::kBChunks];
  int zero[C::kBChunks];
};

// Chunk c of A's tile: row c / 8, elements (c % 8) * 8.. of the tile's K; zeros outside A.
template <class C>
__device__ __forceinline__ void loadTile(const GemmArgs& p, int64_t m0, int64_t n0, int64_t k0, Staged<C>& s) {
  const int64_t K = p.w.k;
#pragma unroll
  for (int i = 0; i < C::kAChunks; ++i) {
    const int c = int(threadIdx.x) + i * C::kThreads;
    const int64_t row = m0 + c / 8, k = k0 + (c % 8) * 8;
    uint4 v = make_uint4(0, 0, 0, 0);
    if (row < p.m && k < K) {
      const Bits* src = p.a + row * K + k;
      if (p.vectorA) {  // K % 8 == 0: the chunk is whole
        v = *reinterpret_cast<const uint4*>(src);
      } else {
        Bits e[8];
#pragma unroll
        for (int j = 0; j < 8; ++j) e[j] = k + j < K ? src[j] : Bits(0);
        std::memcpy(&v, e, 16);
      }
    }
    s.a[i] = v;
  }
  // Chunk c of W's tile: column c / 2, weights (c % 2) * 32.. of the tile's K, bytes k / 2.. of the
  // column (group g's byte j holds k = g * G + 2j, so a column's bytes run along K for any even G).
#pragma unroll
  for (int i = 0; i < C::kBChunks; ++i) {
    const int c = int(threadIdx.x) + i * C::kThreads;
    const int64_t n = n0 + c / 2, kb = k0 + (c % 2) * kChunkK;
    uint4 v = make_uint4(0, 0, 0, 0);
    float scale = 0;
    int zero = 0;
    if (n < p.w.n && kb < K) {
      const uint8_t* src = p.w.packed + n * p.bytesPerColumn + kb / 2;
      if (p.vectorW && kb + kChunkK <= K) {
        v = *reinterpret_cast<const uint4*>(src);
      } else {
        uint8_t bytes[16];
#pragma unroll
        for (int j = 0; j < 16; ++j) bytes[j] = kb + 2 * j < K ? src[j] : uint8_t(0);
        std::memcpy(&v, bytes, 16);
      }
      if (p.wholeGroupChunks) {
        const int64_t g = n * p.groups + kb / p.w.groupSize;
        scale = p.w.scales[g];
        zero = p.w.zeros ? int(p.w.zeros[g]) : 0;
      }
    }
    s.w[i] = v;
    s.scale[i] = scale;
    s.zero[i] = zero;
  }
}

// The staged tile into shared memory, W dequantized: w = scale * float(q - zero), rounded once
// into T; weights past K are zeros (their zero point would make them non-zero).
template <class T, class C>
__device__ __forceinline__ void storeTile(const GemmArgs& p, int64_t n0, int64_t k0, const Staged<C>& s,
                                          Bits (*as)[kPitch], Bits (*ws)[kPitch]) {
#pragma unroll
  for (int i = 0; i < C::kAChunks; ++i) {
    const int c = int(threadIdx.x) + i * C::kThreads;
    *reinterpret_cast<uint4*>(&as[c / 8][(c % 8) * 8]) = s.a[i];
  }
  const int64_t K = p.w.k;
#pragma unroll
  for (int i = 0; i < C::kBChunks; ++i) {
    const int c = int(threadIdx.x) + i * C::kThreads;
    const int64_t n = n0 + c / 2, kb = k0 + (c % 2) * kChunkK;
    uint32_t words[16];
    if (n >= p.w.n || kb >= K) {
#pragma unroll
      for (int j = 0; j < 16; ++j) words[j] = 0;
    } else {
      uint8_t bytes[16];
      std::memcpy(bytes, &s.w[i], 16);
      float scale = s.scale[i];
      int zero = s.zero[i];
      int64_t group = 0, groupEnd = K;  // the group of k and where it ends (odd group sizes only)
      if (!p.wholeGroupChunks) {
        group = kb / p.w.groupSize;
        groupEnd = (group + 1) * p.w.groupSize;
        scale = p.w.scales[n * p.groups + group];
        zero = p.w.zeros ? int(p.w.zeros[n * p.groups + group]) : 0;
      }
#pragma unroll
      for (int j = 0; j < 16; ++j) {
        const int64_t k = kb + 2 * j;
        if (!p.wholeGroupChunks && k < K && k >= groupEnd) {  // G is even: k and k + 1 share a group
          ++group;
          groupEnd += p.w.groupSize;
          scale = p.w.scales[n * p.groups + group];
          zero = p.w.zeros ? int(p.w.zeros[n * p.groups + group]) : 0;
        }
        const float low = k < K ? dequantizeInt4(unpackInt4(bytes[j], 0), zero, scale) : 0.0f;
        const float high = k + 1 < K ? dequantizeInt4(unpackInt4(bytes[j], 1), zero, scale) : 0.0f;
        words[j] = pairBits<T>(low, high);
      }
    }
    uint4* dst = reinterpret_cast<uint4*>(&ws[c / 2][(c % 2) * kChunkK]);
#pragma unroll
    for (int q = 0; q < 4; ++q) dst[q] = make_uint4(words[4 * q], words[4 * q + 1], words[4 * q + 2], words[4 * q + 3]);
  }
}

// The epilogue on one fp32 sum, then the one rounding into T.
template <class T>
__device__ __forceinline__ T finish(const GemmArgs& p, float v, int64_t row, int64_t column) {
  const Int4GemmEpilogue& e = p.epilogue;
  if (e.bias) v += e.bias[column];
  const float r = e.residual ? toCompute(static_cast<const T*>(e.residual)[row * p.w.n + column]) : 0.0f;
  if (e.residualBeforeActivation) v += r;
  v = fusedActivation(v, e.activation, e.alpha, e.beta);
  if (!e.residualBeforeActivation) v += r;
  return fromCompute<T>(v);
}

// Block (x, y, z): rows x * kRows.., columns y * kColumns.., K-tiles of split z. Each tile is
// staged in registers while the previous one is multiplied.
template <class T, int kWarpsM, int kWarpsN, int kTilesM, int kTilesN>
__global__ void __launch_bounds__(32 * kWarpsM * kWarpsN) int4GemmKernel(const __grid_constant__ GemmArgs p) {
#if (defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800) || defined(KILN_CUDA_EMULATION)
  using C = Config<kWarpsM, kWarpsN, kTilesM, kTilesN>;
  __shared__ __align__(16) Bits as[C::kRows][kPitch];
  __shared__ __align__(16) Bits ws[C::kColumns][kPitch];
  const int64_t m0 = int64_t(blockIdx.x) * C::kRows, n0 = int64_t(blockIdx.y) * C::kColumns;
  const int firstTile = int(blockIdx.z) * p.tilesPerSplit,
            endTile = firstTile + p.tilesPerSplit < p.kTiles ? firstTile + p.tilesPerSplit : p.kTiles;
  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32, g = lane / 4, t = lane % 4;
  const int warpRow = (warp % kWarpsM) * 16 * kTilesM, warpColumn = (warp / kWarpsM) * 8 * kTilesN;
  float acc[kTilesM][kTilesN][4];
#pragma unroll
  for (int tm = 0; tm < kTilesM; ++tm)
#pragma unroll
    for (int tn = 0; tn < kTilesN; ++tn)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[tm][tn][e] = 0.0f;

  Staged<C> staged;
  if (firstTile < endTile) loadTile<C>(p, m0, n0, int64_t(firstTile) * kTileK, staged);
  for (int tile = firstTile; tile < endTile; ++tile) {
    storeTile<T, C>(p, n0, int64_t(tile) * kTileK, staged, as, ws);
    __syncthreads();
    if (tile + 1 < endTile) loadTile<C>(p, m0, n0, int64_t(tile + 1) * kTileK, staged);  // in flight meanwhile
#pragma unroll
    for (int kk = 0; kk < kTileK; kk += 16) {
      uint32_t af[kTilesM][4];
#pragma unroll
      for (int tm = 0; tm < kTilesM; ++tm) {
        const int r = warpRow + tm * 16 + g;
        af[tm][0] = wordAt(&as[r][kk + 2 * t]);
        af[tm][1] = wordAt(&as[r + 8][kk + 2 * t]);
        af[tm][2] = wordAt(&as[r][kk + 2 * t + 8]);
        af[tm][3] = wordAt(&as[r + 8][kk + 2 * t + 8]);
      }
#pragma unroll
      for (int tn = 0; tn < kTilesN; ++tn) {
        const Bits* column = ws[warpColumn + tn * 8 + g];
        const uint32_t b0 = wordAt(column + kk + 2 * t), b1 = wordAt(column + kk + 2 * t + 8);
#pragma unroll
        for (int tm = 0; tm < kTilesM; ++tm) mma16816<T>(acc[tm][tn], af[tm], b0, b1);
      }
    }
    __syncthreads();
  }

  const int64_t N = p.w.n;
#pragma unroll
  for (int tm = 0; tm < kTilesM; ++tm)
#pragma unroll
    for (int tn = 0; tn < kTilesN; ++tn)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int64_t row = m0 + warpRow + tm * 16 + g + (e >= 2 ? 8 : 0);
        const int64_t column = n0 + warpColumn + tn * 8 + 2 * t + (e & 1);
        if (row >= p.m || column >= N) continue;
        if (p.partial) {
          p.partial[(int64_t(blockIdx.z) * p.m + row) * N + column] = acc[tm][tn][e];
        } else {
          static_cast<T*>(p.y)[row * N + column] = finish<T>(p, acc[tm][tn][e], row, column);
        }
      }
#endif
}

// y = epilogue(Σ of the splits' sums): a block row of columns per output row (blockIdx.y).
template <class T>
__global__ void sumSplitsKernel(const __grid_constant__ GemmArgs p, int splits) {
  const int64_t row = blockIdx.y, n = p.w.n;
  for (int64_t column = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; column < n;
       column += int64_t(gridDim.x) * blockDim.x) {
    float sum = 0;
    for (int z = 0; z < splits; ++z) sum += p.partial[(z * p.m + row) * n + column];
    static_cast<T*>(p.y)[row * n + column] = finish<T>(p, sum, row, column);
  }
}

// The block shape for M rows: the smallest that covers them (an mma tile is 16 rows).
int rowsPerBlock(int64_t m) { return m <= 16 ? SmallM::kRows : m <= 32 ? MediumM::kRows : LargeM::kRows; }

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

int64_t int4GemmSplits(int64_t m, int64_t n, int64_t k) {
  if (m <= 0 || n <= 0 || k <= 0) return 1;
  const int64_t blocks = ceilDiv(m, rowsPerBlock(m)) * ceilDiv(n, LargeM::kColumns), tiles = ceilDiv(k, kTileK);
  const int64_t wanted = std::min(ceilDiv(kTargetBlocks, blocks), std::max<int64_t>(1, tiles / kMinTilesPerSplit));
  if (wanted <= 1) return 1;
  return ceilDiv(tiles, ceilDiv(tiles, wanted));  // no split left empty
}

uint64_t int4GemmWorkspaceBytes(int64_t m, int64_t n, int64_t k) {
  const int64_t splits = int4GemmSplits(m, n, k);
  return splits > 1 ? uint64_t(splits * m * n) * sizeof(float) : 0;
}

cudaError_t int4Gemm(const void* a, int64_t m, const Int4WeightsView& w, const Int4GemmEpilogue& epilogue, void* y,
                     ElementType type, void* workspace, uint64_t workspaceBytes, cudaStream_t stream) {
  if (type != ElementType::kFloat16 && type != ElementType::kBFloat16) return cudaErrorInvalidValue;
  if (w.groupSize <= 0 || w.groupSize % 2 != 0 || w.k < 0 || w.n < 0 || m < 0) return cudaErrorInvalidValue;
  if (m == 0 || w.n == 0) return cudaSuccess;
  const int64_t splits = w.k == 0 ? 1 : int4GemmSplits(m, w.n, w.k);
  if (splits > 1 && (workspaceBytes < int4GemmWorkspaceBytes(m, w.n, w.k) || !workspace)) return cudaErrorInvalidValue;
  const int rows = rowsPerBlock(m);
  const int64_t rowBlocks = ceilDiv(m, rows), columnBlocks = ceilDiv(w.n, LargeM::kColumns);
  if (rowBlocks > int64_t(INT32_MAX) || columnBlocks > 65535 || ceilDiv(w.k, kTileK) > int64_t(INT32_MAX))
    return cudaErrorInvalidValue;
  GemmArgs p{};
  p.a = static_cast<const Bits*>(a);
  p.y = y;
  p.epilogue = epilogue;
  p.partial = splits > 1 ? static_cast<float*>(workspace) : nullptr;
  p.w = w;
  p.m = m;
  p.groups = int4GroupCount(w.k, w.groupSize);
  p.bytesPerColumn = p.groups * (w.groupSize / 2);
  p.kTiles = int(ceilDiv(w.k, kTileK));
  p.tilesPerSplit = int(ceilDiv(p.kTiles, splits));
  p.vectorA = w.k % 8 == 0 && reinterpret_cast<uintptr_t>(a) % 16 == 0;
  p.vectorW = p.bytesPerColumn % 16 == 0 && reinterpret_cast<uintptr_t>(w.packed) % 16 == 0;
  p.wholeGroupChunks = w.groupSize % kChunkK == 0;
  const dim3 grid{unsigned(rowBlocks), unsigned(columnBlocks), unsigned(splits)};
  auto launch = [&](auto tag) -> cudaError_t {
    using T = decltype(tag);
    if (rows == SmallM::kRows)
      int4GemmKernel<T, 1, 4, 1, 2><<<grid, SmallM::kThreads, 0, stream>>>(p);
    else if (rows == MediumM::kRows)
      int4GemmKernel<T, 2, 2, 1, 4><<<grid, MediumM::kThreads, 0, stream>>>(p);
    else
      int4GemmKernel<T, 2, 2, 2, 4><<<grid, LargeM::kThreads, 0, stream>>>(p);
    if (const cudaError_t status = launchStatus(); status != cudaSuccess || splits == 1) return status;
    const dim3 sumGrid{unsigned(std::min<int64_t>(ceilDiv(w.n, kThreadsPerBlock), 1024)), unsigned(m)};
    sumSplitsKernel<T><<<sumGrid, kThreadsPerBlock, 0, stream>>>(p, int(splits));
    return launchStatus();
  };
  return type == ElementType::kFloat16 ? launch(__half{}) : launch(__nv_bfloat16{});
}

}  // namespace kiln::kernels::cuda
