// CPU kernels for Kiln's int8 layers (semantics: engine_core/src/ops/quantized.cpp): activations
// quantized on entry, int8 weights, exact int32 accumulation, dequantized into the fp32 epilogue.
#include <kernels/cpu/quant/int8_layers.h>
#include <kernels/cpu/quant/quantize.h>

#include "../../../ops/op_families.h"
#include "../../../ops/quantized.h"
#include "conv_pool_common.h"
#include "fused_epilogue.h"
#include "matmul_quant.h"

#include <vector>

namespace kiln {
namespace {

using quantized::kActivationScaleInput;
using quantized::kWeightScaleInput;

float scalarScale(const KernelContext& ctx, size_t i, const char* what) {
  return *float32Input(ctx, i, 1, what);
}

// A float32 scale tensor with 1 or `count` values; its value count goes to `valueCount`.
const float* scales(const KernelContext& ctx, size_t i, int64_t count, const char* what, int64_t& valueCount) {
  valueCount = ctx.input(i).elementCount();
  return float32Input(ctx, i, valueCount == 1 ? 1 : count, what);
}

const float* float32Activation(const KernelContext& ctx, size_t i, const char* what) {
  return float32Input(ctx, i, ctx.input(i).elementCount(), what);
}

void quantizedConv(KernelContext& ctx) {
  const HostTensor &x = ctx.input(0), &w = ctx.input(1);
  if (w.dtype() != DataType::kInt8) ctx.fail("the weights must be int8");
  const kernels::ConvShape shape = forwardConvShape(fused::baseLayer(ctx.layer()), x, w);
  const float* bias = ctx.hasInput(2) ? float32Input(ctx, 2, shape.outChannels, "the bias") : nullptr;
  const float xScale = scalarScale(ctx, kActivationScaleInput, "x_scale");
  int64_t wScaleCount = 0;
  const float* wScales = scales(ctx, kWeightScaleInput, shape.outChannels, "w_scale", wScaleCount);
  HostTensor& y = ctx.allocateOutput(0);
  const kernels::Epilogue epilogue = readEpilogue(ctx, y);
  kernels::int8Convolution(shape, float32Activation(ctx, 0, "X"), xScale, w.data<int8_t>(), wScales, wScaleCount,
                           bias, epilogue, y.data<float>());
}

// Operand i as int8: taken as is, or quantized with `scale` when it is float32.
const int8_t* int8Operand(const KernelContext& ctx, size_t i, float scale, std::vector<int8_t>& storage) {
  const HostTensor& t = ctx.input(i);
  if (t.dtype() == DataType::kInt8) return t.data<int8_t>();
  storage.resize(size_t(t.elementCount()));
  kernels::quantizeSymmetric(float32Activation(ctx, i, i == 0 ? "A" : "B"), t.elementCount(), scale, storage.data());
  return storage.data();
}

void quantizedMatMul(KernelContext& ctx) {
  const MatMulPlan plan = planMatMul(ctx.input(0).dims(), ctx.input(1).dims());
  const float aScale = scalarScale(ctx, kActivationScaleInput, "a_scale");
  int64_t bScaleCount = 0;
  const float* bScales = scales(ctx, kWeightScaleInput, plan.N, "b_scale", bScaleCount);
  if (ctx.input(1).dtype() != DataType::kInt8 && bScaleCount != 1)
    ctx.fail("a float B is quantized per tensor: b_scale must hold one value");
  std::vector<int8_t> aStorage, bStorage;
  const int8_t* a = int8Operand(ctx, 0, aScale, aStorage);
  const int8_t* b = int8Operand(ctx, 1, bScales[0], bStorage);
  const int64_t batch = int64_t(plan.aOffsets.size());
  std::vector<int32_t> acc(size_t(batch * plan.M * plan.N));
  kernels::integerMatMul<int8_t, int8_t>(a, b, acc.data(), batch, plan.aOffsets.data(), plan.bOffsets.data(), plan.M,
                                         plan.N, plan.K, nullptr, 1, nullptr, 1);
  std::vector<float> multipliers(size_t(plan.N));
  kernels::dequantizeMultipliers(aScale, bScales, bScaleCount, plan.N, multipliers.data());
  HostTensor& y = ctx.allocateOutput(0);
  kernels::dequantizeAccumulators(acc.data(), batch * plan.M, plan.N, 1, multipliers.data(), y.data<float>());
  kernels::Epilogue epilogue = readEpilogue(ctx, y);
  if (ctx.hasInput(2)) {
    epilogue.bias = float32Input(ctx, 2, plan.N, "the bias");
    epilogue.biasLength = plan.N;
  }
  kernels::applyEpilogue(y.data<float>(), y.elementCount(), epilogue);
}

}  // namespace

void registerQuantizedCpuKernels(CpuKernelRegistry& registry) {
  registry.add(fused::kDomain, quantized::kQuantizedConv, quantizedConv);
  registry.add(fused::kDomain, quantized::kQuantizedMatMul, quantizedMatMul);
}

}  // namespace kiln
