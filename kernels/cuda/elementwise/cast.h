#pragma once
// Cast between any two element types (numeric, bool, fp8) on the GPU, with the CPU kernels' rules
// (kernels/cpu/elementwise/cast.h; cast_convert.h has them in short): fp8 always saturates, as
// the CPU does (ONNX's saturate=0 is not implemented there either). n dense elements on the
// device; asynchronous on `stream`. Same-type casts copy.
#include "kernels/cuda/common/element_type.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace kiln::kernels::cuda {

cudaError_t launchCast(const void* in, ElementType from, void* out, ElementType to, int64_t n, cudaStream_t stream);

}  // namespace kiln::kernels::cuda
