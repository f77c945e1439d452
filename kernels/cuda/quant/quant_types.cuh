#pragma once
// Device-side views of the quantized types: integers as themselves, fp8 as bytes with their own
// encoding; and scales of float32 / float16 / bfloat16 read as float.
#include "quant_math.h"

#include <kernels/cuda/common/device_types.cuh>

#include <type_traits>

namespace kiln::kernels::cuda {

template <Float8Kind kKind>
struct Float8Storage {
  uint8_t bits;
};
using Fp8E4M3 = Float8Storage<Float8Kind::kE4M3>;
using Fp8E5M2 = Float8Storage<Float8Kind::kE5M2>;

template <class Q>
struct IsFloat8 : std::false_type {};
template <Float8Kind kKind>
struct IsFloat8<Float8Storage<kKind>> : std::true_type {};

// Calls fn(tag) with the device type of a quantized ElementType.
template <class Fn>
cudaError_t dispatchQuantized(ElementType type, Fn&& fn) {
  switch (type) {
    case ElementType::kInt8: return fn(int8_t{});
    case ElementType::kUInt8: return fn(uint8_t{});
    case ElementType::kInt16: return fn(int16_t{});
    case ElementType::kUInt16: return fn(uint16_t{});
    case ElementType::kInt32: return fn(int32_t{});
    case ElementType::kFloat8E4M3: return fn(Fp8E4M3{});
    case ElementType::kFloat8E5M2: return fn(Fp8E5M2{});
    default: return cudaErrorInvalidValue;
  }
}

struct ScaleReader {
  const void* data;
  ElementType type;

  __device__ __forceinline__ float operator[](int64_t i) const {
    switch (type) {
      case ElementType::kFloat16: return __half2float(static_cast<const __half*>(data)[i]);
      case ElementType::kBFloat16: return __bfloat162float(static_cast<const __nv_bfloat16*>(data)[i]);
      default: return static_cast<const float*>(data)[i];
    }
  }
};

inline bool isScaleType(ElementType type) {
  return type == ElementType::kFloat32 || type == ElementType::kFloat16 || type == ElementType::kBFloat16;
}

}  // namespace kiln::kernels::cuda
