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
#include "flash_attention_common.cuh"

#include "kernels/cuda/common/half_bits.cuh"
#include "kernels/cuda/common/launch.cuh"
#include "kernels/cuda/common/warp_matrix.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <utility>
#include <type_traits>

namespace kiln::kernels::cuda {
namespace {

using Bits = uint16_t;  // tiles move as bits, whatever the 16-bit type
using namespace flash;

constexpr int kKeyTile = 64;  // keys per shared tile
constexpr int kPad = 8;       // halves of padding per shared row

// How K's tiles arrive: K as [Lk, D] (keys are its rows), or transposed [D, Lk] (keys are its
// columns) with rows that cp.async can copy, or with rows off 16-byte boundaries, whose elements go
// through registers a tile ahead, the loads in flight while the warps compute S and its softmax
// (the TF32 kernel copies such rows element by element).
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

template <class T, int kD, int kWarps, KeyLayout kKeys>
__global__ void __launch_bounds__(32 * kWarps) flashAttentionKernel(const Args a) {
#if (defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800) || defined(KILN_CUDA_EMULATION)
  constexpr bool kKeyTransposed = kKeys != KeyLayout::kRows, kStaged = kKeys == KeyLayout::kColumnsStaged;
  using L = FlashLayout<kD, kWarps, kKeyTransposed>;
  using StagedKeys = TileChunks<Bits, kD, kKeyTile, L::kThreads>;
  constexpr int kKeyTiles16 = kKeyTile / 16, kD16 = kD / 16;
  __shared__ __align__(16) Bits shared[L::kElements];
  Bits* const queryTile = shared;
  Bits* const keyTile = shared;
  Bits* const valueTile = shared + L::kKeyElements;
  const FlashAttentionProblem& p = a.p;
  const BlockPlace place = blockPlaceOf(a, L::kRows, kKeyTile);
  const int warp = place.warp, lane = place.lane, group = place.group, pair = place.pair;
  const int64_t q0 = place.q0;
  const HeadOffsets& at = place.at;
  const Bits* const q = static_cast<const Bits*>(a.q) + at.q;
  const Bits* const k = static_cast<const Bits*>(a.k) + at.k;
  const Bits* const v = static_cast<const Bits*>(a.v) + at.v;
  const int d = int(p.headDim), dv = int(p.valueDim);
  const int64_t lq = p.queryLength, lk = p.keyLength;

  // Q's fragments: warp w's rows 16w..16w+15, each 16 head dims a 16x16 operand.
  loadTile<Bits, L::kRows, kD, L::kPitch, L::kThreads>(queryTile, q + q0 * p.q.row, p.q.row,
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
      fetchTile<Bits, kD, kKeyTile, L::kThreads>(staged, k + k0, p.k.row, d, keys);
    else if constexpr (kKeyTransposed)
      loadTile<Bits, kD, kKeyTile, L::kKeyPitch, L::kThreads>(keyTile, k + k0, p.k.row, d, keys, a.vectorK);
    else
      loadTile<Bits, kKeyTile, kD, L::kPitch, L::kThreads>(keyTile, k + k0 * p.k.row, p.k.row, keys, d, a.vectorK);
  };
  auto storeStagedKeys = [&] {
    if constexpr (kStaged) storeTile<Bits, kD, kKeyTile, L::kKeyPitch, L::kThreads>(keyTile, staged);
  };
  auto nextKeys = [&](int64_t k0) { return int(smaller(lk - k0, kKeyTile)); };

  float o[2 * kD16][4];
#pragma unroll
  for (int n = 0; n < 2 * kD16; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
  float rowMax[2] = {-INFINITY, -INFINITY}, rowSum[2] = {0.0f, 0.0f};  // rows group and group + 8 (sums per lane)
  const int64_t row0 = q0 + warp * 16 + group;
  const int endTile = place.endTile;  // this block's key tiles: all, or its split's
  if (place.firstTile < endTile) {
    loadKeys(int64_t(place.firstTile) * kKeyTile, nextKeys(int64_t(place.firstTile) * kKeyTile));
    storeStagedKeys();
    commitCopies();
  }
  for (int tile = place.firstTile; tile < endTile; ++tile) {
    const int64_t k0 = int64_t(tile) * kKeyTile;
    const int keys = nextKeys(k0);
    __syncthreads();  // every warp is done with the previous V tile
    loadTile<Bits, kKeyTile, kD, L::kPitch, L::kThreads>(valueTile, v + k0 * p.v.row, p.v.row, keys, dv, a.vectorV);
    commitCopies();
    waitCopies<1>();  // this tile's K (V's may still be on its way)
    __syncthreads();
    if constexpr (kStaged)  // the next tile's loads are in flight while S and its softmax are computed
      if (tile + 1 < endTile) loadKeys(k0 + kKeyTile, nextKeys(k0 + kKeyTile));

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
        mma16816<T>(s[2 * np], qf[kk], b[0], b[1]);
        mma16816<T>(s[2 * np + 1], qf[kk], b[2], b[3]);
      }
    }

    scaleAndMask(s, a, at.mask, row0, k0, keys, pair);
    onlineSoftmax(s, o, rowMax, rowSum);

    waitCopies<0>();  // this tile's V
    __syncthreads();  // and every warp is done with K's tile: the next one may come
    if (tile + 1 < endTile) {
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
        mma16816<T>(o[2 * np], pa, b[0], b[1]);
        mma16816<T>(o[2 * np + 1], pa, b[2], b[3]);
      }
    }
  }

