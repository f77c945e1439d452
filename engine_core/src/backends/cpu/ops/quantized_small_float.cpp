// CPU kernels of the fp8 and fp4 quantized layers (semantics: engine_core/src/ops/quantized.cpp),
// emulated exactly: every operand becomes the float values of its fp8 e4m3 or NVFP4 encoding
// (kernels/cpu/quant/small_float_layers.h), the products sum in fp32 and the sums are dequantized
// per output channel before the fp32 epilogue, as the GPU's block-scaled tensor cores compute them.
#include <kernels/cpu/quant/int8_layers.h>
#include <kernels/cpu/quant/small_float_layers.h>

#include "../../../ops/quantized.h"
#include "conv_pool_common.h"
#include "fused_epilogue.h"
#include "matmul_quant.h"
#include "quantized_layers.h"

#include <vector>

namespace kiln {
namespace {

using quantized::kActivationScaleInput;
using quantized::kActivationZeroPointInput;
using quantized::kWeightBlockScaleInput;
using quantized::kWeightScaleInput;
using quantized::kWeightZeroPointInput;

const uint8_t* codesOf(const HostTensor& t) { return static_cast<const uint8_t*>(t.rawData()); }

// fp8 zero points must be 0: fp8 quantization is symmetric (a Q/DQ model's float8 zero point is 0).
void checkZeroPoint(const KernelContext& ctx, size_t i, const char* what) {
  if (!ctx.hasInput(i)) return;
  const HostTensor& z = ctx.input(i);
  if (z.dtype() != DataType::kFloat8E4M3 || z.elementCount() != 1 || (codesOf(z)[0] & 0x7F) != 0)
    ctx.fail(std::string("the zero point of ") + what + " must be one float8e4m3 zero (fp8 layers are symmetric)");
}

// Operand i as the fp8 values it stands for (without its scale): decoded, or quantized on entry.
std::vector<float> fp8Operand(const KernelContext& ctx, size_t i, float scale, size_t zeroPoint, const char* what) {
  checkZeroPoint(ctx, zeroPoint, what);
  const HostTensor& t = ctx.input(i);
  std::vector<float> values(static_cast<size_t>(t.elementCount()));
  if (t.dtype() == DataType::kFloat8E4M3) kernels::fp8Decoded(codesOf(t), t.elementCount(), values.data());
  else kernels::fp8Values(float32Input(ctx, i, t.elementCount(), what), t.elementCount(), scale, values.data());
  return values;
}

// A float operand as its NVFP4 values, blocked along `layout`'s axis (without the tensor scale).
std::vector<float> fp4Operand(const KernelContext& ctx, size_t i, const kernels::BlockedAxis& layout, float scale,
                              const char* what) {
  const HostTensor& t = ctx.input(i);
  std::vector<float> values(static_cast<size_t>(t.elementCount()));
  kernels::nvfp4Values(float32Input(ctx, i, t.elementCount(), what), layout, scale, values.data());
  return values;
}

// fp4 weights (e2m1 codes, input 1) with their block scales as their decoded values.
std::vector<float> fp4Weights(const KernelContext& ctx, const kernels::BlockedAxis& layout) {
  const HostTensor &w = ctx.input(1), &blocks = ctx.input(kWeightBlockScaleInput);
  if (w.dtype() != DataType::kUInt8 || blocks.dtype() != DataType::kFloat8E4M3 ||
      blocks.elementCount() != layout.scaleCount())
    ctx.fail("fp4 weights must be uint8 e2m1 codes with " + std::to_string(layout.scaleCount()) +
             " float8e4m3 block scales");
  std::vector<float> values(static_cast<size_t>(w.elementCount()));
  kernels::nvfp4Decoded(codesOf(w), codesOf(blocks), layout, values.data());
  return values;
}

// One scale, or one per channel (`channels` of them), as a vector of `channels` multipliers times xScale.
std::vector<float> multipliersOf(const KernelContext& ctx, float xScale, int64_t channels, const char* what) {
  const int64_t count = ctx.input(kWeightScaleInput).elementCount();
  const float* w = float32Input(ctx, kWeightScaleInput, count == 1 ? 1 : channels, what);
  std::vector<float> m(static_cast<size_t>(channels));
  kernels::dequantizeMultipliers(xScale, w, count, channels, m.data());
  return m;
}

bool isFp4(const KernelContext& ctx) { return quantized::precisionOf(ctx.layer()) == Precision::kFP4; }

}  // namespace

void smallFloatConv(KernelContext& ctx) {
  const HostTensor &x = ctx.input(0), &w = ctx.input(1);
  const kernels::ConvShape shape = forwardConvShape(fused::baseLayer(ctx.layer()), x, w);
  const float* bias = ctx.hasInput(2) ? float32Input(ctx, 2, shape.outChannels, "the bias") : nullptr;
  const float xScale = scalarScale(ctx, kActivationScaleInput, "x_scale");
  if (ctx.hasInput(kWeightZeroPointInput)) ctx.fail("quantized weights are symmetric: w_zero_point must be absent");
  std::vector<float> xv, wv;
  if (isFp4(ctx)) {  // blocks along each group's input channels, at every pixel (NHWC's K)
    const int64_t groupChannels = shape.inChannels / shape.group;
    xv = fp4Operand(ctx, 0, {shape.batch * shape.group, groupChannels, shape.window.inSize()}, xScale, "X");
    wv = fp4Weights(ctx, {shape.outChannels, groupChannels, shape.window.kernelSize()});
  } else {
    xv = fp8Operand(ctx, 0, xScale, kActivationZeroPointInput, "X");
    if (w.dtype() != DataType::kFloat8E4M3) ctx.fail("fp8 weights must be float8e4m3");
    wv.resize(static_cast<size_t>(w.elementCount()));
    kernels::fp8Decoded(codesOf(w), w.elementCount(), wv.data());
  }
  const std::vector<float> multipliers = multipliersOf(ctx, xScale, shape.outChannels, "w_scale");
  FloatResult y(ctx);
  const kernels::Epilogue epilogue = readEpilogue(ctx, y.output());
  kernels::dequantizedConvolution(shape, xv.data(), wv.data(), multipliers.data(), bias, epilogue, y.data());
  y.finish();
}

void smallFloatMatMul(KernelContext& ctx) {
  const HostTensor &a = ctx.input(0), &b = ctx.input(1);
  const MatMulPlan plan = planMatMul(a.dims(), b.dims());
  const float aScale = scalarScale(ctx, kActivationScaleInput, "a_scale");
  std::vector<float> av, bv;
  std::vector<float> multipliers;
  if (isFp4(ctx)) {  // blocks along K: A's rows, B's columns
    av = fp4Operand(ctx, 0, {a.elementCount() / plan.K, plan.K, 1}, aScale, "A");
    const float bScale = scalarScale(ctx, kWeightScaleInput, "b_scale");
    const kernels::BlockedAxis bLayout{b.elementCount() / (plan.K * plan.N), plan.K, plan.N};
    bv = ctx.hasInput(kWeightBlockScaleInput) ? fp4Weights(ctx, bLayout) : fp4Operand(ctx, 1, bLayout, bScale, "B");
    multipliers.assign(size_t(plan.N), aScale * bScale);
  } else {
    av = fp8Operand(ctx, 0, aScale, kActivationZeroPointInput, "A");
    const int64_t bScales = ctx.input(kWeightScaleInput).elementCount();
    if (bScales != 1 && (b.dtype() != DataType::kFloat8E4M3 || ctx.hasInput(kWeightZeroPointInput)))
      ctx.fail("only fp8 weights (no zero point) take per-column scales");
    bv = fp8Operand(ctx, 1, bScales == 1 ? scalarScale(ctx, kWeightScaleInput, "b_scale") : 1.0f,
                    kWeightZeroPointInput, "B");
    multipliers = multipliersOf(ctx, aScale, plan.N, "b_scale");
  }
  FloatResult y(ctx);
  const int64_t batch = int64_t(plan.aOffsets.size());
  kernels::dequantizedMatMul(av.data(), bv.data(), y.data(), batch, plan.aOffsets.data(), plan.bOffsets.data(), plan.M,
                             plan.N, plan.K, multipliers.data());
  y.finishMatMul(plan.N);
}

}  // namespace kiln
