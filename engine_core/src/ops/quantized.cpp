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
// Attribute precision "fp8" (absent: "int8") makes the same layers in fp8 e4m3: X quantized on
// entry as e4m3(x / x_scale) (round to nearest even, saturated to +-448, NaN stays NaN) or given as
// float8e4m3 values, weights float8e4m3 (w_scale per output channel or one), zero points float8e4m3
// and 0, products of the decoded values summed in fp32, then the same dequantization and epilogue
// (and y_scale: e4m3(y / y_scale)). Attribute precision "fp4" is NVFP4: X float32, quantized on
// entry in blocks of 16 along K (a Conv's input channels at each pixel, a MatMul's last axis; the
// last block of a row may be shorter), each block's scale s_b = e4m3(amax_b / (6 * x_scale)) and
// its values e2m1(x / (s_b * x_scale)) (saturated to +-6); W uint8 e2m1 codes (low 4 bits) in the
// weights' own shape, input 10 (w_block_scale) their float8e4m3 block scales, blocked alike along
// K, and w_scale their one float32 scale; no zero points. The products of the decoded blocks
// (e2m1 * s_b) sum in fp32, times x_scale * w_scale.
//
// kiln.QuantizedConv   inputs X, W, [B], [Z], x_scale, w_scale, [x_zero_point], [], [y_scale, y_zero_point],
//                      [w_block_scale], [z_scale]
//   y = act(acc * x_scale * w_scale[m] + B[m] + Z)  or  act(acc * x_scale * w_scale[m] + B[m]) + Z
//   X float, int8 or uint8, W int8 [M, C/group, k...], B float32 [M], Z the output's shape, x_scale
//   a float32 scalar, w_scale float32 [M] (one per output channel) or a scalar, zero points int8 or
//   uint8 scalars. fp4 block scales: [M, ceil(C/group / 16), k...]. Attributes: base ("Conv"),
//   precision, that op's attributes and the epilogue attributes of kiln.FusedConv.
// kiln.QuantizedMatMul inputs A, B, [C], [Z], a_scale, b_scale, [a_zero_point], [b_zero_point],
//                      [y_scale, y_zero_point], [b_block_scale], [z_scale]
//   y = act(acc * a_scale * b_scale[n] + C[n] + Z)  or  ... + Z after the activation, with
//   acc = (A - a_zero_point) · (B - b_zero_point) as MatMul multiplies (batch dims broadcast). B is
//   int8 constant weights (b_scale [N] per column or a scalar, no zero point) or an activation:
//   float (quantized on entry) or int8 / uint8, with a scalar b_scale and an optional zero point.
//   fp4 weights are [K, N] with block scales [ceil(K / 16), N]; an fp4 B activation is quantized
//   on entry like A, in blocks along K. C is a bias [N]. Epilogue attributes as for kiln.FusedConv.
// The residual Z is float, or (int8 layers) int8 with z_scale (input 11, a float32 scalar): Z then
// stands for float(Z_q) * z_scale, rounded once to fp32 (quantized.h's kResidualScaleInput).
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

// The 8-bit types a `precision` layer's operands and zero points may hold (fp4 takes none).
bool isQuantizedType(Precision precision, DataType t) {
  return precision == Precision::kFP8 ? t == DataType::kFloat8E4M3 : precision == Precision::kINT8 && isInt8Type(t);
}

// The layer's precision attribute, checked.
Precision precisionOf(const InferenceContext& ctx) {
  const auto p = quantized::precisionOf(ctx.layer());
  if (!p)
    ctx.fail(std::string("attribute '") + quantized::kPrecision + "' is '" + ctx.layer().attrString(quantized::kPrecision) +
             "'; it must be int8, fp8 or fp4");
  return *p;
}

// The weights' element type at each precision (fp4: e2m1 codes, one a byte).
DataType weightType(Precision precision) {
  return precision == Precision::kFP8 ? DataType::kFloat8E4M3
         : precision == Precision::kFP4 ? DataType::kUInt8
                                        : DataType::kInt8;
}

