// FlashAttention-2's forward pass for float32 storage on TF32 tensor cores (mma.sync m16n8k8,
// fp32 accumulation): what a TF32 engine runs instead of two TF32 products around a softmax, so
// no score reaches memory. The structure is flash_attention.cu's (a warp per 16 query rows, K and
// V tiles in shared memory by cp.async, V's landing while S = Q · Kᵀ is computed, the next K's
// while O += P · V is; the online softmax of flash_attention_common.cuh), with three differences:
//  - Q's fragments are read from global memory straight into registers, rounded to TF32 once.
//  - The contraction order inside each 8-wide step is permuted so that no shuffle is needed: the
//    m16n8k8 operand wants of a lane the k indices t and t + 4, the score accumulator holds keys
//    2t and 2t + 1; k index t stands for key (or head dim) 2t and t + 4 for 2t + 1 in both
//    operands, which leaves every product unchanged. P goes to the second product as it sits in
//    the registers, and K's two head dims are one 8-byte shared load.
//  - Key tiles are 64 keys for head dims up to 64 and 32 above, so K and V fit the 48 KiB of
//    static shared memory in fp32.
// Shared rows are padded so each warp-wide load hits distinct banks: K as [key][d] by 8 floats
// (quads' 8-byte loads), K as [d][key] and V by 4 (rows 2t of the four lanes of a group are 8
// banks apart). K and V whose rows are off 16-byte boundaries are copied element by element.
#include "flash_attention.h"
#include "flash_attention_common.cuh"

#include "kernels/cuda/common/launch.cuh"
#include "kernels/cuda/common/warp_matrix.cuh"

#include <algorithm>

