#pragma once
// INT4 weight-only GEMM with the dequantization in its prologue: Y [M, N] = epilogue(A [M, K] · W),
// A and Y row-major fp16 or bf16, W read as packed int4 from global memory
// (kernels/cpu/quant/int4_weight_format.h; Int4WeightsView from int4_dequantize.h). Each K-tile of
// W is loaded as its packed bytes (4 bits a weight) and group scales / zero points, dequantized
// into shared memory by the format's rule (w = scale * float(q - zero) in fp32, rounded once into
// the activations' type, as dequantizeInt4Weights does), then multiplied on the tensor cores
// (mma.sync m16n8k16, fp32 accumulation; sm_80 on). The epilogue runs on the fp32 sums (the
// optional fp32 bias [N], the residual before or after the fused activation), then Y is rounded
// once into its type. So results are the dequantize + cuBLASLt path's up to the accumulation order
// and the epilogue's roundings (one here, one a step there). Any M, N and K (the last group may be short); small
// products split K across blocks so a batch-1 (M = 1) product still fills the GPU, summing the parts in fp32 in the
// workspace (int4GemmWorkspaceBytes, a function of the shape alone). Asynchronous; no allocation.
#include "int4_dequantize.h"

#include <kernels/cpu/fused/epilogue.h>
#include <kernels/cuda/common/element_type.h>

#include <cuda_runtime.h>

#include <cstdint>

namespace kiln::kernels::cuda {

// The K-splits int4Gemm uses for this shape (1: no workspace).
int64_t int4GemmSplits(int64_t m, int64_t n, int64_t k);
// Workspace bytes int4Gemm needs for this shape (0 when it does not split K).
uint64_t int4GemmWorkspaceBytes(int64_t m, int64_t n, int64_t k);

// What is done to each fp32 sum v before it is rounded into Y:
//   v += bias[n]; v += r (before); v = activation(v); v += r (after)
// with r the residual [M, N] (Y's type and layout) where there is one.
struct Int4GemmEpilogue {
  const float* bias = nullptr;     // [N] or null
  const void* residual = nullptr;  // [M, N] of Y's type, or null
  bool residualBeforeActivation = true;
  Activation activation = Activation::kNone;
  float alpha = 0, beta = 0;  // Clip: min, max; HardSigmoid: alpha, beta; LeakyRelu: alpha
};

// y [m, n] = epilogue(a [m, k] · W); a and y of `type` (float16 or bfloat16), w.k == k.
// `workspace` holds int4GemmWorkspaceBytes(m, w.n, w.k) bytes (may be null when 0).
// cudaErrorInvalidValue for another type, an odd or non-positive group size, or a short workspace.
cudaError_t int4Gemm(const void* a, int64_t m, const Int4WeightsView& w, const Int4GemmEpilogue& epilogue, void* y,
                     ElementType type, void* workspace, uint64_t workspaceBytes, cudaStream_t stream);

}  // namespace kiln::kernels::cuda
