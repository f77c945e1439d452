#pragma once
// ONNX ReverseSequence: the first lengths[b] steps of each batch entry reversed, the rest copied.
#include <kernels/cuda/common/element_type.h>

#include <cuda_runtime.h>

#include <cstdint>

namespace kiln::kernels::cuda {

// src and dst [time, batch, inner] (batchMajor: [batch, time, inner]); lengths: `batch` int64
// values on the device, each in [0, time] (ONNX; others are clamped into it, so nothing is read out
// of bounds). Any dtype, by size.
cudaError_t reverseSequence(const void* src, void* dst, int64_t time, int64_t batch, int64_t inner,
                            const int64_t* lengths, bool batchMajor, ElementType type, cudaStream_t stream);

}  // namespace kiln::kernels::cuda
