#pragma once
// The order the selection ops compare elements in, as the CPU kernels do: bool as a byte, half and
// bfloat16 as float, the rest as themselves.
#include <kernels/cuda/common/device_types.cuh>

#include <cmath>

namespace kiln::kernels::cuda {

template <class Fn>
cudaError_t dispatchComparable(ElementType type, Fn&& fn) {
  if (type == ElementType::kBool) return fn(uint8_t{});
  return dispatchNumeric(type, fn);
}

// Multiplication that the compiler may not fuse into a following add: the CPU kernels round the
// product first, and selection decisions (IoU against a threshold) must agree with them exactly.
__device__ __forceinline__ float productRounded(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

}  // namespace kiln::kernels::cuda
