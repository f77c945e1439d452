#include "attention_plan.h"

#include "../../../ops/fused.h"
#include "../workspace_math.h"

#include <kiln/error.h>

#include <algorithm>

namespace kiln::cuda {
namespace {

const char* const kTensorNames[4] = {"Q", "K", "V", "output"};

int64_t product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end; ++i) n *= dims[i];
  return n;
}

std::string dimsText(const std::vector<int64_t>& dims) { return dimsToString(dims); }

// Element strides of a dense tensor stored with `stored` dims, in the order of the dims attention
// computes on (rows and heads swapped back when interleaved). A packed part's are the packed
// tensor's without the parts dim.
std::vector<int64_t> computedStrides(const std::vector<int64_t>& stored, bool packed, bool interleaved) {
  std::vector<int64_t> strides(stored.size());
  int64_t stride = 1;
  for (size_t i = stored.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= stored[i];
  }
  if (packed) strides = fused::packedPartDims(std::move(strides));
  return interleaved ? fused::swapRowsAndHeads(std::move(strides)) : strides;
}

}  // namespace

bool attentionHasMask(const Layer& layer) {
  return layer.attrInt("has_mask", 0) != 0 && layer.inputs.size() > kAttentionMask &&
         !layer.inputs[kAttentionMask].empty();
}

AttentionStrides attentionStridesOf(const AttentionPlan& plan, const LayerShapes& storedInputs) {
  AttentionStrides s;
  const std::vector<int64_t>* stored[4] = {&storedInputs[kAttentionQ], &storedInputs[kAttentionK],
                                           &storedInputs[kAttentionV], &plan.storedOut};
  for (size_t t = 0; t < 4; ++t) s.of[t] = computedStrides(*stored[t], plan.packed && t < 3, plan.interleaved[t]);
  return s;
}

std::vector<int64_t> rowsAndHeadsPermutation(size_t rank) {
  std::vector<int64_t> perm(rank);
  for (size_t i = 0; i < rank; ++i) perm[i] = int64_t(i);
  return fused::swapRowsAndHeads(std::move(perm));
}

