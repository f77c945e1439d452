#include "sdpa_plan.h"

#include "../../../ops/fused.h"

#include <kiln/shape.h>

namespace kiln::cuda {
namespace {

// Elements from a view's first to its last, plus one: the stride of a batch dim of extent 1.
int64_t spanOf(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides) {
  int64_t span = 1;
  for (size_t i = 0; i < dims.size(); ++i) span += (dims[i] - 1) * strides[i];
  return span;
}

// [batch..., L, D] with its strides as [B, H, L, D]: the last batch dim is H, the others fold
// into B where each steps over whole copies of the next (dims of extent 1 aside). False where not.
bool foldBatch(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides, std::vector<int64_t>& outDims,
               std::vector<int64_t>& outStrides) {
  const size_t batchRank = dims.size() - 2;
  const int64_t span = spanOf(dims, strides);
  int64_t heads = 1, headStride = span, batch = 1, batchStride = span;
  if (batchRank >= 1) {
    heads = dims[batchRank - 1];
    headStride = heads == 1 ? span : strides[batchRank - 1];
  }
  int64_t inner = -1;  // the innermost folded dim of extent above 1
  for (size_t i = batchRank - std::min<size_t>(batchRank, 1); i-- > 0;) {
    if (dims[i] == 1) continue;
    if (inner >= 0 && strides[i] != strides[size_t(inner)] * dims[size_t(inner)]) return false;
    if (inner < 0) batchStride = strides[i];
    inner = int64_t(i);
    batch *= dims[i];
  }
  outDims = {batch, heads, dims[batchRank], dims[batchRank + 1]};
  outStrides = {batchStride, headStride, strides[batchRank], strides[batchRank + 1]};
  return true;
}

const char* const kViewNames[4] = {"Q", "K", "V", "output"};

}  // namespace

SdpaLayout sdpaLayoutOf(const AttentionPlan& plan, const LayerShapes& storedInputs, DataType storage) {
  SdpaLayout layout;
  auto refuse = [&](std::string why) {
    layout.refusal = std::move(why);
    return layout;
  };
  if (storage != DataType::kFloat16 && storage != DataType::kBFloat16)
    return refuse("cuDNN's SDPA operation computes in float16 or bfloat16, not " + std::string(toString(storage)));
  if (plan.hasMask)
    return refuse(
        "a mask: cuDNN 9.19's single SDPA operation adds none (an additive bias or a causal band needs its "
        "subgraph attribute, cuDNN 9.21 on)");
  if (plan.empty || plan.lk == 0) return refuse("nothing to compute (an empty Q, K or V)");
  for (int64_t dim : {plan.d, plan.dv})
    if (dim % 8 != 0 || dim > kSdpaMaxHeadDim)
      return refuse("head dims " + std::to_string(plan.d) + " and " + std::to_string(plan.dv) +
                    ": cuDNN's SDPA takes multiples of 8 up to " + std::to_string(kSdpaMaxHeadDim));
  const AttentionStrides strides = attentionStridesOf(plan, storedInputs);
  const std::vector<int64_t>* computed[4] = {&plan.q, &plan.k, &plan.v, &plan.out};
  for (size_t t = 0; t < 4; ++t) {
    std::vector<int64_t> dims = *computed[t], st = strides.of[t];
    if (t == kAttentionK && plan.kTransposed) {  // [..., D, Lk] read as [..., Lk, D]
      std::swap(dims[dims.size() - 2], dims[dims.size() - 1]);
      std::swap(st[st.size() - 2], st[st.size() - 1]);
    }
    if (st.back() != 1)
      return refuse(std::string("its ") + kViewNames[t] + " has a head dim that is not contiguous in memory" +
                    (t == kAttentionK ? " (K given as [..., D, Lk])" : "") + ", which cuDNN's SDPA does not read");
    if (!foldBatch(dims, st, layout.dims[t], layout.strides[t]))
      return refuse(std::string("its ") + kViewNames[t] + " batch dims " + dimsToString(dims) + " with strides " +
                    dimsToString(st) + " do not fold into cuDNN's [B, H, L, D]");
  }
  return layout;
}

}  // namespace kiln::cuda