  Bits* const out = static_cast<Bits*>(a.out) + at.out;
  finishBlock(a, place, o, rowMax, rowSum, row0, [&](int64_t row, int c, float lo, float hi) {
    Bits* to = out + row * p.out.row + c;
    if (a.pairedOut && c + 1 < dv) {
      *reinterpret_cast<uint32_t*>(to) = packPair<T>(lo, hi);
    } else {
      to[0] = bitsOf<T>(lo);
      if (c + 1 < dv) to[1] = bitsOf<T>(hi);
    }
  });
#else
  __trap();  // built for an architecture without mma.sync m16n8k16; the host side refuses such devices
#endif
}

template <class T, int kD, int kWarps>
cudaError_t launchTiled(const Args& args, int64_t batchHeads, cudaStream_t stream) {
  const dim3 grid(unsigned(batchHeads * args.queryTiles * args.keySplits)), block(32 * kWarps);
  if (!args.p.keyTransposed) flashAttentionKernel<T, kD, kWarps, KeyLayout::kRows><<<grid, block, 0, stream>>>(args);
  else if (args.vectorK) flashAttentionKernel<T, kD, kWarps, KeyLayout::kColumns><<<grid, block, 0, stream>>>(args);
  else flashAttentionKernel<T, kD, kWarps, KeyLayout::kColumnsStaged><<<grid, block, 0, stream>>>(args);
  return launchStatus();
}

template <class T, int kD>
cudaError_t launchWithHeadDim(const Args& args, int64_t batchHeads, FlashQueryTile tile, cudaStream_t stream) {
  switch (tile) {
    case FlashQueryTile::kRows128: return launchTiled<T, kD, 8>(args, batchHeads, stream);
    case FlashQueryTile::kRows32: return launchTiled<T, kD, 2>(args, batchHeads, stream);
    default: return launchTiled<T, kD, 4>(args, batchHeads, stream);
  }
}

template <class T>
cudaError_t launchTyped(const Args& args, int64_t batchHeads, FlashQueryTile tile, cudaStream_t stream) {
  const int64_t widest = std::max(args.p.headDim, args.p.valueDim);
  if (widest <= 32) return launchWithHeadDim<T, 32>(args, batchHeads, tile, stream);
  if (widest <= 64) return launchWithHeadDim<T, 64>(args, batchHeads, tile, stream);
  if (widest <= 96) return launchWithHeadDim<T, 96>(args, batchHeads, tile, stream);
  return launchWithHeadDim<T, 128>(args, batchHeads, tile, stream);
}

}  // namespace

bool flashAttentionTakes(const FlashAttentionProblem& p, ElementType type) {
  if (type != ElementType::kFloat16 && type != ElementType::kBFloat16 && type != ElementType::kFloat32) return false;
  if (p.batchRank < 0 || p.batchRank > kFlashMaxBatchDims) return false;
  for (int i = 0; i < p.batchRank; ++i)
    if (p.batchDims[i] < 0) return false;
  if (p.queryLength < 0 || p.keyLength < 0 || p.headDim < 0 || p.valueDim < 0) return false;
  if (p.headDim > kFlashMaxHeadDim || p.valueDim > kFlashMaxHeadDim) return false;
  if (p.q.column != 1 || p.k.column != 1 || p.v.column != 1 || p.out.column != 1) return false;
  return p.mask.column == 0 || p.mask.column == 1;
}

