#pragma once
// The integer ops on the GPU with the CPU kernels' semantics (kernels/cpu/quant, kernels/cpu/conv):
// MatMulInteger / QLinearMatMul and ConvInteger / QLinearConv over int8 / uint8 operands minus
// their zero points, accumulated exactly in int32 (wrapping as int32 math does), the QLinear ops
// then requantized with round-half-to-even and saturation as the CPU does; and
// DynamicQuantizeLinear. Scales and zero points are device scalars or vectors. Asynchronous; no
// allocation; empty outputs are a no-op.
#include <kernels/cuda/common/element_type.h>

#include <cuda_runtime.h>

#include <cstdint>

namespace kiln::kernels::cuda {

constexpr int kMaxIntegerBatchRank = 8;

// Batched A [M, K] x B [K, N]: output matrix i (row-major, batch dims batchDims) multiplies A's
// matrix at the sum over batch dims of index * aStrides and B's likewise (stride 0 broadcasts).
struct IntegerMatMulShape {
  int64_t M = 1, N = 1, K = 1;
  int batchRank = 0;
  int64_t batchDims[kMaxIntegerBatchRank] = {};
  int64_t aStrides[kMaxIntegerBatchRank] = {};
  int64_t bStrides[kMaxIntegerBatchRank] = {};
};

// An 8-bit operand and its zero points: 1 (per tensor) or one per row of A / column of B (or per
// output channel of a convolution's weights); zero null means 0.
struct QuantOperand {
  const void* data = nullptr;
  ElementType type = ElementType::kUInt8;
  const void* zero = nullptr;
  int64_t zeroCount = 1;
};

// y (int32) = (A - aZero) x (B - bZero).
cudaError_t integerMatMul(const QuantOperand& a, const QuantOperand& b, const IntegerMatMulShape& shape, int32_t* y,
                          cudaStream_t stream);

// QLinearMatMul: y = saturate(round(acc * (aScale[row] / yScale * bScale[col])) + yZero) in yType
// (int8 / uint8, yZero's type); scales float32 with 1 or M (A) and 1 or N (B) values.
struct MatMulRequantize {
  const float* aScale = nullptr;
  int64_t aScaleCount = 1;
  const float* bScale = nullptr;
  int64_t bScaleCount = 1;
  const float* yScale = nullptr;
  const void* yZero = nullptr;
  ElementType yType = ElementType::kUInt8;
};
cudaError_t qlinearMatMul(const QuantOperand& a, const QuantOperand& b, const IntegerMatMulShape& shape,
                          const MatMulRequantize& requantize, void* y, cudaStream_t stream);

constexpr int kIntegerConvSpatialRank = 3;

// X [batch, inChannels, in...] and W [outChannels, inChannels / group, kernel...]; spatial axes
// beyond the tensors' own are 1.
struct IntegerConvShape {
  int64_t batch = 1, inChannels = 1, outChannels = 1, group = 1;
  int64_t in[kIntegerConvSpatialRank] = {1, 1, 1}, out[kIntegerConvSpatialRank] = {1, 1, 1};
  int64_t kernel[kIntegerConvSpatialRank] = {1, 1, 1}, stride[kIntegerConvSpatialRank] = {1, 1, 1};
  int64_t dilation[kIntegerConvSpatialRank] = {1, 1, 1}, padBegin[kIntegerConvSpatialRank] = {0, 0, 0};
};

// y (int32) = (X - xZero) (*) (W - wZero): x's zero point one value, w's 1 or one per output channel.
cudaError_t integerConv(const QuantOperand& x, const QuantOperand& w, const IntegerConvShape& shape, int32_t* y,
                        cudaStream_t stream);

// QLinearConv: y = saturate(round((acc + bias[m]) * (wScale[m] * xScale / yScale)) + yZero); bias
// (int32, may be null) one per output channel, wScale 1 or one per output channel.
struct ConvRequantize {
  const float* xScale = nullptr;
  const float* wScale = nullptr;
  int64_t wScaleCount = 1;
  const float* yScale = nullptr;
  const int32_t* bias = nullptr;
  const void* yZero = nullptr;  // may be null (0)
  ElementType yType = ElementType::kUInt8;
};
cudaError_t qlinearConv(const QuantOperand& x, const QuantOperand& w, const IntegerConvShape& shape,
                        const ConvRequantize& requantize, void* y, cudaStream_t stream);

// DynamicQuantizeLinear over n elements of x (float32, float16 or bfloat16, read as float): one
// block folds [min(x, 0), max(x, 0)], scale = (max - min) / 255, zeroPoint = saturate(round(-min /
// scale)), then y (uint8) = saturate(round(x / scale) + zeroPoint); scale written in scaleType.
// `workspace` holds kDynamicQuantizeWorkspaceBytes.
constexpr size_t kDynamicQuantizeWorkspaceBytes = 2 * sizeof(float);
cudaError_t dynamicQuantizeLinear(const void* x, ElementType type, int64_t n, uint8_t* y, void* scale,
                                  ElementType scaleType, uint8_t* zeroPoint, void* workspace, cudaStream_t stream);

}  // namespace kiln::kernels::cuda
