// Type and shape inference for the normalization op family.
#include "op_families.h"
#include "op_schema.h"

namespace kiln {
namespace {

void checkFloatX(const InferenceContext& ctx) {
  DataType t = ctx.inputType(0);
  if (t != DataType::kUndefined && t != DataType::kFloat32 && t != DataType::kFloat64 && t != DataType::kFloat16 &&
      t != DataType::kBFloat16)
    ctx.fail("input X has type " + std::string(toString(t)) + "; this op takes float16, bfloat16, float32 or float64");
}

// X must have at least `minRank` axes; returns its rank (0 when unknown).
size_t checkRank(const InferenceContext& ctx, size_t minRank) {
  const Shape& x = ctx.inputShape(0);
  if (!x.hasRank()) return 0;
  if (x.rank() < minRank)
    ctx.fail("input X must have rank >= " + std::to_string(minRank) + " ([N, C, ...]), got shape " + x.toString());
  return x.rank();
}

// Input i, when present, must be a vector of `size` values (a per-channel parameter).
void checkVector(const InferenceContext& ctx, size_t i, const Dim& size, const char* name) {
  if (!ctx.hasInput(i)) return;
  const Shape& s = ctx.inputShape(i);
  if (!s.hasRank()) return;
  if (s.rank() != 1 || (size.isKnown() && s[0].isKnown() && s[0] != size))
    ctx.fail(std::string("input ") + name + " must have shape [" + size.toString() + "] (one value per channel), got " +
             s.toString());
}

Dim channelDim(const InferenceContext& ctx) {
  const Shape& x = ctx.inputShape(0);
  return x.hasRank() && x.rank() >= 2 ? x[1] : Dim::unknown();
}

void inferBatchNormalization(InferenceContext& ctx) {
  checkFloatX(ctx);
  checkRank(ctx, 2);
  const Dim c = channelDim(ctx);
  const char* names[] = {"scale", "B", "input_mean", "input_var"};
  for (size_t i = 1; i <= 4; ++i) checkVector(ctx, i, c, names[i - 1]);
  const bool training = ctx.layer().attrInt("training_mode", 0) != 0;
  if (training && ctx.opset() < 14) ctx.fail("attribute 'training_mode' exists from opset 14 on");
  ctx.setOutput(0, ctx.inputType(0), ctx.inputShape(0));
  // Running mean / var (opset 14: with training_mode; before: mean, var, saved mean, saved var).
  for (size_t i = 1; i < ctx.outputCount(); ++i) ctx.setOutput(i, ctx.inputType(3), Shape({c}));
}

void inferInstanceNormalization(InferenceContext& ctx) {
  checkFloatX(ctx);
  checkRank(ctx, 2);
  checkVector(ctx, 1, channelDim(ctx), "scale");
  checkVector(ctx, 2, channelDim(ctx), "B");
  ctx.setOutput(0, ctx.inputType(0), ctx.inputShape(0));
}

void inferLayerNormalization(InferenceContext& ctx) {
  checkFloatX(ctx);
  const Shape& x = ctx.inputShape(0);
  // stash_type is an ONNX TensorProto type: 1 float, 10 float16, 11 double, 16 bfloat16.
  const int64_t stashType = ctx.layer().attrInt("stash_type", 1);
  DataType statsType;
  switch (stashType) {
    case 1: statsType = DataType::kFloat32; break;
    case 10: statsType = DataType::kFloat16; break;
    case 11: statsType = DataType::kFloat64; break;
    case 16: statsType = DataType::kBFloat16; break;
    default: ctx.fail("attribute 'stash_type' is " + std::to_string(stashType) + "; use 1 (float32)");
  }
  ctx.setOutput(0, ctx.inputType(0), x);
  if (!x.hasRank()) {
    ctx.setOutput(1, statsType, Shape::unknownRank());
    ctx.setOutput(2, statsType, Shape::unknownRank());
    return;
  }
  const int64_t rank = int64_t(x.rank());
  const int64_t axis = ctx.normalizeAxis(ctx.layer().attrInt("axis", -1), rank);
  std::vector<Dim> statsDims(x.dims().begin(), x.dims().begin() + axis);
  statsDims.resize(size_t(rank), Dim(1));
  ctx.setOutput(1, statsType, Shape(statsDims));
  ctx.setOutput(2, statsType, Shape(statsDims));
}

void inferGroupNormalization(InferenceContext& ctx) {
  checkFloatX(ctx);
  checkRank(ctx, 2);
  const int64_t groups = ctx.layer().attrInt("num_groups");
  const Dim c = channelDim(ctx);
  if (groups < 1) ctx.fail("attribute 'num_groups' must be >= 1");
  if (c.isKnown() && c.value() % groups != 0)
    ctx.fail("input X has " + std::to_string(c.value()) + " channels, not a multiple of num_groups " +
             std::to_string(groups));
  for (size_t i = 1; i <= 2; ++i) {  // opset 18: one value per group; opset 21: one per channel
    const Shape& s = ctx.inputShape(i);
    if (s.hasRank() && (s.rank() != 1 || (s[0].isKnown() && s[0].value() != groups && !(c.isKnown() && s[0] == c))))
      ctx.fail(std::string(i == 1 ? "input scale" : "input bias") + " must have num_groups (" + std::to_string(groups) +
               ") or C values, got shape " + s.toString());
  }
  ctx.setOutput(0, ctx.inputType(0), ctx.inputShape(0));
}

void inferLrn(InferenceContext& ctx) {
  checkFloatX(ctx);
  checkRank(ctx, 2);
  if (ctx.layer().attrInt("size") < 1) ctx.fail("attribute 'size' must be >= 1");
  ctx.setOutput(0, ctx.inputType(0), ctx.inputShape(0));
}

void inferLpNormalization(InferenceContext& ctx) {
  checkFloatX(ctx);
  const int64_t p = ctx.layer().attrInt("p", 2);
  if (p != 1 && p != 2) ctx.fail("attribute 'p' is " + std::to_string(p) + "; only 1 and 2 are defined");
  if (ctx.inputShape(0).hasRank())
    ctx.normalizeAxis(ctx.layer().attrInt("axis", -1), int64_t(ctx.inputShape(0).rank()));
  ctx.setOutput(0, ctx.inputType(0), ctx.inputShape(0));
}

void inferMeanVarianceNormalization(InferenceContext& ctx) {
  checkFloatX(ctx);
  if (ctx.inputShape(0).hasRank()) {
    const int64_t rank = int64_t(ctx.inputShape(0).rank());
    for (int64_t axis : ctx.layer().attrInts("axes", {0, 2, 3})) ctx.normalizeAxis(axis, rank, "axes entry");
  }
  ctx.setOutput(0, ctx.inputType(0), ctx.inputShape(0));
}

}  // namespace

void registerNormalizationSchemas(OpSchemaRegistry& registry) {
  registry.add({"", "BatchNormalization", inferBatchNormalization, 5, 5});
  registry.add({"", "InstanceNormalization", inferInstanceNormalization, 3, 3});
  registry.add({"", "LayerNormalization", inferLayerNormalization, 2, 3});
  registry.add({"", "GroupNormalization", inferGroupNormalization, 3, 3});
  registry.add({"", "LRN", inferLrn, 1, 1});
  registry.add({"", "LpNormalization", inferLpNormalization, 1, 1});
  registry.add({"", "MeanVarianceNormalization", inferMeanVarianceNormalization, 1, 1});
}

}  // namespace kiln
