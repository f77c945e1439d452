#pragma once
// Tensors made from a few numbers: Range, EyeLike, Trilu (keeps a triangle of its input) and
// OneHot. Asynchronous; no allocation; empty outputs are a no-op.
#include <kernels/cuda/common/element_type.h>

#include <cuda_runtime.h>

#include <cstdint>

namespace kiln::kernels::cuda {

// ONNX Range's element count: max(ceil((limit - start) / delta), 0).
int64_t rangeCount(double start, double limit, double delta);

// dst[i] = start + i * delta for float types (float32, float16, bfloat16, float64): computed in
// double without fused multiply-add, then rounded to float32 and on to the narrow types (as the CPU
// kernel does; float64 keeps the double).
cudaError_t rangeFloat(void* dst, int64_t count, double start, double delta, ElementType type, cudaStream_t stream);
// dst[i] = start + i * delta for integer types, wrapping as the type does.
cudaError_t rangeInteger(void* dst, int64_t count, int64_t start, int64_t delta, ElementType type, cudaStream_t stream);

// dst [rows, cols]: one where column - row == k, zero elsewhere. Any numeric type, bool, fp8.
cudaError_t eyeLike(void* dst, int64_t rows, int64_t cols, int64_t k, ElementType type, cudaStream_t stream);

// Trilu over `batches` matrices [rows, cols]: upper keeps column - row >= k, lower keeps
// column - row <= k; the rest is zero. Any dtype, by size.
cudaError_t trilu(const void* src, void* dst, int64_t batches, int64_t rows, int64_t cols, int64_t k, bool upper,
                  ElementType type, cudaStream_t stream);

// OneHot: indices [outer, inner] (int32 or int64), dst [outer, depth, inner]; `values` is a device
// pointer to ONNX's [off, on] pair in dst's type. A negative index counts from the end (+ depth);
// one still outside [0, depth) makes no hot element (ONNX). Any dtype, by size.
cudaError_t oneHot(const void* indices, ElementType indexType, void* dst, int64_t outer, int64_t depth, int64_t inner,
                   const void* values, ElementType type, cudaStream_t stream);

// The bits of 1 in `type` (the low elementBytes(type) bytes), for EyeLike.
uint64_t oneBits(ElementType type);

}  // namespace kiln::kernels::cuda
