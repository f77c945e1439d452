#pragma once
// What the integer kernels share: the 8-bit operand types, zero points read per row / column /
// channel, and the CPU's saturating round (kernels/cpu/quant: rint, NaN to the low end).
#include "integer_math.h"

#include <kernels/cuda/common/launch.cuh>

#include <cmath>
#include <cstdint>

namespace kiln::kernels::cuda {

template <class Fn>
cudaError_t dispatchEightBit(ElementType type, Fn&& fn) {
  if (type == ElementType::kUInt8) return fn(uint8_t{});
  if (type == ElementType::kInt8) return fn(int8_t{});
  return cudaErrorInvalidValue;
}

template <class Q>
__device__ __forceinline__ int32_t zeroPointAt(const void* zero, int64_t count, int64_t index) {
  return zero ? int32_t(static_cast<const Q*>(zero)[count == 1 ? 0 : index]) : 0;
}

template <class Q>
__device__ __forceinline__ Q saturateRound(float v) {
  constexpr float lo = sizeof(Q) == 1 && Q(-1) < Q(0) ? -128.0f : 0.0f;
  constexpr float hi = sizeof(Q) == 1 && Q(-1) < Q(0) ? 127.0f : 255.0f;
  float r = rintf(v);
  if (!(r >= lo)) r = lo;
  if (r > hi) r = hi;
  return Q(r);
}

// int32 products and sums that wrap as the CPU's (exact, then truncated to 32 bits) do.
__device__ __forceinline__ int32_t wrappingMulAdd(int32_t acc, int32_t a, int32_t b) {
  return int32_t(uint32_t(acc) + uint32_t(a) * uint32_t(b));
}

}  // namespace kiln::kernels::cuda
