#pragma once
// How the CUDA backend's kiln.Attention step (cuda_attention.cpp) splits one set of input dims
// into chunks of batch-heads, where a chunk's scores, probabilities and mask live in the
// workspace, and the two cuBLASLt products of a chunk. Plain host code: tests/cuda_plans checks
// it against the CPU's semantics with cuBLASLt's arithmetic emulated on the host.
#include "../../backend.h"
#include "../cublaslt_matmul.h"

#include <cstdint>
#include <vector>

namespace kiln::cuda {

enum AttentionInput : size_t { kAttentionQ = 0, kAttentionK = 1, kAttentionV = 2, kAttentionMask = 3 };

// Whether the layer adds a mask (has_mask = 1 with the mask input named).
bool attentionHasMask(const Layer& layer);

// At most this many bytes of scores (and their probabilities and flags) in the workspace at once.
inline constexpr uint64_t kAttentionScoresBudget = uint64_t(256) << 20;

// One set of input dims: the products per chunk, the chunks, and the workspace they use.
struct AttentionPlan {
  // The dims attention computes on (the stored dims with rows and heads swapped back where the
  // layer's *_interleaved attribute says so), and the output's as computed and as stored.
  std::vector<int64_t> q, k, v, out, storedOut;
  bool interleaved[4] = {};  // Q, K, V, output (fused::kAttentionInterleaved)
  // Q, K and V as parts of one stored tensor [..., L, 3, H, D] (fused::kAttentionPacked): part i
  // starts i * partStride elements in; the two-product step re-lays all three out with one copy.
  bool packed = false;
  int64_t partStride = 0;
  int64_t lq = 0, lk = 0, d = 0, dv = 0;
  bool kTransposed = false;  // K given as [..., D, Lk]
  int64_t chunk = 1;         // batch-heads per chunk: the product of the trailing batch dims from `split`
  size_t split = 0;
  std::vector<int64_t> scoreDims;    // one chunk's scores: [trailing batch dims..., Lq, Lk]
  std::vector<int64_t> maskDims;     // the mask as it broadcasts against scoreDims
  std::vector<int64_t> maskOffsets;  // per chunk, elements into the mask
  std::vector<int64_t> maskStrides;  // per dim of the whole scores [batch..., Lq, Lk], 0 where the mask broadcasts
  int64_t chunks = 1;
  bool hasMask = false, narrowProbabilities = false, empty = false;
  int64_t maskElements = 0;
  // Workspace: scores (fp32), probabilities (storage type, when narrower), NaN flags (with a
  // mask), the mask widened to fp32 (when stored narrower), interleaved tensors re-laid out for
  // the products (the two-product step's; the flash kernel reads them through strides), then
  // cuBLASLt's.
  uint64_t scoresAt = 0, probabilitiesAt = 0, flagsAt = 0, maskAt = 0, cublasAt = 0;
  uint64_t relaidAt[4] = {};
  uint64_t offsetBits = 0;  // every chunk's operand offsets in bytes, OR-ed (pointer alignment)
};

// The plan for Q, K, V (and the mask, when given) stored with these dims in `storage` (for a
// packed layer, each the packed tensor's); throws naming the layer for dims that do not fit each
// other.
AttentionPlan attentionPlanOf(const Layer& layer, DataType storage, const std::vector<int64_t>& q,
                              const std::vector<int64_t>& k, const std::vector<int64_t>& v,
                              const std::vector<int64_t>* mask, uint64_t scoresBudget = kAttentionScoresBudget);

// Element strides of Q, K, V and the output (AttentionInput order, the output at
// fused::kAttentionOutput) as stored with `storedInputs` (the layer's input dims) and plan.storedOut,
// given in the order of the dims attention computes on (plan.q, plan.k, plan.v, plan.out): the
// fused steps read interleaved tensors in place through them, a packed layer's parts through the
// packed tensor's (each part then starts plan.partStride elements after the one before).
struct AttentionStrides {
  std::vector<int64_t> of[4];
};
AttentionStrides attentionStridesOf(const AttentionPlan& plan, const LayerShapes& storedInputs);

// The permutation between a tensor's stored and computed dims when interleaved (rows and the last
// batch dim swapped; its own inverse), for kernels::cuda::transpose.
std::vector<int64_t> rowsAndHeadsPermutation(size_t rank);
// The permutation of a packed [batch..., L, 3, H, D] into [3, batch..., H, L, D]: Q, K and V one
// after the other, each in the computed layout.
std::vector<int64_t> packedToComputedPermutation(size_t rank);

// fp32 math exactly unless the precision is TF32; fp16 / bf16 accumulate in fp32.
cublasComputeType_t attentionComputeType(DataType storage, Precision precision);

// A chunk's scores = q · kᵀ (scaled at launch), written in fp32 whatever `type` q and k have.
GemmShape scoresShape(const AttentionPlan& plan, cudaDataType_t type, cublasComputeType_t compute);
// A chunk's y = probabilities · v.
GemmShape valuesShape(const AttentionPlan& plan, cudaDataType_t type, cublasComputeType_t compute);

}  // namespace kiln::cuda
