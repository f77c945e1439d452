#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace kiln {

// Element types of tensors. The numbering is Kiln's own; the ONNX mapping lives in the importer.
enum class DataType : uint8_t {
  kUndefined,
  kFloat32,
  kFloat16,
  kBFloat16,
  kFloat64,
  kFloat8E4M3,  // fp8 e4m3fn (finite, no infinities)
  kFloat8E5M2,
  kInt8,
  kInt16,
  kInt32,
  kInt64,
  kUInt8,
  kUInt16,
  kUInt32,
  kUInt64,
  kBool,
  kString,
};

// Bytes per element; 0 for kUndefined and kString (strings are not stored as raw bytes).
size_t byteSize(DataType type);
std::string_view toString(DataType type);            // "float32", "float16", ...
std::optional<DataType> parseDataType(std::string_view name);  // accepts toString names and numpy-ish aliases
bool isFloatingPoint(DataType type);
bool isInteger(DataType type);
bool isSigned(DataType type);

}  // namespace kiln
