// Schemas of the one-input elementwise ops: math functions, activations, Clip, Not, bitwise not,
// IsNaN and IsInf. All keep the input's shape.
#include "elementwise.h"

namespace kiln {
namespace {

InferFn sameAsInput(unsigned classes) {
  return [classes](InferenceContext& ctx) {
    requireInputType(ctx, 0, classes);
    inferSameAsInput(ctx);
  };
}

void inferCelu(InferenceContext& ctx) {
  if (ctx.layer().attrFloat("alpha", 1.0f) == 0.0f) ctx.fail("attribute alpha must not be 0");
  sameAsInput(kFloatTypes)(ctx);
}

void inferGelu(InferenceContext& ctx) {
  const std::string approximate = ctx.layer().attrString("approximate", "none");
  if (approximate != "none" && approximate != "tanh")
    ctx.fail("attribute approximate must be \"none\" or \"tanh\", got \"" + approximate + "\"");
  sameAsInput(kFloatTypes)(ctx);
}

// Clip takes min/max as attributes before opset 11 and as optional scalar inputs since.
void inferClip(InferenceContext& ctx) {
  requireInputType(ctx, 0, ctx.opset() < 12 ? kFloatTypes : kNumericTypes);
  if (ctx.opset() >= 11) {
    requireSameInputTypes(ctx, 0, 2);
    for (size_t i = 1; i < 3 && i < ctx.inputCount(); ++i) {
      if (!ctx.hasInput(i)) continue;
      auto count = ctx.inputShape(i).elementCount();
      if (count && *count != 1)
        ctx.fail(std::string(i == 1 ? "min" : "max") + " (input " + std::to_string(i) + ") has shape " +
                 ctx.inputShape(i).toString() + "; it must be a scalar");
    }
  } else if (ctx.inputCount() > 1) {
    ctx.fail("Clip before opset 11 takes min and max as attributes, not inputs");
  }
  inferSameAsInput(ctx);
}

void inferIsInf(InferenceContext& ctx) {
  for (const char* flag : {"detect_positive", "detect_negative"}) {
    const int64_t value = ctx.layer().attrInt(flag, 1);
    if (value != 0 && value != 1) ctx.fail(std::string("attribute ") + flag + " must be 0 or 1");
  }
  requireInputType(ctx, 0, kFloatTypes);
  ctx.setOutput(0, DataType::kBool, ctx.inputShape(0));
}

void inferIsNaN(InferenceContext& ctx) {
  requireInputType(ctx, 0, kFloatTypes);
  ctx.setOutput(0, DataType::kBool, ctx.inputShape(0));
}

}  // namespace

void registerElementwiseUnarySchemas(OpSchemaRegistry& registry) {
  for (const char* op : {"Sqrt", "Reciprocal", "Exp", "Log", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh",
                         "Cosh", "Tanh", "Asinh", "Acosh", "Atanh", "Erf", "Floor", "Ceil", "Round", "LeakyRelu",
                         "Elu", "Selu", "HardSigmoid", "HardSwish", "ThresholdedRelu", "Sigmoid", "Softplus",
                         "Softsign"})
    registry.add({"", op, sameAsInput(kFloatTypes), 1, 1});
  for (const char* op : {"Neg", "Relu"}) registry.add({"", op, sameAsInput(kSignedNumericTypes), 1, 1});
  for (const char* op : {"Abs", "Sign", "Shrink"}) registry.add({"", op, sameAsInput(kNumericTypes), 1, 1});
  registry.add({"", "BitwiseNot", sameAsInput(kIntegerTypes), 1, 1});
  registry.add({"", "Not", sameAsInput(kBoolType), 1, 1});
  registry.add({"", "Celu", inferCelu, 1, 1});
  registry.add({"", "Gelu", inferGelu, 1, 1});
  registry.add({"", "Clip", inferClip, 1, 3});
  registry.add({"", "IsInf", inferIsInf, 1, 1});
  registry.add({"", "IsNaN", inferIsNaN, 1, 1});
}

}  // namespace kiln
