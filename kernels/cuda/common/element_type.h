#pragma once
// The element types CUDA kernels read and write. The engine maps its DataType onto these; the
// kernels know nothing else of the engine.
#include <cstddef>
#include <cstdint>

namespace kiln::kernels::cuda {

enum class ElementType : uint8_t {
  kFloat32, kFloat16, kBFloat16, kFloat64,
  kInt8, kInt16, kInt32, kInt64,
  kUInt8, kUInt16, kUInt32, kUInt64,
  kBool, kFloat8E4M3, kFloat8E5M2,
};

constexpr size_t elementBytes(ElementType type) {
  switch (type) {
    case ElementType::kFloat64: case ElementType::kInt64: case ElementType::kUInt64: return 8;
    case ElementType::kFloat32: case ElementType::kInt32: case ElementType::kUInt32: return 4;
    case ElementType::kFloat16: case ElementType::kBFloat16: case ElementType::kInt16: case ElementType::kUInt16: return 2;
    default: return 1;
  }
}

constexpr bool isFloatType(ElementType type) {
  return type == ElementType::kFloat32 || type == ElementType::kFloat16 || type == ElementType::kBFloat16 ||
         type == ElementType::kFloat64 || type == ElementType::kFloat8E4M3 || type == ElementType::kFloat8E5M2;
}

const char* toString(ElementType type);

}  // namespace kiln::kernels::cuda
