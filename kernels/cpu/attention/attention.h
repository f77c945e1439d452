#pragma once
// Scaled dot-product attention on float32, one (batch, head) slice at a time:
//   out = softmax(q · kᵀ · scale + mask) · v, softmax over the key axis.
#include <cstdint>

namespace kiln::kernels {

struct AttentionProblem {
  int64_t batch = 1;        // product of the leading dims (batch x heads)
  int64_t queryLength = 0;  // Lq
  int64_t keyLength = 0;    // Lk
  int64_t headDim = 0;      // D
  int64_t valueDim = 0;     // Dv
  bool keyTransposed = false;  // k given as [D, Lk] per slice instead of [Lk, D]
  float scale = 1.0f;
  // Optional additive mask: element (b, i, j) is mask[maskOffsets[b] + i * maskRowStride + j * maskColStride].
  const float* mask = nullptr;
  const int64_t* maskOffsets = nullptr;
  int64_t maskRowStride = 0, maskColStride = 0;
};

// q: [batch, Lq, D], k: [batch, Lk, D] (or [batch, D, Lk]), v: [batch, Lk, Dv], out: [batch, Lq, Dv].
void attention(const AttentionProblem& p, const float* q, const float* k, const float* v, float* out);

}  // namespace kiln::kernels
