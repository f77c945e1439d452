// Type and shape inference for QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear.
#include "matmul_quant.h"

namespace kiln {
namespace {

bool isQuantizedType(DataType t) {
  return t == DataType::kUInt8 || t == DataType::kInt8 || t == DataType::kUInt16 || t == DataType::kInt16;
}

bool isScaleType(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat64 || t == DataType::kFloat16 || t == DataType::kBFloat16;
}

// Scale (input 1) and zero point (input 2): scalars for per-tensor quantization, or 1-D with one
// value per position of `axis` (opset 13+).
void checkScaleAndZeroPoint(const InferenceContext& ctx) {
  const Shape& x = ctx.inputShape(0);
  const Shape& scale = ctx.inputShape(1);
  if (!isScaleType(ctx.inputType(1)))
    ctx.fail("scale has type " + std::string(toString(ctx.inputType(1))) + "; expected a float type");
  if (ctx.hasInput(2) && ctx.hasInput(1)) {
    const Shape& zero = ctx.inputShape(2);
    if (scale.hasRank() && zero.hasRank() && scale.rank() == zero.rank())
      for (size_t d = 0; d < scale.rank(); ++d)
        if (scale[d].isKnown() && zero[d].isKnown() && scale[d].value() != zero[d].value())
          ctx.fail("scale " + scale.toString() + " and zero point " + zero.toString() + " must have the same shape");
  }
  if (!scale.hasRank()) return;
  if (scale.rank() > 1)
    ctx.fail("scale has shape " + scale.toString() +
             "; expected a scalar or a 1-D tensor (per-axis); blocked "
             "quantization is not supported");
  if (scale.rank() == 0 || !x.hasRank()) return;
  const int64_t axis = ctx.normalizeAxis(ctx.layer().attrInt("axis", 1), int64_t(x.rank()));
  if (scale[0].isKnown() && x[axis].isKnown() && scale[0].value() != 1 && scale[0].value() != x[axis].value())
    ctx.fail("scale has " + scale[0].toString() + " values but input dimension " + std::to_string(axis) + " is " +
             x[axis].toString() + "; per-axis scales need one value per position of 'axis'");
}

// The quantized type QuantizeLinear makes: its zero point's, else opset 21's output_dtype (an ONNX
// TensorProto data type: 2 uint8, 3 int8, 4 uint16, 5 int16, 17 float8e4m3fn), else uint8.
DataType quantizedOutputType(const InferenceContext& ctx) {
  if (ctx.hasInput(2)) return ctx.inputType(2);
  switch (ctx.layer().attrInt("output_dtype", 0)) {
    case 0:
    case 2: return DataType::kUInt8;
    case 3: return DataType::kInt8;
    case 4: return DataType::kUInt16;
    case 5: return DataType::kInt16;
    case 17: return DataType::kFloat8E4M3;
    default:
      ctx.fail("output_dtype " + std::to_string(ctx.layer().attrInt("output_dtype", 0)) +
               " is not supported; use uint8 (2), int8 (3), uint16 (4), int16 (5) or float8e4m3fn (17)");
  }
}

void inferQuantizeLinear(InferenceContext& ctx) {
  const DataType in = ctx.inputType(0);
  if (!isScaleType(in) && in != DataType::kInt32)
    ctx.fail("input has type " + std::string(toString(in)) + "; expected float32, float16, bfloat16 or int32");
  checkScaleAndZeroPoint(ctx);
  const DataType out = quantizedOutputType(ctx);
  if (!isQuantizedType(out) && out != DataType::kFloat8E4M3)
    ctx.fail("quantizing to " + std::string(toString(out)) +
             " is not supported; use a uint8, int8, uint16, int16 or float8e4m3fn zero point");
  if (out == DataType::kFloat8E4M3 && in == DataType::kInt32) ctx.fail("quantizing int32 to float8 is not supported");
  if (ctx.layer().attrInt("saturate", 1) == 0 && out != DataType::kFloat8E4M3)
    ctx.fail("saturate=0 only applies to float8 outputs");
  ctx.setOutput(0, out, ctx.inputShape(0));
}

void inferDequantizeLinear(InferenceContext& ctx) {
  const DataType in = ctx.inputType(0);
  if (!isQuantizedType(in) && in != DataType::kInt32 && in != DataType::kFloat8E4M3)
    ctx.fail("input has type " + std::string(toString(in)) +
             "; expected uint8, int8, uint16, int16, int32 or float8e4m3fn");
  if (ctx.hasInput(2) && ctx.inputType(2) != in)
    ctx.fail("zero point has type " + std::string(toString(ctx.inputType(2))) + ", expected " +
             std::string(toString(in)) + " like the input");
  checkScaleAndZeroPoint(ctx);
  ctx.setOutput(0, ctx.inputType(1), ctx.inputShape(0));
}

void inferDynamicQuantizeLinear(InferenceContext& ctx) {
  if (ctx.inputType(0) != DataType::kFloat32)
    ctx.fail("input has type " + std::string(toString(ctx.inputType(0))) + "; expected float32");
  ctx.setOutput(0, DataType::kUInt8, ctx.inputShape(0));
  ctx.setOutput(1, DataType::kFloat32, Shape::fromDims({}));
  ctx.setOutput(2, DataType::kUInt8, Shape::fromDims({}));
}

}  // namespace

void registerQuantizeSchemas(OpSchemaRegistry& registry) {
  registry.add({"", "QuantizeLinear", inferQuantizeLinear, 2, 3});
  registry.add({"", "DequantizeLinear", inferDequantizeLinear, 2, 3});
  registry.add({"", "DynamicQuantizeLinear", inferDynamicQuantizeLinear, 1, 1});
}

}  // namespace kiln
