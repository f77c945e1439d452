#pragma once
// Pointwise (1x1) convolution of a channels-last input with few channels (C <= 128: the
// expansions of EfficientNet and MobileNet, 16 -> 96 channels at 112x112), bias, activation and a
// residual fused: Y[M, K] = act(X[M, C] · W[K, C]ᵀ + bias (+ residual)) on the tensor cores
// (mma.sync m16n8k16, fp32 sums). Such a layer writes six times the bytes it reads and multiplies
// little, so its speed is the store bandwidth: cuDNN's fused graph ran EfficientNet-B0's first
// expansion with SiLU at about 1 TB/s on the H200, and cuBLASLt has no SiLU epilogue (a second
// pass over the output). A warp takes 16 rows (pixels): their A fragments stay in registers (read
// once from global memory, the next tile's while this one's sums are stored) and meet a block's 64
// output channels of W in shared memory; the sums are staged in shared memory so that each lane
// adds bias and residual, activates, rounds once and stores whole 16-byte vectors of 8 channels.
// Blocks loop over row tiles; grid.y covers the output channels 64 at a time. float16 or bfloat16;
// asynchronous; no allocation.
#include <kernels/cpu/fused/epilogue.h>
#include <kernels/cuda/common/element_type.h>

#include <cuda_runtime.h>

#include <cstdint>

namespace kiln::kernels::cuda {

inline constexpr int64_t kNarrowConvMaxChannels = 128;  // input channels (the A fragments in registers)

struct NarrowPointwiseConvProblem {
  int64_t rows = 0;                          // M: the pixels, N·H·W
  int64_t channels = 0;                      // C, a multiple of 8
  int64_t outChannels = 0;                   // K, a multiple of 8
  ElementType type = ElementType::kFloat16;  // of every tensor: float16 or bfloat16
  Activation activation = Activation::kNone;
  float alpha = 0, beta = 0;  // Clip: min, max; HardSigmoid: alpha, beta; LeakyRelu: alpha
  bool residualBeforeActivation = true;
};

// Why the kernel cannot run the problem (the type, channel counts, 32-bit index limits), or null
// where it can.
const char* narrowPointwiseConvRefusal(const NarrowPointwiseConvProblem& p);

// x [M, C], w [K, C], bias [K] or null, residual [M, K] or null, y [M, K], all in p.type; x,
// residual and y 16-byte aligned. cudaErrorInvalidValue where the refusal names a reason or a
// pointer is null or misaligned; no rows is a no-op.
cudaError_t narrowPointwiseConv(const NarrowPointwiseConvProblem& p, const void* x, const void* w, const void* bias,
                                const void* residual, void* y, cudaStream_t stream);

}  // namespace kiln::kernels::cuda