// A quantized operand: float (quantized on entry) or values of the layer's quantized types.
void checkQuantizedOperand(const InferenceContext& ctx, size_t i, const char* name, Precision precision) {
  const DataType t = ctx.inputType(i);
  if (!(isFloatingPoint(t) && t != DataType::kFloat8E4M3 && t != DataType::kFloat8E5M2) && !isQuantizedType(precision, t))
    ctx.fail(std::string(name) + " must be a float" +
             (precision == Precision::kFP8   ? ", or float8e4m3"
              : precision == Precision::kINT8 ? ", int8 or uint8"
                                              : "") +
             " tensor in an " + quantized::precisionName(precision) + " layer, got " + std::string(toString(t)));
}

// An optional zero point of one value; for an operand already quantized, of its type.
void checkZeroPoint(const InferenceContext& ctx, size_t i, const char* name, size_t operand, Precision precision) {
  if (!ctx.hasInput(i)) return;
  const DataType t = ctx.inputType(i);
  if (!isQuantizedType(precision, t))
    ctx.fail(std::string(name) + " cannot be " + std::string(toString(t)) + " in an " + quantized::precisionName(precision) +
             " layer (int8 layers: int8 or uint8; fp8: float8e4m3; fp4: none)");
  const Shape& shape = ctx.inputShape(i);
  if (shape.hasRank() && shape.isFullyKnown() && *shape.elementCount() != 1)
    ctx.fail(std::string(name) + " must hold one value, got shape " + shape.toString());
  const DataType values = ctx.inputType(operand);
  if (isQuantizedType(precision, values) && values != t)
    ctx.fail(std::string(name) + " is " + std::string(toString(t)) + " but its operand holds " +
             std::string(toString(values)));
}

// An fp4 layer's parts: no zero points or output quantization, and block scales (input 10) of
// float8e4m3 shaped `blockDims` (where known) when `weights` are fp4 codes; none otherwise.
void checkFp4(const InferenceContext& ctx, Precision precision, bool weights, const std::vector<Dim>& blockDims) {
  const bool blocks = ctx.hasInput(quantized::kWeightBlockScaleInput);
  if (precision != Precision::kFP4) {
    if (blocks) ctx.fail("only fp4 layers take block scales (input 10)");
    return;
  }
  if (ctx.hasInput(quantized::kActivationZeroPointInput) || ctx.hasInput(quantized::kWeightZeroPointInput) ||
      ctx.hasInput(quantized::kOutputScaleInput))
    ctx.fail("an fp4 layer takes no zero points and no output quantization");
  if (weights != blocks)
    ctx.fail(weights ? "fp4 weights need their block scales (input 10)"
                     : "block scales (input 10) need fp4 weights: uint8 e2m1 codes as input 1");
  if (!blocks) return;
  const Tensor& scales = ctx.input(quantized::kWeightBlockScaleInput);
  if (scales.dtype != DataType::kFloat8E4M3)
    ctx.fail("the fp4 block scales (input 10) must be float8e4m3, got " + std::string(toString(scales.dtype)));
  if (!scales.shape.hasRank()) return;
  bool matches = scales.shape.rank() == blockDims.size();
  for (size_t d = 0; matches && d < blockDims.size(); ++d)
    matches = !scales.shape[d].isKnown() || !blockDims[d].isKnown() || scales.shape[d].value() == blockDims[d].value();
  if (!matches)
    ctx.fail("the fp4 block scales (input 10) have shape " + scales.shape.toString() + "; expected " +
             Shape(blockDims).toString() + " (one per 16 weights along K)");
}

// ceil(d / 16) where d is known.
Dim blocksOf(const Dim& d) {
  return d.isKnown() ? Dim((d.value() + quantized::kFp4BlockSize - 1) / quantized::kFp4BlockSize) : Dim::unknown();
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
  checkZeroPoint(ctx, kOutputZeroPointInput, "y_zero_point", kOutputZeroPointInput, precisionOf(ctx));
  return ctx.inputType(kOutputZeroPointInput);
}

