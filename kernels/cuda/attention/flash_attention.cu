// FlashAttention-2's forward pass on mma.sync (m16n8k16, fp32 accumulation).
//
// A block of 4 or 8 warps takes one batch-head and 64 or 128 query rows, a warp 16 of them. Q's
// fragments stay in registers; the keys go by in tiles of 64 rows of K and V in shared memory,
// copied with cp.async: V's tile lands while the warps compute S = Q · Kᵀ, the next K tile while
// they compute O += P · V. S never leaves the registers: the accumulator layout of S·(16×8) is the
// operand layout of P·(16×16) two tiles at a time, so P goes to the second product as it is, in
// the storage type. The softmax runs online in log2 units (exp2 with log2(e) folded into the
// scale): per row a running maximum m and sum l; each tile rescales O and l by exp2(m_old - m_new).
// Shared rows carry 8 halves of padding so that ldmatrix's eight 16-byte rows fall in distinct
// banks. Head dims are padded with zeros to the kernel's (32, 64, 96 or 128), keys past Lk are
// -inf, rows past Lq are computed and not written.
#include "flash_attention.h"

#include "kernels/cuda/common/half_bits.cuh"
#include "kernels/cuda/common/launch.cuh"
#include "kernels/cuda/common/warp_matrix.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <type_traits>

namespace kiln::kernels::cuda {
namespace {

using Bits = uint16_t;  // tiles move as bits, whatever the 16-bit type

constexpr int kKeyTile = 64;  // keys per shared tile
constexpr int kPad = 8;       // halves of padding per shared row
constexpr float kLog2e = 1.4426950408889634f;

__host__ __device__ __forceinline__ int64_t smaller(int64_t a, int64_t b) { return a < b ? a : b; }

// How K's tiles arrive: K as [Lk, D] (keys are its rows), or transposed [D, Lk] (keys are its
// columns) with rows that cp.async can copy, or with rows off 16-byte boundaries (Lk % 8 != 0),
// whose elements go through registers a tile ahead, the loads in flight while the warps compute S
// and its softmax.
enum class KeyLayout { kRows, kColumns, kColumnsStaged };

// The shared-memory layout of one kernel: Q's tile first (moved to registers before the loop),
// then the same memory holds K's tile followed by V's.
template <int kD, int kWarps, bool kKeyTransposed>
struct FlashLayout {
  static constexpr int kRows = 16 * kWarps;
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int kPitch = kD + kPad;          // rows of Q, V and K as [key][d]
  static constexpr int kKeyPitch = kKeyTile + kPad;  // rows of K as [d][key]
  static constexpr int kKeyElements = kKeyTransposed ? kD * kKeyPitch : kKeyTile * kPitch;
  static constexpr int kValueElements = kKeyTile * kPitch;
  static constexpr int kQueryElements = kRows * kPitch;
  static constexpr int kElements =
      kQueryElements > kKeyElements + kValueElements ? kQueryElements : kKeyElements + kValueElements;
};

struct FlashArgs {
  FlashAttentionProblem p;
  const Bits *q, *k, *v;
  const void* mask;
  ElementType maskType;
  Bits* out;
  int64_t queryTiles;
  float scaleLog2;
  bool vectorQ, vectorK, vectorV, pairedOut;  // 16-byte copies of Q, K, V rows; 4-byte output pairs
};

#if defined(KILN_CUDA_EMULATION)
// The host emulator (scripts/cuda_emulation) runs the warp-wide instructions by their PTX layouts.
__device__ __forceinline__ void copyAsync16(void* shared, const void* global) { std::memcpy(shared, global, 16); }
template <class T>
__device__ __forceinline__ void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  kiln_emu::mma16816(c, a, b0, b1, !std::is_same_v<T, __half>);
}
__device__ __forceinline__ float exp2Approx(float x) { return exp2f(x); }
#else
__device__ __forceinline__ void copyAsync16(void* shared, const void* global) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(sharedAddress(shared)), "l"(global) : "memory");
}

