#pragma once
// The device C++ type of each ElementType, and a dispatcher that calls a generic lambda with it:
//   return dispatchNumeric(type, [&](auto tag) { using T = decltype(tag); return launch<T>(...); });
// Arithmetic on half and bfloat16 goes through float (toCompute / fromCompute).
#include "element_type.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace kiln::kernels::cuda {

// The type arithmetic on T happens in: float for the narrow floats, T itself otherwise.
template <class T> struct ComputeTypeOf { using type = T; };
template <> struct ComputeTypeOf<__half> { using type = float; };
template <> struct ComputeTypeOf<__nv_bfloat16> { using type = float; };
template <> struct ComputeTypeOf<__nv_fp8_e4m3> { using type = float; };
template <> struct ComputeTypeOf<__nv_fp8_e5m2> { using type = float; };
template <class T> using ComputeType = typename ComputeTypeOf<T>::type;

template <class T>
__host__ __device__ __forceinline__ ComputeType<T> toCompute(T v) { return static_cast<ComputeType<T>>(v); }
template <class T>
__host__ __device__ __forceinline__ T fromCompute(ComputeType<T> v) { return static_cast<T>(v); }

// Returns cudaErrorInvalidValue for a type the family does not take.
template <class Fn>
cudaError_t dispatchFloat(ElementType type, Fn&& fn) {
  switch (type) {
    case ElementType::kFloat32: return fn(float{});
    case ElementType::kFloat16: return fn(__half{});
    case ElementType::kBFloat16: return fn(__nv_bfloat16{});
    case ElementType::kFloat64: return fn(double{});
    default: return cudaErrorInvalidValue;
  }
}

template <class Fn>
cudaError_t dispatchInteger(ElementType type, Fn&& fn) {
  switch (type) {
    case ElementType::kInt8: return fn(int8_t{});
    case ElementType::kInt16: return fn(int16_t{});
    case ElementType::kInt32: return fn(int32_t{});
    case ElementType::kInt64: return fn(int64_t{});
    case ElementType::kUInt8: return fn(uint8_t{});
    case ElementType::kUInt16: return fn(uint16_t{});
    case ElementType::kUInt32: return fn(uint32_t{});
    case ElementType::kUInt64: return fn(uint64_t{});
    default: return cudaErrorInvalidValue;
  }
}

template <class Fn>
cudaError_t dispatchNumeric(ElementType type, Fn&& fn) {
  if (type == ElementType::kFloat32 || type == ElementType::kFloat16 || type == ElementType::kBFloat16 ||
      type == ElementType::kFloat64)
    return dispatchFloat(type, fn);
  return dispatchInteger(type, fn);
}

// Data movement: any type by its size (bool, fp8 and every numeric type).
template <class Fn>
cudaError_t dispatchBySize(ElementType type, Fn&& fn) {
  switch (elementBytes(type)) {
    case 1: return fn(uint8_t{});
    case 2: return fn(uint16_t{});
    case 4: return fn(uint32_t{});
    case 8: return fn(uint64_t{});
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace kiln::kernels::cuda
