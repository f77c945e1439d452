#pragma once
// INT4 weight-only weights (kernels/cpu/quant/int4_weight_format.h: packed [N, groups, G / 2],
// fp32 scales [N, groups], optional int8 zero points) dequantized into a dense row-major W [K, N]
// of a float type, w = scale * float(q - zero) rounded once into it: the CUDA weight-only step
// multiplies its activations by W with cuBLASLt. Asynchronous; no allocation.
#include <kernels/cuda/common/element_type.h>

#include <cuda_runtime.h>

#include <cstdint>

namespace kiln::kernels::cuda {

struct Int4WeightsView {
  const uint8_t* packed = nullptr;
  const float* scales = nullptr;
  const int8_t* zeros = nullptr;  // or null (symmetric)
  int64_t k = 0, n = 0, groupSize = 0;
};

// out: float32, float16 or bfloat16 [K, N].
cudaError_t dequantizeInt4Weights(const Int4WeightsView& w, void* out, ElementType outType, cudaStream_t stream);

}  // namespace kiln::kernels::cuda