AttentionPlan attentionPlanOf(const Layer& layer, DataType storage, const std::vector<int64_t>& storedQ,
                              const std::vector<int64_t>& storedK, const std::vector<int64_t>& storedV,
                              const std::vector<int64_t>* mask, uint64_t scoresBudget) {
  const bool kTransposed = layer.attrInt("k_transposed", 0) != 0;
  AttentionPlan p;
  p.packed = fused::attentionPacked(layer);
  if (p.packed) {
    const size_t rank = storedQ.size();
    if (rank < fused::kPackedPartsDim + 2 || storedQ[rank - fused::kPackedPartsDim] != 3 || storedK != storedQ ||
        storedV != storedQ)
      throw Error(ErrorCode::kInvalidArgument, layer.describe() + ": its packed Q, K, V input must be one tensor [..., L, 3, H, D], got " +
                                                   dimsText(storedQ));
    p.partStride = product(storedQ, rank - fused::kPackedPartsDim + 1, rank);
  }
  const std::vector<int64_t> partDims = p.packed ? fused::packedPartDims(storedQ) : std::vector<int64_t>();
  const std::vector<int64_t>* stored[3] = {p.packed ? &partDims : &storedQ, p.packed ? &partDims : &storedK,
                                           p.packed ? &partDims : &storedV};
  std::vector<int64_t>* computed[3] = {&p.q, &p.k, &p.v};
  for (size_t t = 0; t < 4; ++t) {
    p.interleaved[t] = fused::attentionInterleaved(layer, t);
    const size_t rank = stored[t < 3 ? t : 0]->size();
    if (p.interleaved[t] && rank < 3)
      throw Error(ErrorCode::kInvalidArgument, layer.describe() + ": its " + kTensorNames[t] +
                                                   " is stored interleaved, which needs rank 3 or more");
    if (t < 3) *computed[t] = p.interleaved[t] ? fused::swapRowsAndHeads(*stored[t]) : *stored[t];
  }
  const std::vector<int64_t>&q = p.q, &kDims = p.k, &v = p.v;
  const size_t rank = q.size();
  if (rank < 2 || kDims.size() != rank || v.size() != rank)
    throw Error(ErrorCode::kInvalidArgument, layer.describe() + ": Q, K and V must have one rank, 2 or more; got " +
                                                 dimsText(q) + ", " + dimsText(kDims) + ", " + dimsText(v));
  for (size_t i = 0; i + 2 < rank; ++i)
    if (kDims[i] != q[i] || v[i] != q[i])
      throw Error(ErrorCode::kInvalidArgument, layer.describe() + ": Q, K and V must have the same batch dims; got " +
                                                   dimsText(q) + ", " + dimsText(kDims) + ", " + dimsText(v));
  p.kTransposed = kTransposed;
  p.lq = q[rank - 2];
  p.d = q[rank - 1];
  p.lk = kTransposed ? kDims[rank - 1] : kDims[rank - 2];
  p.dv = v[rank - 1];
  if ((kTransposed ? kDims[rank - 2] : kDims[rank - 1]) != p.d || v[rank - 2] != p.lk)
    throw Error(ErrorCode::kInvalidArgument, layer.describe() + ": Q " + dimsText(q) + ", K " + dimsText(kDims) +
                                                 " and V " + dimsText(v) + " do not agree on the head and key dims");
  p.out.assign(q.begin(), q.end() - 1);
  p.out.push_back(p.dv);
  p.storedOut = p.interleaved[fused::kAttentionOutput] ? fused::swapRowsAndHeads(p.out) : p.out;
  const int64_t batch = product(q, 0, rank - 2);
  p.empty = batch * p.lq * p.dv == 0;
  p.narrowProbabilities = storage != DataType::kFloat32;
  p.hasMask = mask != nullptr;
  // Chunks of whole trailing batch dims, as many as fit the budget (at least one batch-head).
  const uint64_t perHead =
      uint64_t(p.lq) * uint64_t(p.lk) * (4 + (p.narrowProbabilities ? byteSize(storage) : 0) + (p.hasMask ? 1 : 0));
  p.split = rank - 2;
  while (p.split > 0 && uint64_t(product(q, p.split - 1, rank - 2)) * perHead <= scoresBudget) --p.split;
  p.chunk = product(q, p.split, rank - 2);
  p.chunks = product(q, 0, p.split);
  p.scoreDims.assign(q.begin() + std::ptrdiff_t(p.split), q.end() - 2);
  p.scoreDims.push_back(p.lq);
  p.scoreDims.push_back(p.lk);
  p.maskOffsets.assign(size_t(p.chunks), 0);
  if (mask) {
    if (mask->size() > rank)
      throw Error(ErrorCode::kInvalidArgument,
                  layer.describe() + ": the mask " + dimsText(*mask) + " has more dims than the scores");
    // The mask right-aligned against the scores [batch..., Lq, Lk], with its strides (0 where it
    // broadcasts); the chunks' offsets come from the leading dims, the rest broadcasts per chunk.
    std::vector<int64_t> full(rank, 1), strides(rank, 0);
    std::copy(mask->begin(), mask->end(), full.begin() + std::ptrdiff_t(rank - mask->size()));
    std::vector<int64_t> scores(q.begin(), q.end() - 2);
    scores.push_back(p.lq);
    scores.push_back(p.lk);
    int64_t stride = 1;
    for (size_t i = rank; i-- > 0;) {
      if (full[i] != 1 && full[i] != scores[i])
        throw Error(ErrorCode::kInvalidArgument, layer.describe() + ": the mask " + dimsText(*mask) +
                                                     " does not broadcast to the scores " + dimsText(scores));
      strides[i] = full[i] == 1 ? 0 : stride;
      stride *= full[i];
    }
    p.maskElements = stride;
    p.maskStrides = strides;
    p.maskDims.assign(full.begin() + std::ptrdiff_t(p.split), full.end());
    for (int64_t c = 0; c < p.chunks; ++c) {
      int64_t rest = c, offset = 0;
      for (size_t i = p.split; i-- > 0;) {
        offset += (rest % q[i]) * strides[i];
        rest /= q[i];
      }
      p.maskOffsets[size_t(c)] = offset;
    }
  }
  const uint64_t scoreElements = uint64_t(p.chunk) * uint64_t(p.lq) * uint64_t(p.lk);
  p.scoresAt = 0;
  p.probabilitiesAt = alignUp(scoreElements * 4);
  p.flagsAt = p.probabilitiesAt + (p.narrowProbabilities ? alignUp(scoreElements * byteSize(storage)) : 0);
  p.maskAt = p.flagsAt + (p.hasMask ? alignUp(scoreElements) : 0);
  uint64_t at = p.maskAt + (p.hasMask && storage != DataType::kFloat32 ? alignUp(uint64_t(p.maskElements) * 4) : 0);
  const uint64_t bytes = byteSize(storage);
  const std::vector<int64_t>* relaid[4] = {&p.q, &p.k, &p.v, &p.out};
  for (size_t t = 0; t < 4; ++t) {
    if (!p.interleaved[t]) continue;
    p.relaidAt[t] = at;
    // A packed layer's parts land back to back from one copy (packedToComputedPermutation); what
    // follows them starts aligned again (cuBLASLt wants its workspace on 256 bytes).
    at += uint64_t(product(*relaid[t], 0, relaid[t]->size())) * bytes;
    if (!p.packed || t >= 2) at = alignUp(at);
  }
  p.cublasAt = at;
  for (int64_t c = 0; c < p.chunks; ++c)
    for (int64_t matrix : {p.lq * p.d, p.lk * p.d, p.lk * p.dv, p.lq * p.dv})
      p.offsetBits |= uint64_t(c * p.chunk * matrix) * bytes;
  return p;
}

