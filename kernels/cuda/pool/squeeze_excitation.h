#pragma once
// Squeeze-and-excitation's gate (kiln.SqueezeExcitation, ops/fused.cpp), with the CPU kernel's
// semantics:
//   gate[n] = excite(W2 · squeeze(W1 · mean(x[n]) + b1) + b2)
// the mean over the spatial positions of each channel, the activations those of the CPU's fused
// epilogue (kernels/cpu/fused/epilogue.h). EfficientNet and MobileNetV3 end every block with one;
// as a global pool (two kernels where few images split their positions over blocks) and two 1x1
// convolutions on [N, C, 1, 1] they were four launches of a few microseconds each at batch 1.
// Here: the pool's packed channels-last kernel leaves fp32 sums per split, one kernel finishes
// them and runs the first product, one more the second (a warp per weight row, the rows spread
// over blocks: latency, not arithmetic, bounds such small products; fp32 throughout). Channels-
// first inputs, channel counts that are not whole 16-byte vectors and misaligned inputs are pooled
// by globalPool first. float32, float16, bfloat16. Asynchronous; allocates nothing.
#include "pool_window.h"

#include <kernels/cpu/fused/epilogue.h>
#include <kernels/cuda/common/element_type.h>

#include <cuda_runtime.h>

#include <cstdint>

namespace kiln::kernels::cuda {

struct SqueezeExcitation {
  int64_t batch = 0, channels = 0, spatial = 0;  // x: [batch, channels, spatial] or [batch, spatial, channels]
  int64_t hidden = 0, outChannels = 0;           // W1 [hidden, channels], W2 [outChannels, hidden]
  Activation squeeze = Activation::kNone, excite = Activation::kNone;
  float squeezeAlpha = 0, squeezeBeta = 0, exciteAlpha = 0, exciteBeta = 0;  // as a fused epilogue's
};

// Whether the kernels take the problem: a block holds an image's means, or its hidden values, in
// shared memory (channels + hidden within kSqueezeExcitationMaxValues).
inline constexpr int64_t kSqueezeExcitationMaxValues = 12288;
bool squeezeExcitationTakes(const SqueezeExcitation& p);

// Workspace bytes for these dims, layout and type, whatever x's alignment (16-byte aligned when
// passed; never 0: the hidden values live there).
uint64_t squeezeExcitationWorkspaceBytes(const SqueezeExcitation& p, PoolLayout layout, ElementType type);

// x, w1, b1, w2, b2, gate in `type`; b1 and b2 may be null (no bias). gate is [batch, outChannels].
// cudaErrorInvalidValue for a problem squeezeExcitationTakes refuses or a workspace too small.
cudaError_t squeezeExcitation(const SqueezeExcitation& p, const void* x, const void* w1, const void* b1, const void* w2,
                              const void* b2, void* gate, PoolLayout layout, ElementType type, void* workspace,
                              uint64_t workspaceBytes, cudaStream_t stream);

}  // namespace kiln::kernels::cuda
