#pragma once
// QuantizeLinear / DequantizeLinear on the GPU: y = saturate(round_half_even(x / scale) + zero_point)
// and x = (q - zero_point) * scale, with per-tensor, per-axis or blocked (block_size) scales and
// zero points. Quantized types: int8, uint8, int16, uint16, int32, fp8 e4m3fn and e5m2 (saturate
// attribute). Arithmetic as the CPU kernel (kernels/cpu/quant) does it, in float. Asynchronous;
// no allocation; empty tensors are a no-op.
#include "quant_math.h"

#include <kernels/cuda/common/element_type.h>

#include <cuda_runtime.h>

#include <cstdint>
#include <optional>
#include <vector>

namespace kiln::kernels::cuda {

// The layout of x [dims] for a scale of `scaleDims` (the zero point has the same shape): a
// one-element scale is per tensor; blockSize > 0 is blocked along `axis` (scale dims are x's with
// the axis' length divided by blockSize, rounded up); otherwise a 1-D scale of dims[axis] entries is
// per axis. axis may be negative. nullopt when the shapes do not fit.
std::optional<QuantLayout> quantLayout(const std::vector<int64_t>& dims, int axis,
                                       const std::vector<int64_t>& scaleDims, int64_t blockSize);

// x: float32, float16, bfloat16, float64 or int32. scale: float32, float16 or bfloat16 (read as
// float). zeroPoint: null (zero) or of yType. saturate applies to the fp8 types only.
cudaError_t quantizeLinear(const void* x, ElementType xType, const void* scale, ElementType scaleType,
                           const void* zeroPoint, void* y, ElementType yType, const QuantLayout& layout, bool saturate,
                           cudaStream_t stream);

// x and zeroPoint (null: zero) of a quantized type; y: float32, float16, bfloat16 or float64.
cudaError_t dequantizeLinear(const void* x, ElementType xType, const void* scale, ElementType scaleType,
                             const void* zeroPoint, void* y, ElementType yType, const QuantLayout& layout,
                             cudaStream_t stream);

}  // namespace kiln::kernels::cuda
