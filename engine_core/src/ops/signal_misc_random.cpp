// Type and shape inference for the random generator ops: RandomNormal, RandomUniform, their *Like
// forms, Bernoulli and Multinomial.
#include "data_type_attr.h"
#include "signal_misc.h"

namespace kiln {
namespace {

void requireRealFloat(const InferenceContext& ctx, DataType t, const char* what) {
  if (t != DataType::kFloat32 && t != DataType::kFloat64 && t != DataType::kFloat16 && t != DataType::kBFloat16)
    ctx.fail(std::string(what) + " must be float32, float64, float16 or bfloat16, got " + std::string(toString(t)));
}

void inferRandomFromShape(InferenceContext& ctx) {
  if (!ctx.layer().hasAttr("shape")) ctx.fail("attribute 'shape' is required");
  std::vector<int64_t> dims = ctx.layer().attrInts("shape");
  for (int64_t d : dims)
    if (d < 0) ctx.fail("attribute 'shape' must not hold negative sizes, got " + dimsToString(dims));
  DataType dtype = onnxDataTypeAttr(ctx, "dtype", DataType::kFloat32);
  requireRealFloat(ctx, dtype, "dtype");
  ctx.setOutput(0, dtype, Shape::fromDims(dims));
}

void inferRandomLike(InferenceContext& ctx) {
  DataType dtype = onnxDataTypeAttr(ctx, "dtype", ctx.inputType(0));
  if (dtype != DataType::kUndefined) requireRealFloat(ctx, dtype, "the output type");
  ctx.setOutput(0, dtype, ctx.inputShape(0));
}

void inferBernoulli(InferenceContext& ctx) {
  if (ctx.inputType(0) != DataType::kUndefined) requireRealFloat(ctx, ctx.inputType(0), "the input");
  DataType dtype = onnxDataTypeAttr(ctx, "dtype", ctx.inputType(0));
  if (dtype == DataType::kString) ctx.fail("dtype must be a numeric or bool type, got string");
  ctx.setOutput(0, dtype, ctx.inputShape(0));
}

void inferMultinomial(InferenceContext& ctx) {
  if (ctx.inputType(0) != DataType::kUndefined) requireRealFloat(ctx, ctx.inputType(0), "the input");
  DataType dtype = onnxDataTypeAttr(ctx, "dtype", DataType::kInt32);
  if (dtype != DataType::kInt32 && dtype != DataType::kInt64)
    ctx.fail("dtype must be int32 or int64, got " + std::string(toString(dtype)));
  int64_t samples = ctx.layer().attrInt("sample_size", 1);
  if (samples < 1) ctx.fail("sample_size must be positive, got " + std::to_string(samples));
  const Shape& in = ctx.inputShape(0);
  if (in.hasRank() && in.rank() != 2) ctx.fail("the input must be [batch, classes], got shape " + in.toString());
  ctx.setOutput(0, dtype, Shape{in.hasRank() ? in[0] : Dim::unknown(), samples});
}

}  // namespace

void registerRandomSchemas(OpSchemaRegistry& registry) {
  registry.add({"", "RandomNormal", inferRandomFromShape, 0, 0});
  registry.add({"", "RandomUniform", inferRandomFromShape, 0, 0});
  registry.add({"", "RandomNormalLike", inferRandomLike, 1, 1});
  registry.add({"", "RandomUniformLike", inferRandomLike, 1, 1});
  registry.add({"", "Bernoulli", inferBernoulli, 1, 1});
  registry.add({"", "Multinomial", inferMultinomial, 1, 1});
}

}  // namespace kiln
