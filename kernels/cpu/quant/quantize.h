#pragma once
// Linear (affine) quantization: q = saturate(round_half_even(x / scale) + zero_point) and back.
// Per-axis variants see the tensor as [outer, axisLen, inner] with one scale and zero point per
// axis position; per-tensor is axisLen == 1 (the caller then passes outer * inner as inner).
#include <cstdint>

namespace kiln::kernels {

// `zeroPoint` may be null (zero). In: float, double, Float16, BFloat16 or int32. Q: any 8/16-bit integer.
template <class In, class Q>
void quantizeLinear(const In* x, const float* scale, const Q* zeroPoint, Q* y, int64_t outer, int64_t axisLen,
                    int64_t inner);

// Q: 8/16/32-bit integer. Out: float, double, Float16 or BFloat16.
template <class Q, class Out>
void dequantizeLinear(const Q* x, const float* scale, const Q* zeroPoint, Out* y, int64_t outer, int64_t axisLen,
                      int64_t inner);

// QuantizeLinear / DequantizeLinear to and from fp8 e4m3fn (ONNX opset 19+): y = e4m3(x / scale +
// zero), rounded once, saturated to +-448 unless `saturate` is false (NaN then); x = (e4m3 value -
// zero) * scale. The arithmetic of the CUDA kernels (kernels/cuda/quant/quant_math.h). In / Out:
// float, double, Float16 or BFloat16.
template <class In>
void quantizeLinearFp8(const In* x, const float* scale, const uint8_t* zeroPoint, uint8_t* y, int64_t outer,
                       int64_t axisLen, int64_t inner, bool saturate);
template <class Out>
void dequantizeLinearFp8(const uint8_t* x, const float* scale, const uint8_t* zeroPoint, Out* y, int64_t outer,
                         int64_t axisLen, int64_t inner);

// DynamicQuantizeLinear: uint8 quantization whose range [min(x, 0), max(x, 0)] maps onto [0, 255].
void dynamicQuantizeLinear(const float* x, int64_t count, uint8_t* y, float* scale, uint8_t* zeroPoint);

// Exact integer products of 8-bit matrices with zero points, batched like batchedMatMul (A_b at
// A + aOffsets[b], [M,K]; B_b at B + bOffsets[b], [K,N]; C_b at C + b*M*N). aZero has 1 (per
// tensor) or M (per row) entries, bZero 1 or N (per column); null means zero. Results wrap to int32.
template <class TA, class TB>
void integerMatMul(const TA* A, const TB* B, int32_t* C, int64_t batch, const int64_t* aOffsets,
                   const int64_t* bOffsets, int64_t M, int64_t N, int64_t K, const TA* aZero, int64_t aZeroCount,
                   const TB* bZero, int64_t bZeroCount);

// QLinearMatMul's output stage: y = saturate(round(acc * aScale[row] * bScale[col] / yScale) + yZero)
// over `batch` blocks of [M,N]; aScale has 1 or M entries, bScale 1 or N.
template <class Q>
void requantizeProducts(const int32_t* acc, int64_t batch, int64_t M, int64_t N, const float* aScale,
                        int64_t aScaleCount, const float* bScale, int64_t bScaleCount, float yScale, Q yZero, Q* y);

}  // namespace kiln::kernels
