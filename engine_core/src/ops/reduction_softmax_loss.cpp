// Type and shape inference for NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.
#include "op_schema.h"
#include "reduction_softmax.h"

namespace kiln {
namespace {

// Both losses: input/scores [N, C, d1..dk], target/labels [N, d1..dk] (int32/int64), weights [C].
void inferLoss(InferenceContext& ctx) {
  const DataType type = ctx.inputType(0);
  if (type != DataType::kFloat32 && type != DataType::kFloat64 && type != DataType::kFloat16 &&
      type != DataType::kBFloat16)
    ctx.fail("input 0 has type " + std::string(toString(type)) + "; expected float32, float64, float16 or bfloat16");
  if (ctx.inputType(1) != DataType::kInt32 && ctx.inputType(1) != DataType::kInt64)
    ctx.fail("target input must be int32 or int64, got " + std::string(toString(ctx.inputType(1))));
  const std::string reduction = ctx.layer().attrString("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    ctx.fail("reduction '" + reduction + "' is not one of none, sum, mean");

  const Shape &x = ctx.inputShape(0), &target = ctx.inputShape(1);
  if (x.hasRank() && x.rank() < 2) ctx.fail("input 0 must have shape [N, C, ...], got " + x.toString());
  if (x.hasRank() && target.hasRank()) {
    if (target.rank() + 1 != x.rank())
      ctx.fail("target " + target.toString() + " must have the shape of input " + x.toString() + " without C");
    for (size_t d = 0; d < target.rank(); ++d) {
      const Dim &t = target[d], &i = x[d == 0 ? 0 : d + 1];
      if (t.isKnown() && i.isKnown() && t.value() != i.value())
        ctx.fail("target " + target.toString() + " must have the shape of input " + x.toString() + " without C");
    }
  }
  if (ctx.hasInput(2)) {
    if (ctx.inputType(2) != type) ctx.fail("weight must have the type of input 0");
    const Shape& w = ctx.inputShape(2);
    if (w.hasRank() &&
        (w.rank() != 1 || (x.hasRank() && w[0].isKnown() && x[1].isKnown() && w[0].value() != x[1].value())))
      ctx.fail("weight must have shape [C], got " + w.toString() + " for input " + x.toString());
  }
  ctx.setOutput(0, type, reduction == "none" ? target : Shape::fromDims({}));
  if (ctx.outputCount() > 1) ctx.setOutput(1, type, x);  // SoftmaxCrossEntropyLoss's log_prob
}

}  // namespace

kernels::LossReduction lossReductionOf(const Layer& layer) {
  const std::string r = layer.attrString("reduction", "mean");
  return r == "none" ? kernels::LossReduction::kNone
         : r == "sum" ? kernels::LossReduction::kSum
                      : kernels::LossReduction::kMean;
}

std::optional<int64_t> lossIgnoreIndex(const Layer& layer) {
  if (!layer.hasAttr("ignore_index")) return std::nullopt;
  return layer.attrInt("ignore_index");
}

void registerLossSchemas(OpSchemaRegistry& registry) {
  registry.add({"", "NegativeLogLikelihoodLoss", inferLoss, 2, 3});
  registry.add({"", "SoftmaxCrossEntropyLoss", inferLoss, 2, 3});
}

}  // namespace kiln
