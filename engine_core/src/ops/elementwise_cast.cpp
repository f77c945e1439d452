// Schemas of Cast and CastLike: any numeric, bool, fp8 or string type to any other.
#include "elementwise.h"

#include "../onnx/tensor_proto.h"

namespace kiln {
namespace {

bool isCastable(DataType type) {
  return isInTypeClasses(type, kNumericTypes | kBoolType | kStringType) || type == DataType::kFloat8E4M3 ||
         type == DataType::kFloat8E5M2;
}

void requireCastable(const InferenceContext& ctx, DataType type, const std::string& what) {
  if (type != DataType::kUndefined && !isCastable(type))
    ctx.fail(what + " is " + std::string(toString(type)) + ", which Cast does not convert");
}

// `to` is an ONNX TensorProto data type: a number, or (opset 1) its name such as "FLOAT".
DataType castTarget(const InferenceContext& ctx) {
  const Layer& layer = ctx.layer();
  auto it = layer.attributes.find("to");
  if (it == layer.attributes.end()) ctx.fail("attribute 'to' (the target type) is required");
  int32_t onnxType = 0;
  if (const auto* number = it->second.get<int64_t>()) {
    onnxType = int32_t(*number);
  } else if (const auto* name = it->second.get<std::string>()) {
    onnx::TensorProto_DataType value{};
    if (!onnx::TensorProto_DataType_Parse(*name, &value)) ctx.fail("attribute 'to' names no ONNX type: \"" + *name + "\"");
    onnxType = int32_t(value);
  } else {
    ctx.fail("attribute 'to' must be an int (an ONNX TensorProto data type)");
  }
  try {
    return onnx_import::fromOnnxType(onnxType, "attribute 'to'");
  } catch (const Error& e) {
    ctx.fail(e.what());
  }
}

void inferCast(InferenceContext& ctx) {
  const DataType target = castTarget(ctx);
  requireCastable(ctx, target, "the target type");
  requireCastable(ctx, ctx.inputType(0), "input 0");
  ctx.setOutput(0, target, ctx.inputShape(0));
}

void inferCastLike(InferenceContext& ctx) {
  requireCastable(ctx, ctx.inputType(0), "input 0");
  requireCastable(ctx, ctx.inputType(1), "target_type (input 1)");
  ctx.setOutput(0, ctx.inputType(1), ctx.inputShape(0));
}

}  // namespace

void registerElementwiseCastSchemas(OpSchemaRegistry& registry) {
  registry.add({"", "Cast", inferCast, 1, 1});
  registry.add({"", "CastLike", inferCastLike, 2, 2});
}

}  // namespace kiln