// Runs the float base op's inference (`baseType` with this layer's attributes) on inputs
// [0, baseInputs), inputs 0 and 1 read as float32; output 0 is float32 or quantized (outputType).
void inferAsFloatBase(InferenceContext& ctx, const std::string& baseType, size_t baseInputs) {
  Layer base = ctx.layer();
  base.domain.clear();
  base.opType = baseType;
  for (const char* key : {fused::kBase, fused::kActivation, fused::kActivationAlpha, fused::kActivationBeta,
                          fused::kResidualBeforeActivation, quantized::kPrecision, quantized::kFloatStorage})
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

// The residual (input 3): float, or int8 with its scale (input 11) in an int8 layer.
void checkResidual(const InferenceContext& ctx, Precision precision) {
  const bool scaled = ctx.hasInput(quantized::kResidualScaleInput);
  if (!ctx.hasInput(quantized::kResidualInput)) {
    if (scaled) ctx.fail("z_scale (input 11) needs an int8 residual (input 3)");
    return;
  }
  const DataType z = ctx.inputType(quantized::kResidualInput);
  if (z != DataType::kInt8) {
    if (scaled) ctx.fail("z_scale (input 11) is for an int8 residual; the residual is " + std::string(toString(z)));
    return;
  }
  if (precision != Precision::kINT8)
    ctx.fail(std::string("an int8 residual needs an int8 layer; this one is ") + quantized::precisionName(precision));
  if (!scaled) ctx.fail("the int8 residual (input 3) needs its scale z_scale (input 11)");
  checkScalarScale(ctx, quantized::kResidualScaleInput, "z_scale");
}

void inferQuantizedConv(InferenceContext& ctx) {
  const std::string base = ctx.layer().attrString(fused::kBase, "");
  if (base != "Conv") ctx.fail("attribute 'base' must be Conv, got '" + base + "'");
  const Precision precision = precisionOf(ctx);
  if (ctx.inputType(1) != weightType(precision))
    ctx.fail(std::string("the weights (input 1) of an ") + quantized::precisionName(precision) + " layer must be " +
             std::string(toString(weightType(precision))) + ", got " + std::string(toString(ctx.inputType(1))));
  checkQuantizedOperand(ctx, 0, "X", precision);
  checkScalarScale(ctx, kActivationScaleInput, "x_scale");
  checkZeroPoint(ctx, kActivationZeroPointInput, "x_zero_point", 0, precision);
  checkResidual(ctx, precision);
  if (ctx.hasInput(kWeightZeroPointInput)) ctx.fail("quantized weights are symmetric: w_zero_point must be absent");
  const Shape& w = ctx.inputShape(1);
  std::vector<Dim> blocks;  // [M, ceil(C/group / 16), k...]
  if (w.hasRank() && w.rank() >= 2) {
    blocks = w.dims();
    blocks[1] = blocksOf(w[1]);
  }
  checkFp4(ctx, precision, true, blocks);
  if (precision == Precision::kFP4) checkScalarScale(ctx, kWeightScaleInput, "w_scale");
  else checkScales(ctx, kWeightScaleInput, "w_scale", w.hasRank() ? w[0] : Dim::unknown());
  inferAsFloatBase(ctx, "Conv", 3);
}

void inferQuantizedMatMul(InferenceContext& ctx) {
  const Precision precision = precisionOf(ctx);
  checkQuantizedOperand(ctx, 0, "A", precision);
  const Shape& bShape = ctx.inputShape(1);
  const bool fp4Weights = precision == Precision::kFP4 && ctx.inputType(1) == DataType::kUInt8;
  if (!fp4Weights) checkQuantizedOperand(ctx, 1, "B", precision);
  checkScalarScale(ctx, kActivationScaleInput, "a_scale");
  checkZeroPoint(ctx, kActivationZeroPointInput, "a_zero_point", 0, precision);
  checkZeroPoint(ctx, kWeightZeroPointInput, "b_zero_point", 1, precision);
  checkResidual(ctx, precision);
  std::vector<Dim> blocks;  // [ceil(K / 16), N]
  if (bShape.hasRank() && bShape.rank() == 2) blocks = {blocksOf(bShape[0]), bShape[1]};
  checkFp4(ctx, precision, fp4Weights, blocks);
  if (fp4Weights && bShape.hasRank() && bShape.rank() != 2) ctx.fail("fp4 weights (B) must be a matrix [K, N]");
  const bool weights = ctx.inputType(1) == weightType(precision) && precision != Precision::kFP4 &&
                       !ctx.hasInput(kWeightZeroPointInput);
  if (weights)  // per column
    checkScales(ctx, kWeightScaleInput, "b_scale",
                bShape.hasRank() && bShape.rank() >= 2 ? bShape[bShape.rank() - 1] : Dim(1));
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
