// Schemas of the broadcasting elementwise ops: arithmetic, comparisons, logic, bitwise, the
// variadic Sum/Mean/Min/Max, PRelu and Where.
#include "elementwise.h"

namespace kiln {
namespace {

// Output: the numpy broadcast of A and B (after the pre-opset-7 alignment), of `outType` or, when
// that is kUndefined, of A's type.
void inferBroadcastPair(InferenceContext& ctx, DataType outType) {
  const Shape& a = ctx.inputShape(0);
  Shape b = ctx.inputShape(1);
  if (a.hasRank() && b.hasRank()) b = Shape(alignLegacyBroadcast(ctx.layer(), a.rank(), b.dims()));
  ctx.setOutput(0, outType == DataType::kUndefined ? ctx.inputType(0) : outType, broadcastShapes(ctx, a, b));
}

// Two inputs of one type from `classes`; output of the inputs' type.
InferFn sameTypeBinary(unsigned classes) {
  return [classes](InferenceContext& ctx) {
    requireInputType(ctx, 0, classes);
    requireSameInputTypes(ctx, 0, 1);
    inferBroadcastPair(ctx, DataType::kUndefined);
  };
}

// Comparisons and logic: two inputs of one type from `classes`; bool output.
InferFn boolBinary(unsigned classes) {
  return [classes](InferenceContext& ctx) {
    requireInputType(ctx, 0, classes);
    requireSameInputTypes(ctx, 0, 1);
    inferBroadcastPair(ctx, DataType::kBool);
  };
}

// Sum, Mean, Min, Max: one or more inputs of one type, broadcast together.
InferFn variadic(unsigned classes) {
  return [classes](InferenceContext& ctx) {
    requireInputType(ctx, 0, classes);
    requireSameInputTypes(ctx, 0, ctx.inputCount() - 1);
    inferBroadcastSameType(ctx);
  };
}

void inferMod(InferenceContext& ctx) {
  const int64_t fmod = ctx.layer().attrInt("fmod", 0);
  if (fmod != 0 && fmod != 1) ctx.fail("attribute fmod must be 0 or 1, got " + std::to_string(fmod));
  requireInputType(ctx, 0, kNumericTypes);
  requireSameInputTypes(ctx, 0, 1);
  if (fmod == 0 && isInTypeClasses(ctx.inputType(0), kFloatTypes))
    ctx.fail("Mod of floating-point inputs needs fmod=1 (fmod=0 is defined for integers only)");
  inferBroadcastPair(ctx, DataType::kUndefined);
}

void inferPow(InferenceContext& ctx) {
  const DataType base = ctx.inputType(0);
  if (base != DataType::kInt32 && base != DataType::kInt64) requireInputType(ctx, 0, kFloatTypes);
  requireInputType(ctx, 1, kNumericTypes);
  inferBroadcastPair(ctx, DataType::kUndefined);
}

void inferBitShift(InferenceContext& ctx) {
  const std::string direction = ctx.layer().attrString("direction", "");
  if (direction != "LEFT" && direction != "RIGHT")
    ctx.fail("attribute direction must be \"LEFT\" or \"RIGHT\", got \"" + direction + "\"");
  requireInputType(ctx, 0, kUnsignedIntegerTypes);
  requireSameInputTypes(ctx, 0, 1);
  inferBroadcastPair(ctx, DataType::kUndefined);
}

// PRelu broadcasts the slope to X (one way): the output has X's shape.
void inferPRelu(InferenceContext& ctx) {
  requireInputType(ctx, 0, kSignedNumericTypes);
  requireSameInputTypes(ctx, 0, 1);
  const Shape& x = ctx.inputShape(0);
  Shape slope = ctx.inputShape(1);
  if (x.hasRank() && slope.hasRank()) {
    slope = Shape(alignLegacyBroadcast(ctx.layer(), x.rank(), slope.dims()));
    if (slope.rank() > x.rank())
      ctx.fail("slope shape " + slope.toString() + " has a higher rank than X " + x.toString() +
               "; the slope must broadcast to X");
    Shape joint = broadcastShapes(ctx, x, slope);
    for (size_t d = 0; d < x.rank(); ++d)
      if (x[d].isKnown() && joint[d].isKnown() && x[d].value() != joint[d].value())
        ctx.fail("slope shape " + slope.toString() + " does not broadcast to X " + x.toString());
  }
  ctx.setOutput(0, ctx.inputType(0), x);
}

void inferWhere(InferenceContext& ctx) {
  if (ctx.inputType(0) != DataType::kBool && ctx.inputType(0) != DataType::kUndefined)
    ctx.fail("condition (input 0) is " + std::string(toString(ctx.inputType(0))) + "; it must be bool");
  requireSameInputTypes(ctx, 1, 2);
  Shape shape = broadcastShapes(ctx, ctx.inputShape(0), ctx.inputShape(1));
  ctx.setOutput(0, ctx.inputType(1), broadcastShapes(ctx, shape, ctx.inputShape(2)));
}

}  // namespace

void registerElementwiseBinarySchemas(OpSchemaRegistry& registry) {
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) registry.add({"", op, sameTypeBinary(kNumericTypes), 2, 2});
  for (const char* op : {"BitwiseAnd", "BitwiseOr", "BitwiseXor"})
    registry.add({"", op, sameTypeBinary(kIntegerTypes), 2, 2});
  registry.add({"", "Mod", inferMod, 2, 2});
  registry.add({"", "Pow", inferPow, 2, 2});
  registry.add({"", "BitShift", inferBitShift, 2, 2});
  registry.add({"", "PRelu", inferPRelu, 2, 2});
  registry.add({"", "Equal", boolBinary(kNumericTypes | kBoolType), 2, 2});
  for (const char* op : {"Less", "LessOrEqual", "Greater", "GreaterOrEqual"})
    registry.add({"", op, boolBinary(kNumericTypes), 2, 2});
  for (const char* op : {"And", "Or", "Xor"}) registry.add({"", op, boolBinary(kBoolType), 2, 2});
  for (const char* op : {"Min", "Max"}) registry.add({"", op, variadic(kNumericTypes), 1, -1});
  for (const char* op : {"Sum", "Mean"}) registry.add({"", op, variadic(kFloatTypes), 1, -1});
  registry.add({"", "Where", inferWhere, 3, 3});
}

}  // namespace kiln
