// Kiln's quantized ops (domain "kiln"), made from float layers by the INT8 quantization step
// (passes/quantize_layers.cpp). Their type and shape inference; the CPU kernels are in
// backends/cpu/ops/quantized.cpp.
//
// Both quantize their float activation operands on entry, q = saturate(round_half_even(x / scale))
// into [-128, 127] (ONNX QuantizeLinear with a zero point of 0), take int8 weights as they are,
// accumulate exact products in int32 and dequantize into float32: acc * (x_scale * w_scale[c]).
// The fused epilogue (bias, activation, residual) then runs in float32 as for kiln.FusedConv.
//
// kiln.QuantizedConv   inputs X, W, [B], [Z], x_scale, w_scale
//   y = act(acc * x_scale * w_scale[m] + B[m] + Z)  or  act(acc * x_scale * w_scale[m] + B[m]) + Z
//   X float, W int8 [M, C/group, k...], B float32 [M], Z the output's shape, x_scale a float32
//   scalar, w_scale float32 [M] (one per output channel) or a scalar. Attributes: base ("Conv"),
//   that op's attributes and the epilogue attributes of kiln.FusedConv.
// kiln.QuantizedMatMul inputs A, B, [C], [Z], a_scale, b_scale
//   y = act(acc * a_scale * b_scale[n] + C[n] + Z)  or  ... + Z after the activation, with
//   acc = A · B as MatMul multiplies (batch dims broadcast). B is int8 (constant weights, b_scale
//   [N] per column or a scalar) or float (an activation, quantized on entry with a scalar b_scale).
//   C is a bias [N]. Epilogue attributes as for kiln.FusedConv.
#include "quantized.h"

#include "op_families.h"
#include "op_schema.h"

namespace kiln {
namespace {

using quantized::kActivationScaleInput;
using quantized::kWeightScaleInput;

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

// Runs the float base op's inference (`baseType` with this layer's attributes) on inputs
// [0, baseInputs), input 1 read as if it had X's float type; output 0 becomes float32.
void inferAsFloatBase(InferenceContext& ctx, const std::string& baseType, size_t baseInputs) {
  if (!isFloatingPoint(ctx.inputType(0))) ctx.fail("input 0 must be a float tensor");
  Layer base = ctx.layer();
  base.domain.clear();
  base.opType = baseType;
  for (const char* key : {fused::kBase, fused::kActivation, fused::kActivationAlpha, fused::kActivationBeta,
                          fused::kResidualBeforeActivation})
    base.attributes.erase(key);
  base.inputs.resize(std::min(base.inputs.size(), baseInputs));
  while (!base.inputs.empty() && base.inputs.back().empty()) base.inputs.pop_back();
  base.outputs.resize(1);
  Tensor weights = ctx.input(1);
  weights.dtype = ctx.inputType(0);
  weights.constant.reset();
  std::vector<const Tensor*> inputs;
  for (size_t i = 0; i < base.inputs.size(); ++i) inputs.push_back(i == 1 ? &weights : ctx.hasInput(i) ? &ctx.input(i) : nullptr);
  const OpSchema* schema = OpSchemaRegistry::instance().find("", baseType);
  InferenceContext baseCtx(base, std::move(inputs), [](size_t) -> const HostTensor* { return nullptr; });
  schema->infer(baseCtx);
  const Shape& out = baseCtx.output(0).shape;
  if (ctx.hasInput(3) && ctx.inputShape(3).hasRank() && out.hasRank() && ctx.inputShape(3).rank() != out.rank())
    ctx.fail("the residual input has shape " + ctx.inputShape(3).toString() + " but the output has shape " +
             out.toString() + "; they must be equal");
  ctx.setOutput(0, DataType::kFloat32, out);
}

void inferQuantizedConv(InferenceContext& ctx) {
  const std::string base = ctx.layer().attrString(fused::kBase, "");
  if (base != "Conv") ctx.fail("attribute 'base' must be Conv, got '" + base + "'");
  if (ctx.inputType(1) != DataType::kInt8) ctx.fail("the weights (input 1) must be int8");
  checkScalarScale(ctx, kActivationScaleInput, "x_scale");
  const Shape& w = ctx.inputShape(1);
  checkScales(ctx, kWeightScaleInput, "w_scale", w.hasRank() ? w[0] : Dim::unknown());
  inferAsFloatBase(ctx, "Conv", 3);
}

void inferQuantizedMatMul(InferenceContext& ctx) {
  const DataType b = ctx.inputType(1);
  if (b != DataType::kInt8 && !isFloatingPoint(b)) ctx.fail("input B must be int8 or a float tensor");
  checkScalarScale(ctx, kActivationScaleInput, "a_scale");
  const Shape& bShape = ctx.inputShape(1);
  if (b == DataType::kInt8)
    checkScales(ctx, kWeightScaleInput, "b_scale", bShape.hasRank() && bShape.rank() >= 2 ? bShape[bShape.rank() - 1] : Dim(1));
  else
    checkScalarScale(ctx, kWeightScaleInput, "b_scale");
  inferAsFloatBase(ctx, "MatMul", 2);
}

}  // namespace

void registerQuantizedSchemas(OpSchemaRegistry& registry) {
  const int inputs = int(quantized::kInputCount);
  registry.add({fused::kDomain, quantized::kQuantizedConv, inferQuantizedConv, inputs, inputs});
  registry.add({fused::kDomain, quantized::kQuantizedMatMul, inferQuantizedMatMul, inputs, inputs});
}

}  // namespace kiln