// c (16x8, fp32) += a (16x16, row-major) · b (16x8, column-major). Lane l = 4g + t holds of a the
// pairs (row g, columns 2t, 2t+1), (g + 8, 2t), (g, 2t + 8), (g + 8, 2t + 8); of b the pairs
// (rows 2t, 2t + 1 | 2t + 8, 2t + 9; column g); of c row g then g + 8, columns 2t and 2t + 1.
template <class T>
__device__ __forceinline__ void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  if constexpr (std::is_same_v<T, __half>)
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ float exp2Approx(float x) {  // exp2(-inf) = 0
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}
#endif

__device__ __forceinline__ float maskAt(const void* mask, ElementType type, int64_t at) {
  switch (type) {
    case ElementType::kFloat16: return __half2float(static_cast<const __half*>(mask)[at]);
    case ElementType::kBFloat16: return __bfloat162float(static_cast<const __nv_bfloat16*>(mask)[at]);
    default: return static_cast<const float*>(mask)[at];
  }
}

// A mask value in log2 units. A finite mask stays finite (float's lowest, where the product
// overflows): a row masked everywhere by -3.4e38 is then a uniform average, as on the CPU, while
// only -inf hides a key outright.
__device__ __forceinline__ float maskInLog2(float m) {
  const float scaled = m * kLog2e;
  return std::isinf(scaled) && !std::isinf(m) ? copysignf(FLT_MAX, m) : scaled;
}

// A kTileRows x kTileColumns tile in 16-byte chunks (8 elements), spread over the block's threads:
// thread t takes chunks t, t + kThreads, ...
template <int kTileRows, int kTileColumns, int kThreads>
struct TileChunks {
  static constexpr int kPerRow = kTileColumns / 8, kTotal = kTileRows * kPerRow;
  static constexpr int kPerThread = (kTotal + kThreads - 1) / kThreads;
  // This thread's i-th chunk: its row and first column; false past the tile.
  __device__ static bool at(int i, int& r, int& c) {
    const int chunk = i * kThreads + int(threadIdx.x);
    r = chunk / kPerRow;
    c = chunk % kPerRow * 8;
    return kTotal % kThreads == 0 || chunk < kTotal;
  }
};

// Elements c..c+7 of row r of a global tile (rows `stride` apart, columns contiguous), zeros past
// `rows` and `columns`.
__device__ __forceinline__ uint4 chunkOf(const Bits* global, int64_t stride, int r, int c, int rows, int columns) {
  uint32_t words[4];
#pragma unroll
  for (int e = 0; e < 8; e += 2) {
    const Bits lo = r < rows && c + e < columns ? global[r * stride + c + e] : Bits(0);
    const Bits hi = r < rows && c + e + 1 < columns ? global[r * stride + c + e + 1] : Bits(0);
    words[e / 2] = uint32_t(lo) | uint32_t(hi) << 16;
  }
  return make_uint4(words[0], words[1], words[2], words[3]);
}

// Rows [0, rows) x columns [0, columns) of a global tile into a shared tile of rows kPitch apart,
// zeros elsewhere. Whole chunks go by cp.async where `vectorized` (aligned rows); the rest element
// by element.
template <int kTileRows, int kTileColumns, int kPitch, int kThreads>
__device__ __forceinline__ void loadTile(Bits* shared, const Bits* global, int64_t stride, int rows, int columns,
                                         bool vectorized) {
  using Chunks = TileChunks<kTileRows, kTileColumns, kThreads>;
#pragma unroll
  for (int i = 0; i < Chunks::kPerThread; ++i) {
    int r, c;
    if (!Chunks::at(i, r, c)) break;
    Bits* to = shared + r * kPitch + c;
    if (vectorized && r < rows && c + 8 <= columns) copyAsync16(to, global + r * stride + c);
    else *reinterpret_cast<uint4*>(to) = chunkOf(global, stride, r, c, rows, columns);
  }
}

