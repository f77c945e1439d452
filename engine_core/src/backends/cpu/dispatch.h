#pragma once
// Calls a generic lambda with a value of the C++ type that matches a runtime DataType:
//   dispatchFloat(t.dtype(), [&](auto tag) { using T = decltype(tag); ... });
#include <kernels/cpu/common/numeric_types.h>
#include <kiln/data_type.h>
#include <kiln/error.h>

#include <string>

namespace kiln {

using kernels::BFloat16;
using kernels::Float16;

namespace detail {
[[noreturn]] void throwUnsupportedType(DataType type, const char* family);
}

// float32, float64, float16, bfloat16
template <class Fn>
decltype(auto) dispatchFloat(DataType type, Fn&& fn) {
  switch (type) {
    case DataType::kFloat32: return fn(float{});
    case DataType::kFloat64: return fn(double{});
    case DataType::kFloat16: return fn(Float16{});
    case DataType::kBFloat16: return fn(BFloat16{});
    default: detail::throwUnsupportedType(type, "floating-point");
  }
}

// every integer type
template <class Fn>
decltype(auto) dispatchInteger(DataType type, Fn&& fn) {
  switch (type) {
    case DataType::kInt8: return fn(int8_t{});
    case DataType::kInt16: return fn(int16_t{});
    case DataType::kInt32: return fn(int32_t{});
    case DataType::kInt64: return fn(int64_t{});
    case DataType::kUInt8: return fn(uint8_t{});
    case DataType::kUInt16: return fn(uint16_t{});
    case DataType::kUInt32: return fn(uint32_t{});
    case DataType::kUInt64: return fn(uint64_t{});
    default: detail::throwUnsupportedType(type, "integer");
  }
}

// floats and integers (not bool, not string)
template <class Fn>
decltype(auto) dispatchNumeric(DataType type, Fn&& fn) {
  if (isFloatingPoint(type) && type != DataType::kFloat8E4M3 && type != DataType::kFloat8E5M2)
    return dispatchFloat(type, fn);
  if (isInteger(type)) return dispatchInteger(type, fn);
  detail::throwUnsupportedType(type, "numeric");
}

// anything with a fixed-size element, plus bool and string (for data-movement ops)
template <class Fn>
decltype(auto) dispatchAny(DataType type, Fn&& fn) {
  switch (type) {
    case DataType::kBool: return fn(bool{});
    case DataType::kString: return fn(std::string{});
    case DataType::kFloat8E4M3: return fn(kernels::Float8E4M3{});
    case DataType::kFloat8E5M2: return fn(kernels::Float8E5M2{});
    default: return dispatchNumeric(type, fn);
  }
}

}  // namespace kiln