namespace kiln::kernels::cuda::flash {
namespace {

template <int kD, int kWarps, bool kKeyTransposed>
struct Tf32Layout {
  static constexpr int kKeyTile = kD <= 64 ? 64 : 32;
  static constexpr int kRows = 16 * kWarps;
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int kKeyPitch = kD + 8;              // K as [key][d]
  static constexpr int kKeyColumnPitch = kKeyTile + 4;  // K as [d][key]
  static constexpr int kValuePitch = kD + 4;            // V as [key][d]
  static constexpr int kKeyElements = kKeyTransposed ? kD * kKeyColumnPitch : kKeyTile * kKeyPitch;
  static constexpr int kValueElements = kKeyTile * kValuePitch;
};

template <int kD, int kWarps, bool kKeyTransposed>
__global__ void __launch_bounds__(32 * kWarps) flashAttentionTf32Kernel(const Args a) {
#if (defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800) || defined(KILN_CUDA_EMULATION)
  using L = Tf32Layout<kD, kWarps, kKeyTransposed>;
  constexpr int kKeyTile = L::kKeyTile, kS = kKeyTile / 8, kD8 = kD / 8;
  __shared__ __align__(16) float keyTile[L::kKeyElements];
  __shared__ __align__(16) float valueTile[L::kValueElements];
  const FlashAttentionProblem& p = a.p;
  const BlockPlace place = blockPlaceOf(a, L::kRows, kKeyTile);
  const int warp = place.warp, group = place.group, pair = place.pair;
  const int64_t q0 = place.q0;
  const HeadOffsets& at = place.at;
  const float* const k = static_cast<const float*>(a.k) + at.k;
  const float* const v = static_cast<const float*>(a.v) + at.v;
  const int d = int(p.headDim), dv = int(p.valueDim);
  const int64_t lq = p.queryLength, lk = p.keyLength;
  const int64_t row0 = q0 + warp * 16 + group;

  // Q's fragments: rows g and g + 8, head dims 8kk + 2t (k index t) and 8kk + 2t + 1 (t + 4).
  uint32_t qf[kD8][4];
  {
    const float* const q = static_cast<const float*>(a.q) + at.q;
    auto qAt = [&](int64_t row, int dim) { return row < lq && dim < d ? q[row * p.q.row + dim] : 0.0f; };
#pragma unroll
    for (int kk = 0; kk < kD8; ++kk) {
      const int dim = kk * 8 + pair * 2;
      qf[kk][0] = tf32Of(qAt(row0, dim));
      qf[kk][1] = tf32Of(qAt(row0 + 8, dim));
      qf[kk][2] = tf32Of(qAt(row0, dim + 1));
      qf[kk][3] = tf32Of(qAt(row0 + 8, dim + 1));
    }
  }

  auto loadKeys = [&](int64_t k0, int keys) {
    if constexpr (kKeyTransposed)
      loadTile<float, kD, kKeyTile, L::kKeyColumnPitch, L::kThreads>(keyTile, k + k0, p.k.row, d, keys, a.vectorK);
    else
      loadTile<float, kKeyTile, kD, L::kKeyPitch, L::kThreads>(keyTile, k + k0 * p.k.row, p.k.row, keys, d, a.vectorK);
  };
  auto nextKeys = [&](int64_t k0) { return int(smaller(lk - k0, kKeyTile)); };

  float o[kD8][4];
#pragma unroll
  for (int n = 0; n < kD8; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
  float rowMax[2] = {-INFINITY, -INFINITY}, rowSum[2] = {0.0f, 0.0f};
  const int endTile = place.endTile;  // this block's key tiles: all, or its split's
  if (place.firstTile < endTile) {
    loadKeys(int64_t(place.firstTile) * kKeyTile, nextKeys(int64_t(place.firstTile) * kKeyTile));
    commitCopies();
  }
  for (int tile = place.firstTile; tile < endTile; ++tile) {
    const int64_t k0 = int64_t(tile) * kKeyTile;
    const int keys = nextKeys(k0);
    __syncthreads();  // every warp is done with the previous V tile
    loadTile<float, kKeyTile, kD, L::kValuePitch, L::kThreads>(valueTile, v + k0 * p.v.row, p.v.row, keys, dv,
                                                               a.vectorV);
    commitCopies();
    waitCopies<1>();  // this tile's K (V's may still be on its way)
    __syncthreads();

    // S = Q · Kᵀ: kS accumulators of 16x8, keys k0 + 8n .. k0 + 8n + 7.
    float s[kS][4];
#pragma unroll
    for (int n = 0; n < kS; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < kD8; ++kk) {
      if (kk * 8 >= d) break;  // zero padding
      const int dim = kk * 8 + pair * 2;
#pragma unroll
      for (int n = 0; n < kS; ++n) {
        const int key = n * 8 + group;
        float b0, b1;
        if constexpr (kKeyTransposed) {
          b0 = keyTile[dim * L::kKeyColumnPitch + key];
          b1 = keyTile[(dim + 1) * L::kKeyColumnPitch + key];
        } else {
          const float2 both = *reinterpret_cast<const float2*>(keyTile + key * L::kKeyPitch + dim);
          b0 = both.x;
          b1 = both.y;
        }
        mma1688Tf32(s[n], qf[kk], tf32Of(b0), tf32Of(b1));
      }
    }

    scaleAndMask(s, a, at.mask, row0, k0, keys, pair);
    onlineSoftmax(s, o, rowMax, rowSum);

    waitCopies<0>();  // this tile's V
    __syncthreads();  // and every warp is done with K's tile: the next one may come
    if (tile + 1 < endTile) {
      loadKeys(k0 + kKeyTile, nextKeys(k0 + kKeyTile));
      commitCopies();
    }

    // O += P · V over the tile's keys 8kk..8kk+7: P's operand is accumulator kk as it is (keys
    // 2t, 2t + 1 of rows g, g + 8), V's rows 2t and 2t + 1.
#pragma unroll
    for (int kk = 0; kk < kS; ++kk) {
      const uint32_t pa[4] = {tf32Of(s[kk][0]), tf32Of(s[kk][2]), tf32Of(s[kk][1]), tf32Of(s[kk][3])};
      const float* const rows = valueTile + (kk * 8 + pair * 2) * L::kValuePitch + group;
#pragma unroll
      for (int n = 0; n < kD8; ++n) {
        if (n * 8 >= dv) break;  // zero padding
        mma1688Tf32(o[n], pa, tf32Of(rows[n * 8]), tf32Of(rows[L::kValuePitch + n * 8]));
      }
    }
  }

  float* const out = static_cast<float*>(a.out) + at.out;
  finishBlock(a, place, o, rowMax, rowSum, row0, [&](int64_t row, int c, float lo, float hi) {
    float* to = out + row * p.out.row + c;
    if (a.pairedOut && c + 1 < dv) {
      *reinterpret_cast<float2*>(to) = make_float2(lo, hi);
    } else {
      to[0] = lo;
      if (c + 1 < dv) to[1] = hi;
    }
  });
#else
  __trap();  // built for an architecture without TF32 mma.sync; the host side refuses such devices
#endif
}

template <int kD, int kWarps>
cudaError_t launchTiled(const Args& args, int64_t batchHeads, cudaStream_t stream) {
  const dim3 grid(unsigned(batchHeads * args.queryTiles * args.keySplits)), block(32 * kWarps);
  if (args.p.keyTransposed)
    flashAttentionTf32Kernel<kD, kWarps, true><<<grid, block, 0, stream>>>(args);
  else
    flashAttentionTf32Kernel<kD, kWarps, false><<<grid, block, 0, stream>>>(args);
  return launchStatus();
}

template <int kD>
cudaError_t launchWithHeadDim(const Args& args, int64_t batchHeads, FlashQueryTile tile, cudaStream_t stream) {
  switch (tile) {
    case FlashQueryTile::kRows128:
      return launchTiled<kD, 8>(args, batchHeads, stream);
    case FlashQueryTile::kRows32:
      return launchTiled<kD, 2>(args, batchHeads, stream);
    default:
      return launchTiled<kD, 4>(args, batchHeads, stream);
  }
}

}  // namespace

cudaError_t launchTf32(const Args& args, int64_t batchHeads, FlashQueryTile tile, cudaStream_t stream) {
  const int64_t widest = std::max(args.p.headDim, args.p.valueDim);
  if (widest <= 32) return launchWithHeadDim<32>(args, batchHeads, tile, stream);
  if (widest <= 64) return launchWithHeadDim<64>(args, batchHeads, tile, stream);
  if (widest <= 96) return launchWithHeadDim<96>(args, batchHeads, tile, stream);
  return launchWithHeadDim<128>(args, batchHeads, tile, stream);
}

}  // namespace kiln::kernels::cuda::flash