// loadTile's element path in two halves, for tiles staged through registers.
template <int kTileRows, int kTileColumns, int kThreads>
__device__ __forceinline__ void fetchTile(uint4 (&chunks)[TileChunks<kTileRows, kTileColumns, kThreads>::kPerThread],
                                          const Bits* global, int64_t stride, int rows, int columns) {
  using Chunks = TileChunks<kTileRows, kTileColumns, kThreads>;
#pragma unroll
  for (int i = 0; i < Chunks::kPerThread; ++i) {
    int r, c;
    if (Chunks::at(i, r, c)) chunks[i] = chunkOf(global, stride, r, c, rows, columns);
  }
}
template <int kTileRows, int kTileColumns, int kPitch, int kThreads>
__device__ __forceinline__ void storeTile(Bits* shared,
                                          const uint4 (&chunks)[TileChunks<kTileRows, kTileColumns, kThreads>::kPerThread]) {
  using Chunks = TileChunks<kTileRows, kTileColumns, kThreads>;
#pragma unroll
  for (int i = 0; i < Chunks::kPerThread; ++i) {
    int r, c;
    if (Chunks::at(i, r, c)) *reinterpret_cast<uint4*>(shared + r * kPitch + c) = chunks[i];
  }
}

template <class T, int kD, int kWarps, KeyLayout kKeys>
__global__ void __launch_bounds__(32 * kWarps) flashAttentionKernel(const FlashArgs a) {
#if (defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800) || defined(KILN_CUDA_EMULATION)
  constexpr bool kKeyTransposed = kKeys != KeyLayout::kRows, kStaged = kKeys == KeyLayout::kColumnsStaged;
  using L = FlashLayout<kD, kWarps, kKeyTransposed>;
  using StagedKeys = TileChunks<kD, kKeyTile, L::kThreads>;
  constexpr int kKeyTiles16 = kKeyTile / 16, kD16 = kD / 16;
  __shared__ __align__(16) Bits shared[L::kElements];
  Bits* const queryTile = shared;
  Bits* const keyTile = shared;
  Bits* const valueTile = shared + L::kKeyElements;
  const FlashAttentionProblem& p = a.p;
  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
  const int group = lane / 4, pair = lane % 4;  // an accumulator's row (and row + 8), its column pair

  // This block's batch-head, as offsets into every tensor, and its first query row.
  const int64_t head = int64_t(blockIdx.x) / a.queryTiles;
  const int64_t q0 = (int64_t(blockIdx.x) % a.queryTiles) * L::kRows;
  int64_t qAt = 0, kAt = 0, vAt = 0, outAt = 0, maskAt0 = 0;
  for (int64_t i = p.batchRank - 1, rest = head; i >= 0; --i) {
    const int64_t index = rest % p.batchDims[i];
    rest /= p.batchDims[i];
    qAt += index * p.q.batch[i];
    kAt += index * p.k.batch[i];
    vAt += index * p.v.batch[i];
    outAt += index * p.out.batch[i];
    maskAt0 += index * p.mask.batch[i];
  }
  const int d = int(p.headDim), dv = int(p.valueDim);
  const int64_t lq = p.queryLength, lk = p.keyLength;

  // Q's fragments: warp w's rows 16w..16w+15, each 16 head dims a 16x16 operand.
  loadTile<L::kRows, kD, L::kPitch, L::kThreads>(queryTile, a.q + qAt + q0 * p.q.row, p.q.row,
                                                 int(smaller(lq - q0, L::kRows)), d, a.vectorQ);
  commitCopies();
  waitCopies<0>();
  __syncthreads();
  uint32_t qf[kD16][4];
#pragma unroll
  for (int kk = 0; kk < kD16; ++kk)
    loadMatrices(qf[kk], queryTile + (warp * 16 + lane % 16) * L::kPitch + kk * 16 + lane / 16 * 8);
  __syncthreads();  // the memory is K's and V's from here

  // K's tile of keys k0.. (keys of them): copied, or staged (fetched into `staged`, stored later).
  uint4 staged[kStaged ? StagedKeys::kPerThread : 1];
  auto loadKeys = [&](int64_t k0, int keys) {
    if constexpr (kStaged)
      fetchTile<kD, kKeyTile, L::kThreads>(staged, a.k + kAt + k0, p.k.row, d, keys);
    else if constexpr (kKeyTransposed)
      loadTile<kD, kKeyTile, L::kKeyPitch, L::kThreads>(keyTile, a.k + kAt + k0, p.k.row, d, keys, a.vectorK);
    else
      loadTile<kKeyTile, kD, L::kPitch, L::kThreads>(keyTile, a.k + kAt + k0 * p.k.row, p.k.row, keys, d, a.vectorK);
  };
  auto storeStagedKeys = [&] {
    if constexpr (kStaged) storeTile<kD, kKeyTile, L::kKeyPitch, L::kThreads>(keyTile, staged);
  };
  auto nextKeys = [&](int64_t k0) { return int(smaller(lk - k0, kKeyTile)); };

  float o[2 * kD16][4];
#pragma unroll
  for (int n = 0; n < 2 * kD16; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
  float rowMax[2] = {-INFINITY, -INFINITY}, rowSum[2] = {0.0f, 0.0f};  // rows group and group + 8 (sums per lane)
  const int64_t row0 = q0 + warp * 16 + group;
  const int keyTiles = int((lk + kKeyTile - 1) / kKeyTile);
  if (keyTiles > 0) {
    loadKeys(0, nextKeys(0));
    storeStagedKeys();
    commitCopies();
  }
  for (int tile = 0; tile < keyTiles; ++tile) {
    const int64_t k0 = int64_t(tile) * kKeyTile;
    const int keys = nextKeys(k0);
    __syncthreads();  // every warp is done with the previous V tile
    loadTile<kKeyTile, kD, L::kPitch, L::kThreads>(valueTile, a.v + vAt + k0 * p.v.row, p.v.row, keys, dv, a.vectorV);
    commitCopies();
    waitCopies<1>();  // this tile's K (V's may still be on its way)
    __syncthreads();
    if constexpr (kStaged)  // the next tile's loads are in flight while S and its softmax are computed
      if (tile + 1 < keyTiles) loadKeys(k0 + kKeyTile, nextKeys(k0 + kKeyTile));

    // S = Q · Kᵀ: 8 accumulators of 16x8, keys k0 + 8n .. k0 + 8n + 7.
    float s[2 * kKeyTiles16][4];
#pragma unroll
    for (int n = 0; n < 2 * kKeyTiles16; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < kD16; ++kk) {
      if (kk * 16 >= d) break;  // zero padding
#pragma unroll
      for (int np = 0; np < kKeyTiles16; ++np) {
        uint32_t b[4];
        if constexpr (kKeyTransposed)
          loadMatricesTransposed(
              b, keyTile + (kk * 16 + lane % 8 + lane / 8 % 2 * 8) * L::kKeyPitch + np * 16 + lane / 16 * 8);
        else
          loadMatrices(b, keyTile + (np * 16 + lane % 8 + lane / 16 * 8) * L::kPitch + kk * 16 + lane / 8 % 2 * 8);
        mma<T>(s[2 * np], qf[kk], b[0], b[1]);
        mma<T>(s[2 * np + 1], qf[kk], b[2], b[3]);
      }
    }

    // Scale and mask in log2 units; keys past Lk are -inf (only the last tile has any).
#pragma unroll
    for (int n = 0; n < 2 * kKeyTiles16; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[n][e] *= a.scaleLog2;
    if (a.mask || keys < kKeyTile) {
#pragma unroll
      for (int n = 0; n < 2 * kKeyTiles16; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int key = n * 8 + pair * 2 + (e & 1);
          const int64_t row = row0 + (e >= 2 ? 8 : 0);
          if (key >= keys) s[n][e] = -INFINITY;
          else if (a.mask && row < lq)
            s[n][e] += maskInLog2(maskAt(a.mask, a.maskType, maskAt0 + row * p.mask.row + (k0 + key) * p.mask.column));
        }
    }

    // Online softmax, rows group (h = 0) and group + 8 (h = 1); a quad of lanes shares a row.
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float m = rowMax[h];
#pragma unroll
      for (int n = 0; n < 2 * kKeyTiles16; ++n) m = fmaxf(m, fmaxf(s[n][2 * h], s[n][2 * h + 1]));
      m = fmaxf(m, __shfl_xor_sync(0xFFFFFFFFu, m, 1));
      m = fmaxf(m, __shfl_xor_sync(0xFFFFFFFFu, m, 2));
      const float base = m == -INFINITY ? 0.0f : m;  // a row hidden so far: every exp2 is 0, not NaN
      const float rescale = exp2Approx(rowMax[h] - base);
      rowMax[h] = m;
      float sum = 0.0f;
#pragma unroll
      for (int n = 0; n < 2 * kKeyTiles16; ++n) {
        s[n][2 * h] = exp2Approx(s[n][2 * h] - base);
        s[n][2 * h + 1] = exp2Approx(s[n][2 * h + 1] - base);
        sum += s[n][2 * h] + s[n][2 * h + 1];
      }
      rowSum[h] = rowSum[h] * rescale + sum;
#pragma unroll
      for (int n = 0; n < 2 * kD16; ++n) {
        o[n][2 * h] *= rescale;
        o[n][2 * h + 1] *= rescale;
      }
    }

    waitCopies<0>();  // this tile's V
    __syncthreads();  // and every warp is done with K's tile: the next one may come
    if (tile + 1 < keyTiles) {
      if constexpr (kStaged) storeStagedKeys();
      else loadKeys(k0 + kKeyTile, nextKeys(k0 + kKeyTile));
      commitCopies();
    }

    // O += P · V, P's operand made of two S accumulators per 16 keys.
#pragma unroll
    for (int kk = 0; kk < kKeyTiles16; ++kk) {
      const uint32_t pa[4] = {packPair<T>(s[2 * kk][0], s[2 * kk][1]), packPair<T>(s[2 * kk][2], s[2 * kk][3]),
                              packPair<T>(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                              packPair<T>(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
      for (int np = 0; np < kD16; ++np) {
        if (np * 16 >= dv) break;  // zero padding
        uint32_t b[4];
        loadMatricesTransposed(b, valueTile + (kk * 16 + lane % 8 + lane / 8 % 2 * 8) * L::kPitch + np * 16 + lane / 16 * 8);
        mma<T>(o[2 * np], pa, b[0], b[1]);
        mma<T>(o[2 * np + 1], pa, b[2], b[3]);
      }
    }
  }

  // out = O / l; l = 0 (every key hidden, or no keys) gives zeros.
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float sum = rowSum[h];
    sum += __shfl_xor_sync(0xFFFFFFFFu, sum, 1);
    sum += __shfl_xor_sync(0xFFFFFFFFu, sum, 2);
    const float inverse = sum == 0.0f ? 0.0f : 1.0f / sum;
    const int64_t row = row0 + 8 * h;
    if (row >= lq) continue;
    Bits* to = a.out + outAt + row * p.out.row;
#pragma unroll
    for (int n = 0; n < 2 * kD16; ++n) {
      const int c = n * 8 + pair * 2;
      if (c >= dv) break;
      const float lo = o[n][2 * h] * inverse, hi = o[n][2 * h + 1] * inverse;
      if (a.pairedOut && c + 1 < dv) {
        *reinterpret_cast<uint32_t*>(to + c) = packPair<T>(lo, hi);
      } else {
        to[c] = bitsOf<T>(lo);
        if (c + 1 < dv) to[c + 1] = bitsOf<T>(hi);
      }
    }
  }
#else
  __trap();  // built for an architecture without mma.sync m16n8k16; the host side refuses such devices
#endif
}

bool aligned(const void* p, uint64_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

// Rows (and batch-heads) of a tensor start at multiples of `elements`.
bool rowsAligned(const FlashAttentionProblem& p, const FlashStrides& s, int64_t elements) {
  if (s.row % elements != 0) return false;
  for (int i = 0; i < p.batchRank; ++i)
    if (s.batch[i] % elements != 0) return false;
  return true;
}

template <class T, int kD, int kWarps>
cudaError_t launchTiled(const FlashArgs& args, int64_t batchHeads, cudaStream_t stream) {
  const dim3 grid(unsigned(batchHeads * args.queryTiles)), block(32 * kWarps);
  if (!args.p.keyTransposed) flashAttentionKernel<T, kD, kWarps, KeyLayout::kRows><<<grid, block, 0, stream>>>(args);
  else if (args.vectorK) flashAttentionKernel<T, kD, kWarps, KeyLayout::kColumns><<<grid, block, 0, stream>>>(args);
  else flashAttentionKernel<T, kD, kWarps, KeyLayout::kColumnsStaged><<<grid, block, 0, stream>>>(args);
  return launchStatus();
}

template <class T, int kD>
cudaError_t launchWithHeadDim(const FlashArgs& args, int64_t batchHeads, FlashQueryTile tile, cudaStream_t stream) {
  switch (tile) {
    case FlashQueryTile::kRows128: return launchTiled<T, kD, 8>(args, batchHeads, stream);
    case FlashQueryTile::kRows32: return launchTiled<T, kD, 2>(args, batchHeads, stream);
    default: return launchTiled<T, kD, 4>(args, batchHeads, stream);
  }
}

template <class T>
cudaError_t launchTyped(const FlashArgs& args, int64_t batchHeads, FlashQueryTile tile, cudaStream_t stream) {
  const int64_t widest = std::max(args.p.headDim, args.p.valueDim);
  if (widest <= 32) return launchWithHeadDim<T, 32>(args, batchHeads, tile, stream);
  if (widest <= 64) return launchWithHeadDim<T, 64>(args, batchHeads, tile, stream);
  if (widest <= 96) return launchWithHeadDim<T, 96>(args, batchHeads, tile, stream);
  return launchWithHeadDim<T, 128>(args, batchHeads, tile, stream);
}

}  // namespace

bool flashAttentionTakes(const FlashAttentionProblem& p, ElementType type) {
  if (type != ElementType::kFloat16 && type != ElementType::kBFloat16) return false;
  if (p.batchRank < 0 || p.batchRank > kFlashMaxBatchDims) return false;
  for (int i = 0; i < p.batchRank; ++i)
    if (p.batchDims[i] < 0) return false;
  if (p.queryLength < 0 || p.keyLength < 0 || p.headDim < 0 || p.valueDim < 0) return false;
  if (p.headDim > kFlashMaxHeadDim || p.valueDim > kFlashMaxHeadDim) return false;
  if (p.q.column != 1 || p.k.column != 1 || p.v.column != 1 || p.out.column != 1) return false;
  return p.mask.column == 0 || p.mask.column == 1;
}

cudaError_t launchFlashAttention(const FlashAttentionProblem& p, const void* q, const void* k, const void* v,
                                 const void* mask, ElementType maskType, void* out, ElementType type,
                                 FlashQueryTile tile, cudaStream_t stream) {
  if (!flashAttentionTakes(p, type)) return cudaErrorInvalidValue;
  if (mask && maskType != ElementType::kFloat32 && maskType != ElementType::kFloat16 &&
      maskType != ElementType::kBFloat16)
    return cudaErrorInvalidValue;
  int64_t batchHeads = 1;
  for (int i = 0; i < p.batchRank; ++i) batchHeads *= p.batchDims[i];
  if (batchHeads == 0 || p.queryLength == 0 || p.valueDim == 0) return cudaSuccess;
  const int64_t rows = tile == FlashQueryTile::kRows128 ? 128 : tile == FlashQueryTile::kRows32 ? 32 : 64;
  FlashArgs args;
  args.p = p;
  args.q = static_cast<const Bits*>(q);
  args.k = static_cast<const Bits*>(k);
  args.v = static_cast<const Bits*>(v);
  args.mask = mask;
  args.maskType = maskType;
  args.out = static_cast<Bits*>(out);
  args.queryTiles = (p.queryLength + rows - 1) / rows;
  if (batchHeads > int64_t(INT32_MAX) / args.queryTiles) return cudaErrorInvalidValue;  // past the grid's x
  args.scaleLog2 = p.scale * kLog2e;
  args.vectorQ = aligned(q, 16) && rowsAligned(p, p.q, 8);
  args.vectorK = aligned(k, 16) && rowsAligned(p, p.k, 8);
  args.vectorV = aligned(v, 16) && rowsAligned(p, p.v, 8);
  args.pairedOut = aligned(out, 4) && rowsAligned(p, p.out, 2);
  return type == ElementType::kFloat16 ? launchTyped<__half>(args, batchHeads, tile, stream)
                                       : launchTyped<__nv_bfloat16>(args, batchHeads, tile, stream);
}

}  // namespace kiln::kernels::cuda
