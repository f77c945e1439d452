#pragma once
// How Kiln's data types and reductions travel through NCCL, without including nccl.h (CI tests
// it where NCCL is absent; nccl_communicator.cpp checks the values against the header). Reductions
// need NCCL's own type; collectives that only move data take any fixed-size type, as bytes where
// NCCL has no type of that kind.
#include <kiln/communicator.h>
#include <kiln/error.h>

#include <optional>
#include <string>

namespace kiln::nccl {

// ncclDataType_t's values (nccl.h 2.x).
enum class NcclType : int {
  kInt8 = 0,
  kUint8 = 1,
  kInt32 = 2,
  kUint32 = 3,
  kInt64 = 4,
  kUint64 = 5,
  kFloat16 = 6,
  kFloat32 = 7,
  kFloat64 = 8,
  kBfloat16 = 9,
  kFloat8e4m3 = 10,  // NCCL 2.24 and later
  kFloat8e5m2 = 11,
};

// ncclRedOp_t's values.
enum class NcclReduction : int { kSum = 0, kProd = 1, kMax = 2, kMin = 3 };

// `count` values of a Kiln type are `count * valuesPer` elements of `type` in NCCL.
struct NcclElements {
  NcclType type = NcclType::kUint8;
  int64_t valuesPer = 1;
};

// NCCL's own type for `type`, or nullopt where it has none. `fp8`: whether the NCCL in use has
// the fp8 types.
inline std::optional<NcclType> nativeType(DataType type, bool fp8) {
  switch (type) {
    case DataType::kFloat32:
      return NcclType::kFloat32;
    case DataType::kFloat16:
      return NcclType::kFloat16;
    case DataType::kBFloat16:
      return NcclType::kBfloat16;
    case DataType::kFloat64:
      return NcclType::kFloat64;
    case DataType::kInt8:
      return NcclType::kInt8;
    case DataType::kUInt8:
      return NcclType::kUint8;
    case DataType::kInt32:
      return NcclType::kInt32;
    case DataType::kUInt32:
      return NcclType::kUint32;
    case DataType::kInt64:
      return NcclType::kInt64;
    case DataType::kUInt64:
      return NcclType::kUint64;
    case DataType::kFloat8E4M3:
      return fp8 ? std::optional(NcclType::kFloat8e4m3) : std::nullopt;
    case DataType::kFloat8E5M2:
      return fp8 ? std::optional(NcclType::kFloat8e5m2) : std::nullopt;
    default:
      return std::nullopt;
  }
}

// How `collective` moves `type` (reducing or not); throws kiln::Error(kUnsupported) naming both
// when NCCL cannot.
inline NcclElements elementsFor(DataType type, bool reduces, bool fp8, const std::string& collective) {
  if (const auto native = nativeType(type, fp8)) return {*native, 1};
  const size_t bytes = byteSize(type);
  if (reduces || bytes == 0)
    throw Error(ErrorCode::kUnsupported,
                collective + " cannot " + (reduces ? "reduce " : "move ") + std::string(toString(type)) +
                    " values over NCCL" +
                    (reduces ? " (it reduces float32, float16, bfloat16, float64, 8-, 32- and 64-bit integers" +
                                   std::string(fp8 ? " and fp8" : "") + ")"
                             : ""));
  return {NcclType::kUint8, int64_t(bytes)};
}

inline NcclReduction reductionFor(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return NcclReduction::kSum;
    case ReduceOp::kProd:
      return NcclReduction::kProd;
    case ReduceOp::kMax:
      return NcclReduction::kMax;
    case ReduceOp::kMin:
      return NcclReduction::kMin;
  }
  return NcclReduction::kSum;
}

}  // namespace kiln::nccl
