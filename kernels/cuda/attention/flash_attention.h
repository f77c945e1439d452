#pragma once
// Fused scaled dot-product attention on tensor cores (FlashAttention-2's forward pass), with the
// CPU kernel's semantics (kernels/cpu/attention/attention.h):
//   out = softmax(q · kᵀ · scale + mask) · v, softmax over the keys,
// for float16 and bfloat16 storage, and for float32 storage with TF32 products
// (flash_attention_tf32.cu). A block takes one batch-head and a tile of query rows, walks
// the keys in tiles held in shared memory, and keeps the scores in registers: the products run on
// mma.sync (fp32 accumulation), the softmax online in fp32 (a running maximum and sum per row), so
// no score ever reaches memory. The mask is added in fp32 before the maximum; a row masked
// entirely to -inf gives zeros, as on the CPU; keys past Lk contribute nothing. Needs sm_80 or
// later. Asynchronous on `stream`; allocates nothing, synchronises nothing.
//
// Key splits (FlashAttention's split-KV, "flash-decoding"): where batch-heads times query tiles
// leave most multiprocessors idle (batch 1), each block walks only its share of the key tiles and
// leaves its unnormalised output with its rows' running maximum and sum in a workspace; a second
// kernel weighs the splits by exp2(max_s - max) and writes out = sum(O_s w_s) / sum(l_s w_s)
// (flash_attention_split.cu).
#include "kernels/cuda/common/element_type.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace kiln::kernels::cuda {

inline constexpr int kFlashMaxBatchDims = 6;   // the kernels' rank limit (8) less Lq and Lk
inline constexpr int64_t kFlashMaxHeadDim = 128;  // D and Dv each, any size from 1 up to it

// Where a tensor's elements are: element (batch index b0..bn-1, row r, column c) sits at
//   sum(b_i * batch[i]) + r * row + c * column, in elements.
// Columns of Q, K, V and the output are contiguous (column 1); the mask's column is 1 or 0 (a mask
// that broadcasts over the keys). A broadcast dim has stride 0.
struct FlashStrides {
  int64_t batch[kFlashMaxBatchDims] = {};
  int64_t row = 0;
  int64_t column = 1;
};

struct FlashAttentionProblem {
  int batchRank = 0;                             // leading dims (batch, heads, ...), at most 6
  int64_t batchDims[kFlashMaxBatchDims] = {};    // their sizes; the batch-heads are their product
  int64_t queryLength = 0, keyLength = 0;        // Lq, Lk
  int64_t headDim = 0, valueDim = 0;             // D (of Q and K), Dv (of V and the output)
  // K as [..., D, Lk] per batch-head: its rows are the head dims, its columns the keys.
  bool keyTransposed = false;
  float scale = 1.0f;
  // Rows of q / out are queries, rows of k keys (head dims when transposed), rows of v keys; the
  // mask's rows are queries and its columns keys.
  FlashStrides q, k, v, out, mask;
};

// The query rows one block takes (a warp per 16); 64 suits short sequences and large head dims,
// 128 reads each key tile half as often, 32 makes twice the blocks of 64 where few batch-heads
// would leave multiprocessors idle (batch 1).
enum class FlashQueryTile : uint8_t { kRows64, kRows128, kRows32 };

inline constexpr int64_t kFlashMaxKeySplits = 16;

// How one launch divides the work: the query tile, the key splits asked for (1: none; more are
// cut to the key tiles there are, each split at least one) and the workspace they need.
struct FlashLaunch {
  FlashQueryTile tile = FlashQueryTile::kRows64;
  int64_t keySplits = 1;
  void* workspace = nullptr;  // flashAttentionWorkspaceBytes of it, 16-byte aligned; none for one split
};

// The key splits that fill `multiprocessors` about twice over with blocks (1 where the blocks
// without splits already fill them once), at most kFlashMaxKeySplits and the key tiles there are.
int64_t flashKeySplits(const FlashAttentionProblem& p, ElementType type, FlashQueryTile tile, int multiprocessors);

// Workspace bytes of a launch with `keySplits` (as cut to the key tiles): the splits' fp32 outputs
// and row statistics; 0 for one split.
uint64_t flashAttentionWorkspaceBytes(const FlashAttentionProblem& p, ElementType type, int64_t keySplits);

// Whether launchFlashAttention takes this problem and type: float16, bfloat16 or float32 (its
// products in TF32: the caller asks for TF32 precision by passing it), D and Dv from 1
// to kFlashMaxHeadDim, batchRank within its limit, column strides as described.
bool flashAttentionTakes(const FlashAttentionProblem& p, ElementType type);

// q, k, v, out in `type`; mask (may be null) in maskType (float32, float16 or bfloat16). Returns
// cudaErrorInvalidValue for a problem flashAttentionTakes refuses, or key splits without their
// workspace; empty problems do nothing (an Lk of 0 writes zeros, a softmax over no keys).
cudaError_t launchFlashAttention(const FlashAttentionProblem& p, const void* q, const void* k, const void* v,
                                 const void* mask, ElementType maskType, void* out, ElementType type,
                                 const FlashLaunch& launch, cudaStream_t stream);
inline cudaError_t launchFlashAttention(const FlashAttentionProblem& p, const void* q, const void* k, const void* v,
                                        const void* mask, ElementType maskType, void* out, ElementType type,
                                        FlashQueryTile tile, cudaStream_t stream) {
  return launchFlashAttention(p, q, k, v, mask, maskType, out, type, FlashLaunch{tile}, stream);
}

}  // namespace kiln::kernels::cuda
