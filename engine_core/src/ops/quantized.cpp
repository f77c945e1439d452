// Kiln's quantized ops (domain "kiln"), made from float layers by the INT8 steps: calibrated
// builds (passes/quantize_layers.cpp) and Q/DQ models (passes/fuse_qdq.cpp). Their type and shape
// inference; the CPU kernels are in backends/cpu/ops/quantized.cpp.
//
// Both take their activation operand X as float, quantized on entry with x_scale and x_zero_point,
// q = saturate(round_half_even(x / x_scale) + x_zero_point) into the zero point's type (int8 when
// absent: ONNX QuantizeLinear's rule), or as int8 / uint8 values already quantized (a Q/DQ model's
// QuantizeLinear output) that x_scale and x_zero_point describe. They take int8 weights as they
// are, accumulate the exact products of (q - x_zero_point) and the weights in int32 and dequantize
// into float32: acc * (x_scale * w_scale[c]). The fused epilogue (bias, activation, residual) then
// runs in float32 as for kiln.FusedConv. With y_scale the result is quantized again,
// saturate(round_half_even(y / y_scale) + y_zero_point), and the output is of y_zero_point's type.
//
// kiln.QuantizedConv   inputs X, W, [B], [Z], x_scale, w_scale, [x_zero_point], [], [y_scale, y_zero_point]
//   y = act(acc * x_scale * w_scale[m] + B[m] + Z)  or  act(acc * x_scale * w_scale[m] + B[m]) + Z
//   X float, int8 or uint8, W int8 [M, C/group, k...], B float32 [M], Z the output's shape, x_scale
//   a float32 scalar, w_scale float32 [M] (one per output channel) or a scalar, zero points int8 or
//   uint8 scalars. Attributes: base ("Conv"), that op's attributes and the epilogue attributes of
//   kiln.FusedConv.
// kiln.QuantizedMatMul inputs A, B, [C], [Z], a_scale, b_scale, [a_zero_point], [b_zero_point], [y_scale, y_zero_point]
//   y = act(acc * a_scale * b_scale[n] + C[n] + Z)  or  ... + Z after the activation, with
//   acc = (A - a_zero_point) · (B - b_zero_point) as MatMul multiplies (batch dims broadcast). B is
//   int8 constant weights (b_scale [N] per column or a scalar, no zero point) or an activation:
//   float (quantized on entry) or int8 / uint8, with a scalar b_scale and an optional zero point.
//   C is a bias [N]. Epilogue attributes as for kiln.FusedConv.
#include "quantized.h"

#include "op_families.h"
#include "op_schema.h"

