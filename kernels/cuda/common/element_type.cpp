#include "element_type.h"

namespace kiln::kernels::cuda {

const char* toString(ElementType type) {
  switch (type) {
    case ElementType::kFloat32: return "float32";
    case ElementType::kFloat16: return "float16";
    case ElementType::kBFloat16: return "bfloat16";
    case ElementType::kFloat64: return "float64";
    case ElementType::kInt8: return "int8";
    case ElementType::kInt16: return "int16";
    case ElementType::kInt32: return "int32";
    case ElementType::kInt64: return "int64";
    case ElementType::kUInt8: return "uint8";
    case ElementType::kUInt16: return "uint16";
    case ElementType::kUInt32: return "uint32";
    case ElementType::kUInt64: return "uint64";
    case ElementType::kBool: return "bool";
    case ElementType::kFloat8E4M3: return "float8e4m3fn";
    case ElementType::kFloat8E5M2: return "float8e5m2";
  }
  return "unknown";
}

}  // namespace kiln::kernels::cuda
