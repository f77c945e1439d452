#pragma once
// Attention blocks as exporters write them, built in code: BERT's
// self-attention (three projections, heads moved between [B, L, H, D] and [B,
// H, L, D]) and torch's nn.MultiheadAttention (batch_first) as torch.onnx
// writes it (sequence-first, one packed in-projection sliced into Q, K, V,
// heads folded into the batch, a sequence-first output projection). The pass
// tests and the GPU agreement tests share them.
#include "common/test_models.h"

#include <cstdint>

namespace kiln::test {

struct AttentionBlockDims {
  int64_t batch = 2, length = 5, heads = 3, depth = 4;
  int64_t width() const { return heads * depth; }
};

// x [B, L, H*D] -> y [B, L, H*D].
ModelBuilder bertSelfAttention(const AttentionBlockDims& dims = {});
// x [B, L, H*D] -> attention + x.
ModelBuilder multiheadAttentionExport(const AttentionBlockDims& dims = {});

// MatMul(q, Kᵀ) · scale -> Softmax -> MatMul(·, v) into y, as the exporters'
// SDPA (the model must hold a scalar initializer "scale"); node names start
// with `prefix`.
void addScaledDotProductAttention(ModelBuilder& mb, const std::string& q, const std::string& k, const std::string& v,
                                  const std::string& y, const std::string& prefix = "");

}  // namespace kiln::test
