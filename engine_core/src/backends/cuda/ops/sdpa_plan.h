#pragma once
// kiln.Attention as cuDNN's single SDPA operation sees it (cudnn_sdpa_graph.h): Q, K, V and the
// output as 4-D [B, H, L, D] views of the tensors as stored, through their strides (the ones the
// flash kernel reads, attention_plan.h), so interleaved heads and a packed QKV product are read
// and written in place; or why cuDNN cannot take the layer. Plain host code: tests/cuda_plans
// checks the views against the layouts kiln.Attention carries.
#include "attention_plan.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::cuda {

// cuDNN's SDPA head dims: multiples of 8 (16-byte rows in fp16 / bf16), at most this.
inline constexpr int64_t kSdpaMaxHeadDim = 256;

struct SdpaLayout {
  // Q, K, V and the output (AttentionInput order, the output at fused::kAttentionOutput): dims
  // [B, H, L, D] (K [B, H, Lk, D] whether or not the layer gives it transposed) and strides.
  std::vector<int64_t> dims[4], strides[4];
  // Set: why cuDNN's SDPA operation cannot compute the layer (the other fields are then unset).
  std::string refusal;
};

// The views for Q, K, V stored with `storedInputs` (the layer's input dims) as `plan` says, in
// `storage`. The leading batch dims fold into B where their strides allow; the last is H.
// Refused: float32 (cuDNN's SDPA is fp16 / bf16), a mask (the single SDPA operation of cuDNN
// 9.19 adds none: bias and causal bands come with its subgraph attribute in 9.21), head dims off
// cuDNN's, a head dim that is not contiguous (K given as [..., D, Lk]), nothing to compute.
SdpaLayout sdpaLayoutOf(const AttentionPlan& plan, const LayerShapes& storedInputs, DataType storage);

}  // namespace kiln::cuda
