#pragma once
// The arithmetic of Kiln's fp8 and fp4 layers (kiln.QuantizedConv / QuantizedMatMul with precision
// fp8 or fp4), emulated in float with exactly the values the GPU's tensor cores multiply: operands
// encoded to fp8 e4m3 or NVFP4 (e2m1 values with an e4m3 scale per block of 16 along K) by
// small_floats.h and decoded back, products summed in fp32, then dequantized per output channel and
// the fused epilogue, as for the int8 layers (int8_layers.h).
#include "../conv/conv.h"
#include "../fused/epilogue.h"

#include <cstdint>

namespace kiln::kernels {

// out[i] = decode(e4m3(x[i] / scale)): the fp8 values of x (saturated to +-448, NaN kept), before
// the scale multiplies them again.
void fp8Values(const float* x, int64_t count, float scale, float* out);
// out[i] = decode(codes[i]): fp8 values already encoded.
void fp8Decoded(const uint8_t* codes, int64_t count, float* out);

// A tensor seen as [outer, axisLen, inner], quantized in blocks of `blockSize` consecutive
// positions along the axis (the last block of each run may be shorter, as if padded with zeros).
struct BlockedAxis {
  int64_t outer = 1, axisLen = 1, inner = 1, blockSize = 16;
  int64_t blocks() const { return (axisLen + blockSize - 1) / blockSize; }
  int64_t scaleCount() const { return outer * blocks() * inner; }  // [outer, blocks, inner]
};

// NVFP4 with the per-tensor scale `tensorScale`: each block's scale s_b = e4m3(amax_b / (6 *
// tensorScale)) into blockScales ([outer, blocks, inner] codes), each value e2m1(x / (s_b *
// tensorScale)) into codes (x's shape, one code a byte; 0 where s_b is 0).
void nvfp4Quantize(const float* x, const BlockedAxis& layout, float tensorScale, uint8_t* codes, uint8_t* blockScales);
// out = e2m1(code) * e4m3(s_b): the values the tensor cores multiply, before the per-tensor scale.
void nvfp4Decoded(const uint8_t* codes, const uint8_t* blockScales, const BlockedAxis& layout, float* out);
// Both: the NVFP4 values of x without the per-tensor scale.
void nvfp4Values(const float* x, const BlockedAxis& layout, float tensorScale, float* out);

// Y = epilogue(conv(X, W) * multipliers[m] + bias[m]): a convolution of decoded operands summed
// in fp32, dequantized per output channel (multipliers: x_scale * w_scale[m]).
void dequantizedConvolution(const ConvShape& shape, const float* x, const float* w, const float* multipliers,
                            const float* bias, const Epilogue& epilogue, float* y);

// C_b = (A_b · B_b) * multipliers[n]: batched as batchedMatMul (gemm.h) on decoded operands, summed
// in fp32, each column dequantized (multipliers: a_scale * b_scale[n]). The epilogue is the caller's.
void dequantizedMatMul(const float* A, const float* B, float* C, int64_t batch, const int64_t* aOffsets,
                       const int64_t* bOffsets, int64_t M, int64_t N, int64_t K, const float* multipliers);

}  // namespace kiln::kernels