namespace {

int64_t batchHeadsOf(const FlashAttentionProblem& p) {
  int64_t batchHeads = 1;
  for (int i = 0; i < p.batchRank; ++i) batchHeads *= p.batchDims[i];
  return batchHeads;
}

int64_t rowsOf(FlashQueryTile tile) {
  return tile == FlashQueryTile::kRows128 ? 128 : tile == FlashQueryTile::kRows32 ? 32 : 64;
}

// Splits as asked, cut so each has at least one key tile: (splits, key tiles per split).
std::pair<int64_t, int64_t> keySplitsCut(const FlashAttentionProblem& p, ElementType type, int64_t asked) {
  const int64_t keyTile = flash::keyTileOf(p, type);
  const int64_t tiles = (p.keyLength + keyTile - 1) / keyTile;
  const int64_t splits = std::clamp<int64_t>(asked, 1, std::max<int64_t>(1, std::min(tiles, kFlashMaxKeySplits)));
  const int64_t perSplit = std::max<int64_t>(1, (tiles + splits - 1) / splits);
  return {std::max<int64_t>(1, (tiles + perSplit - 1) / perSplit), perSplit};
}

}  // namespace

int64_t flashKeySplits(const FlashAttentionProblem& p, ElementType type, FlashQueryTile tile, int multiprocessors) {
  const int64_t blocks = batchHeadsOf(p) * ((p.queryLength + rowsOf(tile) - 1) / rowsOf(tile));
  if (blocks <= 0 || blocks >= multiprocessors) return 1;
  return keySplitsCut(p, type, (2 * int64_t(multiprocessors) + blocks - 1) / blocks).first;
}

uint64_t flashAttentionWorkspaceBytes(const FlashAttentionProblem& p, ElementType type, int64_t keySplits) {
  const int64_t splits = keySplitsCut(p, type, keySplits).first;
  if (splits == 1) return 0;
  return uint64_t(splits * batchHeadsOf(p) * p.queryLength * (p.valueDim + 2)) * sizeof(float);
}

cudaError_t launchFlashAttention(const FlashAttentionProblem& p, const void* q, const void* k, const void* v,
                                 const void* mask, ElementType maskType, void* out, ElementType type,
                                 const FlashLaunch& launch, cudaStream_t stream) {
  if (!flashAttentionTakes(p, type)) return cudaErrorInvalidValue;
  if (mask && maskType != ElementType::kFloat32 && maskType != ElementType::kFloat16 &&
      maskType != ElementType::kBFloat16)
    return cudaErrorInvalidValue;
  const int64_t batchHeads = batchHeadsOf(p);
  if (batchHeads == 0 || p.queryLength == 0 || p.valueDim == 0) return cudaSuccess;
  const auto [splits, tilesPerSplit] = keySplitsCut(p, type, launch.keySplits);
  if (splits > 1 && (!launch.workspace || !flash::aligned(launch.workspace, 16))) return cudaErrorInvalidValue;
  const int64_t rows = rowsOf(launch.tile);
  flash::Args args;
  args.p = p;
  args.q = q;
  args.k = k;
  args.v = v;
  args.mask = mask;
  args.maskType = maskType;
  args.out = out;
  args.queryTiles = (p.queryLength + rows - 1) / rows;
  args.batchHeads = batchHeads;
  args.keySplits = int(splits);
  args.tilesPerSplit = int(std::min<int64_t>(tilesPerSplit, INT32_MAX));
  args.partial = splits > 1 ? static_cast<float*>(launch.workspace) : nullptr;
  if (batchHeads > int64_t(INT32_MAX) / (args.queryTiles * splits)) return cudaErrorInvalidValue;  // past the grid's x
  args.scaleLog2 = p.scale * flash::kLog2e;
  // 16-byte chunks of 8 halves or 4 floats; output pairs of 4 or 8 bytes.
  const int64_t chunk = type == ElementType::kFloat32 ? 4 : 8, pairBytes = type == ElementType::kFloat32 ? 8 : 4;
  using flash::aligned, flash::rowsAligned;
  args.vectorQ = aligned(q, 16) && rowsAligned(p, p.q, chunk);
  args.vectorK = aligned(k, 16) && rowsAligned(p, p.k, chunk);
  args.vectorV = aligned(v, 16) && rowsAligned(p, p.v, chunk);
  args.pairedOut = aligned(out, pairBytes) && rowsAligned(p, p.out, 2);
  cudaError_t status;
  switch (type) {
    case ElementType::kFloat16:
      status = launchTyped<__half>(args, batchHeads, launch.tile, stream);
      break;
    case ElementType::kBFloat16:
      status = launchTyped<__nv_bfloat16>(args, batchHeads, launch.tile, stream);
      break;
    default:
      status = flash::launchTf32(args, batchHeads, launch.tile, stream);
  }
  if (status != cudaSuccess || splits == 1) return status;
  return flash::combineKeySplits(args, type, stream);
}

}  // namespace kiln::kernels::cuda
