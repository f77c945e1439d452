#pragma once
// Kiln's own 8-bit forward convolution (kiln.QuantizedConv's int8 and fp8 e4m3 tactics
// kiln.int8conv / kiln.fp8conv): an implicit GEMM on the tensor cores, Y[M, K] = X'[M, R·S·Cp] ·
// W[K, R·S·Cp]ᵀ with M = N·P·Q output pixels, X' the im2col rows of X gathered on the fly (never
// written), so no im2col copy and no sums in memory. Channels-last: X [N, H, W, Cp] and W [K, R, S, Cp]
// 8-bit (int8 values or e4m3 codes) with Cp a multiple of 16, so a 16-byte chunk of a row lies in
// one tap (r, s); a padded pixel reads as 0 (symmetric quantization: x = 0 is q = 0, e4m3 0 is the
// byte 0). int8 sums are exact in int32 (mma.sync m16n8k32 s8, sm_80 on), fp8 ones in fp32 (m16n8k32
// e4m3, sm_89 on: a launch elsewhere is refused at the tactic). The epilogue stages the sums in shared
// memory and stores 16-byte vectors of a pixel's channels, with the arithmetic of dequantizeEpilogue
// (quantized_gemm.h) and the CPU:
//   v = float(acc) * multipliers[k] (+ bias[k]) (+ residual) ; v = act(v) (+ residual)
// written as float32 / float16 / bfloat16, or as int8 / e4m3 quantize(v, outputScale, outputZero)
// (quant_math.h). Y and the residual are [N, P, Q, K] (channels-last), K a multiple of 16.
// Block tiles are the Int8ConvTile configs (each its own tactic): 256, 128 or 64 pixels x 128 or 64
// channels x 64 bytes of reduction, 8 or 4 warps, a multi-stage cp.async pipeline (16-byte copies,
// zero-filled for padding), ldmatrix from XOR-swizzled shared rows. Asynchronous; no allocation.
#include <kernels/cpu/fused/epilogue.h>
#include <kernels/cuda/common/element_type.h>

#include <cuda_runtime.h>

#include <cstdint>

namespace kiln::kernels::cuda {

// Block tile (pixels x output channels), each a tactic the builder times.
enum class Int8ConvTile : int {
  k128x128 = 0,  // 8 warps of 64 x 32: the big layers
  k128x64 = 1,   // 8 warps of 32 x 32: layers of 64 output channels
  k64x64 = 2,    // 4 warps of 32 x 32: small images, few blocks
  k256x64 = 3,   // 8 warps of 64 x 32: layers of 64 output channels, fewer filter reloads
};
inline constexpr int kInt8ConvTiles = 4;

struct Int8ConvProblem {
  const void* x = nullptr;  // [batch, inH, inW, channels] int8 / e4m3
  const void* w = nullptr;  // [outChannels, kernelH, kernelW, channels] of the same type
  bool fp8 = false;
  int64_t batch = 0, inH = 0, inW = 0, channels = 0;  // channels: padded, a multiple of 16
  int64_t outH = 0, outW = 0, outChannels = 0;        // outChannels: a multiple of 16
  int64_t kernelH = 1, kernelW = 1, strideH = 1, strideW = 1, dilationH = 1, dilationW = 1;
  int64_t padTop = 0, padLeft = 0;
  // The epilogue (quantized_gemm.h's DequantizeEpilogue, channels-last, without zero points).
  const float* multipliers = nullptr;  // [outChannels]: x_scale * w_scale[k]
  const float* bias = nullptr;         // [outChannels] or null
  const void* residual = nullptr;      // [batch, outH, outW, outChannels] float32 / float16 / bfloat16, or null
  // Or int8 (int8 convolutions only): added as __fmul_rn(float(r_q), residualScale)
  // (engine_core/src/ops/quantized.h's kResidualScaleInput), read as 16-byte vectors where aligned.
  ElementType residualType = ElementType::kFloat32;
  float residualScale = 1;
  bool residualBeforeActivation = true;
  Activation activation = Activation::kNone;
  float alpha = 0, beta = 0;  // Clip: min, max; HardSigmoid: alpha, beta; LeakyRelu: alpha
  float outputScale = 1;      // of an int8 / e4m3 output
  int32_t outputZero = 0;     // int8: the zero point; e4m3: its code

  int64_t rows() const { return batch * outH * outW; }
};

// Why the kernel cannot run this problem (channel counts off 16, 32-bit index limits, output
// dims that do not follow from the window), or null when it can.
const char* int8ConvRefusal(const Int8ConvProblem& p);
inline bool int8ConvTakes(const Int8ConvProblem& p) { return int8ConvRefusal(p) == nullptr; }

// y [N, P, Q, K] of yType: float32, float16, bfloat16, int8 (int8 layers) or fp8 e4m3.
// cudaErrorInvalidValue where int8ConvRefusal names a reason or for another output type; empty
// problems are a no-op.
cudaError_t int8Conv(const Int8ConvProblem& p, Int8ConvTile tile, void* y, ElementType yType, cudaStream_t stream);

const char* toString(Int8ConvTile tile);

}  // namespace kiln::kernels::cuda
