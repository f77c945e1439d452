#pragma once
// fp16 / bf16 values moved as raw 16-bit words (the tensor-core kernels stage their tiles as
// uint16_t): a float rounded to T's bits, T's bits widened to float, and two floats rounded into
// one 32-bit pair (one conversion instruction on sm_80 and later).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace kiln::kernels::cuda {

template <class T>
__device__ __forceinline__ uint16_t bitsOf(float v) {
  static_assert(std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>);
  const T h = static_cast<T>(v);  // round to nearest even
  uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}

template <class T>
__device__ __forceinline__ float valueOf(uint16_t b) {
  static_assert(std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>);
  T h;
  std::memcpy(&h, &b, 2);
  return static_cast<float>(h);
}

// low at the lower address.
template <class T>
__device__ __forceinline__ uint32_t packPair(float low, float high) {
  uint32_t bits;
  if constexpr (std::is_same_v<T, __half>) {
    const __half2 pair = __floats2half2_rn(low, high);
    std::memcpy(&bits, &pair, 4);
  } else {
    static_assert(std::is_same_v<T, __nv_bfloat16>);
    const __nv_bfloat162 pair = __floats2bfloat162_rn(low, high);
    std::memcpy(&bits, &pair, 4);
  }
  return bits;
}

}  // namespace kiln::kernels::cuda