namespace kiln {
namespace {

using quantized::kActivationScaleInput;
using quantized::kActivationZeroPointInput;
using quantized::kOutputScaleInput;
using quantized::kOutputZeroPointInput;
using quantized::kWeightScaleInput;
using quantized::kWeightZeroPointInput;

bool isInt8Type(DataType t) { return t == DataType::kInt8 || t == DataType::kUInt8; }

// A quantized operand: float (quantized on entry) or int8 / uint8 values.
void checkQuantizedOperand(const InferenceContext& ctx, size_t i, const char* name) {
  const DataType t = ctx.inputType(i);
  if (!isFloatingPoint(t) && !isInt8Type(t))
    ctx.fail(std::string(name) + " must be a float, int8 or uint8 tensor, got " + std::string(toString(t)));
}

// An optional int8 / uint8 zero point of one value; for an operand already quantized, of its type.
void checkZeroPoint(const InferenceContext& ctx, size_t i, const char* name, size_t operand) {
  if (!ctx.hasInput(i)) return;
  const DataType t = ctx.inputType(i);
  if (!isInt8Type(t)) ctx.fail(std::string(name) + " must be int8 or uint8, got " + std::string(toString(t)));
  const Shape& shape = ctx.inputShape(i);
  if (shape.hasRank() && shape.isFullyKnown() && *shape.elementCount() != 1)
    ctx.fail(std::string(name) + " must hold one value, got shape " + shape.toString());
  const DataType values = ctx.inputType(operand);
  if (isInt8Type(values) && values != t)
    ctx.fail(std::string(name) + " is " + std::string(toString(t)) + " but its operand holds " +
             std::string(toString(values)));
}

void checkScalarScale(const InferenceContext& ctx, size_t i, const char* name) {
  const Tensor& t = ctx.input(i);
  if (t.dtype != DataType::kFloat32) ctx.fail(std::string(name) + " must be float32");
  if (t.shape.hasRank() && t.shape.isFullyKnown() && *t.shape.elementCount() != 1)
    ctx.fail(std::string(name) + " must hold one value, got shape " + t.shape.toString());
}

// A float32 scale with one value or `count` (when known) values.
void checkScales(const InferenceContext& ctx, size_t i, const char* name, const Dim& count) {
  const Tensor& t = ctx.input(i);
  if (t.dtype != DataType::kFloat32) ctx.fail(std::string(name) + " must be float32");
  if (!t.shape.hasRank() || !t.shape.isFullyKnown()) return;
  const int64_t n = *t.shape.elementCount();
  if (n != 1 && count.isKnown() && n != count.value())
    ctx.fail(std::string(name) + " holds " + std::to_string(n) + " values; expected 1 or " +
             std::to_string(count.value()));
}

// float32, or the output zero point's type when the layer quantizes its output.
DataType outputType(const InferenceContext& ctx) {
  if (!ctx.hasInput(kOutputScaleInput)) {
    if (ctx.hasInput(kOutputZeroPointInput)) ctx.fail("y_zero_point needs y_scale");
    return DataType::kFloat32;
  }
  checkScalarScale(ctx, kOutputScaleInput, "y_scale");
  if (!ctx.hasInput(kOutputZeroPointInput)) ctx.fail("y_scale needs y_zero_point (its type is the output's)");
  checkZeroPoint(ctx, kOutputZeroPointInput, "y_zero_point", kOutputZeroPointInput);
  return ctx.inputType(kOutputZeroPointInput);
}

// Runs the float base op's inference (`baseType` with this layer's attributes) on inputs
// [0, baseInputs), inputs 0 and 1 read as float32; output 0 is float32 or quantized (outputType).
void inferAsFloatBase(InferenceContext& ctx, const std::string& baseType, size_t baseInputs) {
  Layer base = ctx.layer();
  base.domain.clear();
  base.opType = baseType;
  for (const char* key : {fused::kBase, fused::kActivation, fused::kActivationAlpha, fused::kActivationBeta,
                          fused::kResidualBeforeActivation})
    base.attributes.erase(key);
  base.inputs.resize(std::min(base.inputs.size(), baseInputs));
  while (!base.inputs.empty() && base.inputs.back().empty()) base.inputs.pop_back();
  base.outputs.resize(1);
  // The operands as the float tensors they stand for.
  Tensor x = ctx.input(0), weights = ctx.input(1);
  x.dtype = weights.dtype = DataType::kFloat32;
  x.constant.reset();
  weights.constant.reset();
  std::vector<const Tensor*> inputs;
  for (size_t i = 0; i < base.inputs.size(); ++i)
    inputs.push_back(i == 0 ? &x : i == 1 ? &weights : ctx.hasInput(i) ? &ctx.input(i) : nullptr);
  const OpSchema* schema = OpSchemaRegistry::instance().find("", baseType);
  InferenceContext baseCtx(base, std::move(inputs), [](size_t) -> const HostTensor* { return nullptr; });
  schema->infer(baseCtx);
  const Shape& out = baseCtx.output(0).shape;
  if (ctx.hasInput(3) && ctx.inputShape(3).hasRank() && out.hasRank() && ctx.inputShape(3).rank() != out.rank())
    ctx.fail("the residual input has shape " + ctx.inputShape(3).toString() + " but the output has shape " +
             out.toString() + "; they must be equal");
  ctx.setOutput(0, outputType(ctx), out);
}

void inferQuantizedConv(InferenceContext& ctx) {
  const std::string base = ctx.layer().attrString(fused::kBase, "");
  if (base != "Conv") ctx.fail("attribute 'base' must be Conv, got '" + base + "'");
  if (ctx.inputType(1) != DataType::kInt8) ctx.fail("the weights (input 1) must be int8");
  checkQuantizedOperand(ctx, 0, "X");
  checkScalarScale(ctx, kActivationScaleInput, "x_scale");
  checkZeroPoint(ctx, kActivationZeroPointInput, "x_zero_point", 0);
  if (ctx.hasInput(kWeightZeroPointInput)) ctx.fail("int8 weights are symmetric: w_zero_point must be absent");
  const Shape& w = ctx.inputShape(1);
  checkScales(ctx, kWeightScaleInput, "w_scale", w.hasRank() ? w[0] : Dim::unknown());
  inferAsFloatBase(ctx, "Conv", 3);
}

void inferQuantizedMatMul(InferenceContext& ctx) {
  checkQuantizedOperand(ctx, 0, "A");
  checkQuantizedOperand(ctx, 1, "B");
  checkScalarScale(ctx, kActivationScaleInput, "a_scale");
  checkZeroPoint(ctx, kActivationZeroPointInput, "a_zero_point", 0);
  checkZeroPoint(ctx, kWeightZeroPointInput, "b_zero_point", 1);
  const Shape& bShape = ctx.inputShape(1);
  if (ctx.inputType(1) == DataType::kInt8 && !ctx.hasInput(kWeightZeroPointInput))  // weights: per column
    checkScales(ctx, kWeightScaleInput, "b_scale", bShape.hasRank() && bShape.rank() >= 2 ? bShape[bShape.rank() - 1] : Dim(1));
  else
    checkScalarScale(ctx, kWeightScaleInput, "b_scale");
  inferAsFloatBase(ctx, "MatMul", 2);
}

}  // namespace

void registerQuantizedSchemas(OpSchemaRegistry& registry) {
  const int least = int(quantized::kMinInputCount), most = int(quantized::kMaxInputCount);
  registry.add({fused::kDomain, quantized::kQuantizedConv, inferQuantizedConv, least, most});
  registry.add({fused::kDomain, quantized::kQuantizedMatMul, inferQuantizedMatMul, least, most});
}

}  // namespace kiln
