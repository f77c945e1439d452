#pragma once
// Small transformers built in code with the graph shapes Hugging Face's models take when torch.onnx
// (opset 17, the legacy exporter, static shapes) writes them, with random weights: BERT (separate
// Q, K, V MatMul + Add, heads reshaped and transposed, an additive mask, an erf GELU) and GPT-2
// (Conv1D as Reshape -> Gemm -> Reshape with [in, out] weights, c_attn's packed QKV cut by a Split,
// a causal Where, the tanh GELU). Token ids in, embeddings and LayerNorms around the blocks. The
// tensor-parallel tests split them.
#include "common/test_models.h"

#include <cstdint>

namespace kiln::test {

struct TransformerDims {
  int64_t batch = 1, length = 7, heads = 4, depth = 16, mlp = 256, layers = 2, vocab = 11;
  // The other forms exporters write: BERT's attention as torch's SDPA decomposition (Q and Kᵀ each
  // scaled by 1 / D^¼ before their product); GPT-2's Conv1D as MatMul + Add on the 3-D activation.
  bool sdpa = false;
  bool conv1dAsMatMul = false;
  // BERT with a dynamic batch: reshape targets built at run time from Shape, as exports with
  // dynamic axes have them (Concat of the activation's leading dims and constant heads, depth).
  bool dynamicBatch = false;
  int64_t width() const { return heads * depth; }
};

// input_ids int64 [B, L] -> y float [B, L, width].
ModelBuilder bertLikeModel(const TransformerDims& dims = {});
ModelBuilder gpt2LikeModel(const TransformerDims& dims = {});

}  // namespace kiln::test
