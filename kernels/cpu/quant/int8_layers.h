#pragma once
// The arithmetic of Kiln's int8 layers (kiln.QuantizedConv / kiln.QuantizedMatMul): float
// activations quantized symmetrically, q = saturate(round_half_even(x / scale)) into [-128, 127];
// int8 weights; exact products accumulated in int32; dequantized into float32 as
// float(acc) * (xScale * wScale[c]), then the fused epilogue (bias, activation, residual).
#include "../conv/conv.h"
#include "../fused/epilogue.h"

#include <cstdint>

namespace kiln::kernels {

// q[i] = saturate(round_half_even(x[i] / scale)) in [-128, 127] (QuantizeLinear with zero point 0).
void quantizeSymmetric(const float* x, int64_t count, float scale, int8_t* q);

// The per-channel factors acc is multiplied by: xScale * wScales[c] (wScaleCount 1 or `channels`).
void dequantizeMultipliers(float xScale, const float* wScales, int64_t wScaleCount, int64_t channels, float* out);

// y[(r * channels + c) * plane + p] = float(acc[same]) * multipliers[c], for `rows` blocks of
// `channels` x `plane` (a convolution: rows = batch, plane = output pixels; a matmul: rows = batch
// x M, plane = 1).
void dequantizeAccumulators(const int32_t* acc, int64_t rows, int64_t channels, int64_t plane,
                            const float* multipliers, float* y);

// The reference int8 convolution: Y = epilogue(dequantize(conv(q(X), W)) + bias), W int8
// [M, C/group, kernel...], wScales 1 or M values, bias [M] or null.
void int8Convolution(const ConvShape& shape, const float* x, float xScale, const int8_t* w, const float* wScales,
                     int64_t wScaleCount, const float* bias, const Epilogue& epilogue, float* y);

}  // namespace kiln::kernels
