// Type and shape inference for the elementwise op family: binary and variadic broadcasting ops
// (elementwise_binary.cpp), unary math and activations (elementwise_unary.cpp), Cast and CastLike
// (elementwise_cast.cpp).
#include "elementwise.h"

#include "op_families.h"

namespace kiln {

void registerElementwiseSchemas(OpSchemaRegistry& registry) {
  registerElementwiseBinarySchemas(registry);
  registerElementwiseUnarySchemas(registry);
  registerElementwiseCastSchemas(registry);
}

bool isInTypeClasses(DataType type, unsigned classes) {
  switch (type) {
    case DataType::kFloat32: case DataType::kFloat64: case DataType::kFloat16: case DataType::kBFloat16:
      return classes & kFloatTypes;
    case DataType::kInt8: case DataType::kInt16: case DataType::kInt32: case DataType::kInt64:
      return classes & kSignedIntegerTypes;
    case DataType::kUInt8: case DataType::kUInt16: case DataType::kUInt32: case DataType::kUInt64:
      return classes & kUnsignedIntegerTypes;
    case DataType::kBool: return classes & kBoolType;
    case DataType::kString: return classes & kStringType;
    default: return false;
  }
}

namespace {
std::string describeTypeClasses(unsigned classes) {
  std::string out;
  auto add = [&](const char* name) { out += (out.empty() ? "" : ", ") + std::string(name); };
  if ((classes & kIntegerTypes) == kIntegerTypes) {
    if (classes & kFloatTypes) add("floating-point");
    add("integer");
  } else {
    if (classes & kFloatTypes) add("floating-point");
    if (classes & kSignedIntegerTypes) add("signed integer");
    if (classes & kUnsignedIntegerTypes) add("unsigned integer");
  }
  if (classes & kBoolType) add("bool");
  if (classes & kStringType) add("string");
  return out;
}
}  // namespace

void requireInputType(const InferenceContext& ctx, size_t i, unsigned classes) {
  const Tensor& in = ctx.input(i);
  if (in.dtype == DataType::kUndefined || isInTypeClasses(in.dtype, classes)) return;
  ctx.fail("input " + std::to_string(i) + " ('" + in.name + "') is " + std::string(toString(in.dtype)) + "; " +
           ctx.layer().opType + " takes " + describeTypeClasses(classes) + " tensors; insert a Cast");
}

void requireSameInputTypes(const InferenceContext& ctx, size_t first, size_t last) {
  const DataType expected = ctx.inputType(first);
  for (size_t i = first + 1; i <= last && i < ctx.inputCount(); ++i) {
    if (!ctx.hasInput(i)) continue;
    const DataType got = ctx.inputType(i);
    if (got != expected && got != DataType::kUndefined && expected != DataType::kUndefined)
      ctx.fail("input " + std::to_string(i) + " is " + std::string(toString(got)) + " but input " +
               std::to_string(first) + " is " + std::string(toString(expected)) +
               "; the inputs must have one type (insert a Cast)");
  }
}

}  // namespace kiln