std::vector<int64_t> packedToComputedPermutation(size_t rank) {
  const int64_t batch = int64_t(rank) - 4, rows = batch, parts = batch + 1, heads = batch + 2, depth = batch + 3;
  std::vector<int64_t> perm{parts};
  for (int64_t i = 0; i < batch; ++i) perm.push_back(i);
  perm.insert(perm.end(), {heads, rows, depth});
  return perm;
}

cublasComputeType_t attentionComputeType(DataType storage, Precision precision) {
  return storage == DataType::kFloat32 && precision == Precision::kTF32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                                        : CUBLAS_COMPUTE_32F;
}

GemmShape scoresShape(const AttentionPlan& p, cudaDataType_t type, cublasComputeType_t compute) {
  GemmShape g;
  g.m = p.lq;
  g.n = p.lk;
  g.k = p.d;
  g.transB = !p.kTransposed;  // K is [Lk, D] (n × k): used transposed; [D, Lk] (k_transposed) as is
  g.batch = p.chunk;
  g.strideA = p.lq * p.d;
  g.strideB = p.lk * p.d;
  g.strideC = g.strideD = p.lq * p.lk;
  g.abType = type;
  g.cdType = CUDA_R_32F;
  g.compute = compute;
  return g;
}

GemmShape valuesShape(const AttentionPlan& p, cudaDataType_t type, cublasComputeType_t compute) {
  GemmShape g;
  g.m = p.lq;
  g.n = p.dv;
  g.k = p.lk;
  g.batch = p.chunk;
  g.strideA = p.lq * p.lk;
  g.strideB = p.lk * p.dv;
  g.strideC = g.strideD = p.lq * p.dv;
  g.abType = g.cdType = type;
  g.compute = compute;
  return g;
}

}  // namespace kiln::cuda
