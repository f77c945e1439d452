#pragma once
// The arithmetic of Kiln's int8 layers (kiln.QuantizedConv / kiln.QuantizedMatMul): an activation
// quantized with its scale and zero point, q = saturate(round_half_even(x / scale) + zero) into the
// range of int8 or uint8 (or given already quantized); int8 weights; exact products of (q - zero)
// and the weights accumulated as int32 would; dequantized into float32 as
// float(acc) * (xScale * wScale[c]), then the fused epilogue (bias, activation, residual).
#include "../conv/conv.h"
#include "../fused/epilogue.h"

#include <cstdint>

namespace kiln::kernels {

// The integers an int8 layer multiplies, q - zero, from floats quantized here (QuantizeLinear's
// rule into Q's range) or from values already quantized. |q - zero| <= 255. Q: int8_t or uint8_t.
template <class Q>
void centeredFromFloat(const float* x, int64_t count, float scale, Q zero, int16_t* centered);
template <class Q>
void centeredFromQuantized(const Q* q, int64_t count, Q zero, int16_t* centered);

// The per-channel factors acc is multiplied by: xScale * wScales[c] (wScaleCount 1 or `channels`).
void dequantizeMultipliers(float xScale, const float* wScales, int64_t wScaleCount, int64_t channels, float* out);

// y[(r * channels + c) * plane + p] = float(acc[same]) * multipliers[c], for `rows` blocks of
// `channels` x `plane` (a convolution: rows = batch, plane = output pixels; a matmul: rows = batch
// x M, plane = 1).
void dequantizeAccumulators(const int32_t* acc, int64_t rows, int64_t channels, int64_t plane,
                            const float* multipliers, float* y);

// y[n, m, p] *= multipliers[m], then the epilogue with bias[m]: the dequantization of a quantized
// convolution's sums (int8's exact ones, fp8's and fp4's fp32 ones), in place.
void dequantizeConvolutionSums(const ConvShape& shape, const float* multipliers, const float* bias,
                               const Epilogue& epilogue, float* y);

// The same from the exact sums as int32 (acc laid out as Y, e.g. oneDNN's; see onednn_int8.h):
// y = epilogue(float(acc) * xScale * wScales[m] + bias[m]), the values int8Convolution gives.
void dequantizeConvolutionAccumulators(const ConvShape& shape, const int32_t* acc, float xScale, const float* wScales,
                                       int64_t wScaleCount, const float* bias, const Epilogue& epilogue, float* y);

// The reference int8 convolution: Y = epilogue(dequantize(conv(X, W)) + bias), X the centered
// input (q - zero), W int8 [M, C/group, kernel...], wScales 1 or M values, bias [M] or null.
void int8Convolution(const ConvShape& shape, const int16_t* x, float xScale, const int8_t* w, const float* wScales,
                     int64_t wScaleCount, const float* bias, const Epilogue& epilogue, float* y);

}  // namespace kiln::kernels
