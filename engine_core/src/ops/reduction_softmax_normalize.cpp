// Type and shape inference for Softmax, LogSoftmax, Hardmax, TopK and CumSum.
#include "op_schema.h"
#include "reduction_softmax.h"

namespace kiln {
namespace {

bool isFloatType(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat64 || t == DataType::kFloat16 || t == DataType::kBFloat16;
}

void inferSoftmax(InferenceContext& ctx) {
  const DataType type = ctx.inputType(0);
  if (!isFloatType(type))
    ctx.fail("input has type " + std::string(toString(type)) + "; expected float32, float64, float16 or bfloat16");
  const Shape& x = ctx.inputShape(0);
  if (x.hasRank()) {
    if (x.rank() == 0) ctx.fail("input must have rank >= 1");
    ctx.normalizeAxis(softmaxAxisAttr(ctx.layer()), int64_t(x.rank()));
  }
  ctx.setOutput(0, type, x);
}

void inferTopK(InferenceContext& ctx) {
  const Layer& layer = ctx.layer();
  const DataType type = ctx.inputType(0);
  if (!isFloatType(type) && !isInteger(type))
    ctx.fail("input has type " + std::string(toString(type)) + "; expected a numeric type");
  const Shape& x = ctx.inputShape(0);
  std::optional<int64_t> k;
  if (layer.opsetVersion < 10) {
    k = layer.attrInt("k");
  } else {
    if (!ctx.hasInput(1)) ctx.fail("input K is required from opset 10");
    if (ctx.inputType(1) != DataType::kInt64) ctx.fail("K must be int64");
    if (const HostTensor* kValue = ctx.inputValue(1)) {
      if (kValue->elementCount() != 1) ctx.fail("K must hold exactly one value, got shape " + dimsToString(kValue->dims()));
      k = kValue->toInt64Vector()[0];
    }
  }
  if (k && *k < 0) ctx.fail("K must be >= 0, got " + std::to_string(*k));
  if (!x.hasRank()) {
    ctx.setOutput(0, type, Shape::unknownRank());
    ctx.setOutput(1, DataType::kInt64, Shape::unknownRank());
    return;
  }
  if (x.rank() == 0) ctx.fail("input must have rank >= 1");
  const int64_t axis = ctx.normalizeAxis(layer.attrInt("axis", -1), int64_t(x.rank()));
  if (k && x[axis].isKnown() && *k > x[axis].value())
    ctx.fail("K = " + std::to_string(*k) + " exceeds the size " + std::to_string(x[axis].value()) + " of axis " +
             std::to_string(axis));
  std::vector<Dim> dims = x.dims();
  dims[axis] = k ? Dim(*k) : Dim::unknown();
  ctx.setOutput(0, type, Shape(dims));
  ctx.setOutput(1, DataType::kInt64, Shape(dims));
}

void inferCumSum(InferenceContext& ctx) {
  const DataType type = ctx.inputType(0);
  if (!isFloatType(type) && !isInteger(type))
    ctx.fail("input has type " + std::string(toString(type)) + "; expected a numeric type");
  if (ctx.inputType(1) != DataType::kInt32 && ctx.inputType(1) != DataType::kInt64)
    ctx.fail("axis input must be int32 or int64");
  const Shape& x = ctx.inputShape(0);
  if (const HostTensor* axis = ctx.inputValue(1)) {
    if (axis->elementCount() != 1) ctx.fail("axis must hold exactly one value, got shape " + dimsToString(axis->dims()));
    if (x.hasRank()) {
      if (x.rank() == 0) ctx.fail("input must have rank >= 1");
      ctx.normalizeAxis(axis->toInt64Vector()[0], int64_t(x.rank()));
    }
  }
  ctx.setOutput(0, type, x);
}

}  // namespace

void registerNormalizeSchemas(OpSchemaRegistry& registry) {
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"}) registry.add({"", op, inferSoftmax, 1, 1});
  registry.add({"", "TopK", inferTopK, 1, 2});
  registry.add({"", "CumSum", inferCumSum, 2, 2});
}

}  // namespace kiln
