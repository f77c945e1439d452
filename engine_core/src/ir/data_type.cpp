#include <kiln/data_type.h>
#include <kiln/error.h>

#include <string>

namespace kiln {

const char* toString(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "invalid argument";
    case ErrorCode::kInvalidModel: return "invalid model";
    case ErrorCode::kUnsupported: return "unsupported";
    case ErrorCode::kIoError: return "I/O error";
    case ErrorCode::kRuntimeError: return "runtime error";
    case ErrorCode::kInternal: return "internal error";
    case ErrorCode::kCancelled: return "cancelled";
  }
  return "error";
}

size_t byteSize(DataType type) {
  switch (type) {
    case DataType::kFloat64:
    case DataType::kInt64:
    case DataType::kUInt64: return 8;
    case DataType::kFloat32:
    case DataType::kInt32:
    case DataType::kUInt32: return 4;
    case DataType::kFloat16:
    case DataType::kBFloat16:
    case DataType::kInt16:
    case DataType::kUInt16: return 2;
    case DataType::kFloat8E4M3:
    case DataType::kFloat8E5M2:
    case DataType::kInt8:
    case DataType::kUInt8:
    case DataType::kBool: return 1;
    case DataType::kString:
    case DataType::kUndefined: return 0;
  }
  return 0;
}

std::string_view toString(DataType type) {
  switch (type) {
    case DataType::kUndefined: return "undefined";
    case DataType::kFloat32: return "float32";
    case DataType::kFloat16: return "float16";
    case DataType::kBFloat16: return "bfloat16";
    case DataType::kFloat64: return "float64";
    case DataType::kFloat8E4M3: return "float8e4m3";
    case DataType::kFloat8E5M2: return "float8e5m2";
    case DataType::kInt8: return "int8";
    case DataType::kInt16: return "int16";
    case DataType::kInt32: return "int32";
    case DataType::kInt64: return "int64";
    case DataType::kUInt8: return "uint8";
    case DataType::kUInt16: return "uint16";
    case DataType::kUInt32: return "uint32";
    case DataType::kUInt64: return "uint64";
    case DataType::kBool: return "bool";
    case DataType::kString: return "string";
  }
  return "undefined";
}

std::optional<DataType> parseDataType(std::string_view name) {
  for (int i = 1; i <= int(DataType::kString); ++i) {
    auto t = DataType(i);
    if (toString(t) == name) return t;
  }
  if (name == "float" || name == "fp32") return DataType::kFloat32;
  if (name == "half" || name == "fp16") return DataType::kFloat16;
  if (name == "bf16") return DataType::kBFloat16;
  if (name == "double") return DataType::kFloat64;
  if (name == "fp8") return DataType::kFloat8E4M3;
  return std::nullopt;
}

bool isFloatingPoint(DataType type) {
  switch (type) {
    case DataType::kFloat32:
    case DataType::kFloat16:
    case DataType::kBFloat16:
    case DataType::kFloat64:
    case DataType::kFloat8E4M3:
    case DataType::kFloat8E5M2: return true;
    default: return false;
  }
}

bool isInteger(DataType type) {
  switch (type) {
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kInt32:
    case DataType::kInt64:
    case DataType::kUInt8:
    case DataType::kUInt16:
    case DataType::kUInt32:
    case DataType::kUInt64: return true;
    default: return false;
  }
}

bool isSigned(DataType type) {
  switch (type) {
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kInt32:
    case DataType::kInt64: return true;
    default: return isFloatingPoint(type);
  }
}

}  // namespace kiln
