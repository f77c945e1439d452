#pragma once
// One-input elementwise ops on the GPU, with the CPU kernels' op enum and semantics
// (kernels/cpu/elementwise/unary.h). Pointers are device pointers to n dense elements; every call
// enqueues on `stream` and returns the launch status, cudaErrorInvalidValue for a type the op
// does not take. n == 0 does nothing.
#include "kernels/cpu/elementwise/unary.h"
#include "kernels/cuda/common/element_type.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace kiln::kernels::cuda {

// Float types (float32, float16, bfloat16, float64; the 16-bit ones compute in float) take every
// op but BitwiseNot; integer types take Neg, Abs, Sign, Relu, Shrink and BitwiseNot.
cudaError_t launchUnary(kernels::UnaryOp op, const void* in, void* out, int64_t n, ElementType type,
                        const kernels::UnaryParams& params, cudaStream_t stream);

// out = min(max(in, *lo), *hi) for any numeric type; lo and hi point to one device element of
// `type` each, or are null (no bound). hi wins when lo > hi; NaN stays NaN.
cudaError_t launchClip(const void* in, void* out, int64_t n, ElementType type, const void* lo, const void* hi,
                       cudaStream_t stream);

// Not on bool tensors.
cudaError_t launchNot(const void* in, void* out, int64_t n, cudaStream_t stream);

// bool out, float types in.
cudaError_t launchIsNaN(const void* in, void* out, int64_t n, ElementType type, cudaStream_t stream);
cudaError_t launchIsInf(const void* in, void* out, int64_t n, ElementType type, bool detectPositive,
                        bool detectNegative, cudaStream_t stream);

}  // namespace kiln::kernels::cuda
