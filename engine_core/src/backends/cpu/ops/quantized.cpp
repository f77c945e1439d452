// CPU kernels for Kiln's int8 layers (semantics: engine_core/src/ops/quantized.cpp): activations
// quantized on entry or given as int8 / uint8 with their zero point, int8 weights, exact int32
// accumulation, dequantized into the fp32 epilogue, and quantized again when the layer has y_scale.
// Layers of precision fp8 and fp4 go to quantized_small_float.cpp.
#include <kernels/cpu/quant/int8_layers.h>
#include <kernels/cpu/quant/quantize.h>

#include "../../../ops/op_families.h"
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
using quantized::kOutputScaleInput;
using quantized::kOutputZeroPointInput;
using quantized::kWeightScaleInput;
using quantized::kWeightZeroPointInput;

// The operand's integers minus its zero point (see kernels::centeredFromFloat).
std::vector<int16_t> centeredOperand(const KernelContext& ctx, size_t i, const Quantization& q, const char* what) {
  const HostTensor& t = ctx.input(i);
  std::vector<int16_t> centered(static_cast<size_t>(t.elementCount()));
  dispatchEightBit(q.type, [&](auto tag) {
    using Q = decltype(tag);
    if (t.dtype() == q.type)
      kernels::centeredFromQuantized<Q>(t.data<Q>(), t.elementCount(), Q(q.zero), centered.data());
    else
      kernels::centeredFromFloat<Q>(float32Input(ctx, i, t.elementCount(), what), t.elementCount(), q.scale, Q(q.zero),
                                    centered.data());
  });
  return centered;
}

bool isSmallFloat(const KernelContext& ctx) {
  return quantized::precisionOf(ctx.layer()).value_or(Precision::kINT8) != Precision::kINT8;
}

void quantizedConv(KernelContext& ctx) {
  if (isSmallFloat(ctx)) return smallFloatConv(ctx);
  const HostTensor &x = ctx.input(0), &w = ctx.input(1);
  if (w.dtype() != DataType::kInt8) ctx.fail("the weights must be int8");
  if (ctx.hasInput(kWeightZeroPointInput)) ctx.fail("int8 weights are symmetric: w_zero_point must be absent");
  const kernels::ConvShape shape = forwardConvShape(fused::baseLayer(ctx.layer()), x, w);
  const float* bias = ctx.hasInput(2) ? float32Input(ctx, 2, shape.outChannels, "the bias") : nullptr;
  const Quantization xq = quantizationOf(ctx, 0, kActivationScaleInput, kActivationZeroPointInput, "X");
  int64_t wScaleCount = 0;
  const float* wScales = scaleValues(ctx, kWeightScaleInput, shape.outChannels, "w_scale", wScaleCount);
  const std::vector<int16_t> centered = centeredOperand(ctx, 0, xq, "X");
  FloatResult y(ctx);
  const kernels::Epilogue epilogue = y.epilogue();
  kernels::int8Convolution(shape, centered.data(), xq.scale, w.data<int8_t>(), wScales, wScaleCount, bias, epilogue,
                           y.data());
  y.finish();
}

void quantizedMatMul(KernelContext& ctx) {
  if (isSmallFloat(ctx)) return smallFloatMatMul(ctx);
  const MatMulPlan plan = planMatMul(ctx.input(0).dims(), ctx.input(1).dims());
  const MatMulQuantization q = matMulQuantization(ctx, plan.N);
  auto storageFor = [&](size_t i, const Quantization& operand) {  // room to quantize a float operand into
    return std::vector<uint8_t>(ctx.input(i).dtype() == operand.type ? 0 : size_t(ctx.input(i).elementCount()));
  };
  std::vector<uint8_t> aStorage = storageFor(0, q.a), bStorage = storageFor(1, q.b);
  const void* a = eightBitOperand(ctx, 0, q.a, "A", aStorage.data());
  const void* b = eightBitOperand(ctx, 1, q.b, "B", bStorage.data());
  const int64_t batch = int64_t(plan.aOffsets.size());
  std::vector<int32_t> acc(size_t(batch * plan.M * plan.N));
  dispatchEightBit(q.a.type, [&](auto aTag) {
    dispatchEightBit(q.b.type, [&](auto bTag) {
      using A = decltype(aTag);
      using B = decltype(bTag);
      const A aZero = A(q.a.zero);
      const B bZero = B(q.b.zero);
      kernels::integerMatMul<A, B>(static_cast<const A*>(a), static_cast<const B*>(b), acc.data(), batch,
                                   plan.aOffsets.data(), plan.bOffsets.data(), plan.M, plan.N, plan.K, &aZero, 1,
                                   &bZero, 1);
    });
  });
  finishInt8MatMul(ctx, q, acc.data(), batch * plan.M, plan.N);
}

}  // namespace

float scalarScale(const KernelContext& ctx, size_t i, const char* what) { return *float32Input(ctx, i, 1, what); }

const float* scaleValues(const KernelContext& ctx, size_t i, int64_t count, const char* what, int64_t& valueCount) {
  valueCount = ctx.input(i).elementCount();
  return float32Input(ctx, i, valueCount == 1 ? 1 : count, what);
}

Quantization quantizationOf(const KernelContext& ctx, size_t operand, size_t scale, size_t zeroPoint,
                            const char* what) {
  Quantization q{scalarScale(ctx, scale, what)};
  const DataType values = ctx.input(operand).dtype();
  if (values == DataType::kInt8 || values == DataType::kUInt8) q.type = values;
  if (ctx.hasInput(zeroPoint)) {
    const HostTensor& z = ctx.input(zeroPoint);
    if (z.elementCount() != 1) ctx.fail(std::string("the zero point of ") + what + " must hold one value");
    q.type = z.dtype();
    dispatchEightBit(z.dtype(), [&](auto tag) { q.zero = int(z.data<decltype(tag)>()[0]); });
  }
  return q;
}

const void* eightBitOperand(const KernelContext& ctx, size_t i, const Quantization& q, const char* what,
                            uint8_t* storage) {
  const HostTensor& t = ctx.input(i);
  if (t.dtype() == q.type) return t.rawData();
  dispatchEightBit(q.type, [&](auto tag) {
    using Q = decltype(tag);
    const Q zero = Q(q.zero);
    kernels::quantizeLinear<float, Q>(float32Input(ctx, i, t.elementCount(), what), &q.scale, &zero,
                                      reinterpret_cast<Q*>(storage), 1, 1, t.elementCount());
  });
  return storage;
}

MatMulQuantization matMulQuantization(const KernelContext& ctx, int64_t columns) {
  MatMulQuantization q;
  q.a = quantizationOf(ctx, 0, kActivationScaleInput, kActivationZeroPointInput, "A");
  q.bWeights = ctx.input(1).dtype() == DataType::kInt8 && !ctx.hasInput(kWeightZeroPointInput);
  if (q.bWeights) {
    q.bScales = scaleValues(ctx, kWeightScaleInput, columns, "b_scale", q.bScaleCount);
    q.b = Quantization{q.bScales[0]};
  } else {
    q.b = quantizationOf(ctx, 1, kWeightScaleInput, kWeightZeroPointInput, "B");
  }
  return q;
}

void finishInt8MatMul(KernelContext& ctx, const MatMulQuantization& q, const int32_t* acc, int64_t rows,
                      int64_t columns) {
  std::vector<float> multipliers(static_cast<size_t>(columns));
  kernels::dequantizeMultipliers(q.a.scale, q.columnScales(), q.bScaleCount, columns, multipliers.data());
  FloatResult y(ctx);
  kernels::dequantizeAccumulators(acc, rows, columns, 1, multipliers.data(), y.data());
  y.finishMatMul(columns);
}

FloatResult::FloatResult(KernelContext& ctx) : ctx_(ctx), out_(ctx.allocateOutput(0)) {
  if (out_.dtype() != DataType::kFloat32) buffer_.resize(size_t(out_.elementCount()));
}

kernels::Epilogue FloatResult::epilogue() {
  if (!ctx_.hasInput(quantized::kResidualInput) || ctx_.input(quantized::kResidualInput).dtype() != DataType::kInt8)
    return readEpilogue(ctx_, out_);
  const HostTensor& z = ctx_.input(quantized::kResidualInput);
  if (!ctx_.hasInput(quantized::kResidualScaleInput)) ctx_.fail("the int8 residual needs its scale (input 11)");
  const float scale = scalarScale(ctx_, quantized::kResidualScaleInput, "z_scale");
  residual_.resize(size_t(z.elementCount()));
  const int8_t* q = z.data<int8_t>();
  for (size_t i = 0; i < residual_.size(); ++i) residual_[i] = float(q[i]) * scale;
  return readEpilogue(ctx_, out_, residual_.data());
}

void FloatResult::finishMatMul(int64_t columns) {
  kernels::Epilogue epilogue = this->epilogue();
  if (ctx_.hasInput(2)) {
    epilogue.bias = float32Input(ctx_, 2, columns, "the bias");
    epilogue.biasLength = columns;
  }
  kernels::applyEpilogue(data(), out_.elementCount(), epilogue);
  finish();
}

void FloatResult::finish() {
  if (buffer_.empty()) return;
  const float scale = scalarScale(ctx_, kOutputScaleInput, "y_scale");
  const HostTensor& zero = ctx_.input(kOutputZeroPointInput);
  if (out_.dtype() == DataType::kFloat8E4M3) {
    kernels::quantizeLinearFp8(buffer_.data(), &scale, static_cast<const uint8_t*>(zero.rawData()),
                               static_cast<uint8_t*>(out_.rawData()), 1, 1, out_.elementCount(), true);
    return;
  }
  dispatchEightBit(out_.dtype(), [&](auto tag) {
    using Q = decltype(tag);
    kernels::quantizeLinear<float, Q>(buffer_.data(), &scale, zero.data<Q>(), out_.data<Q>(), 1, 1,
                                      out_.elementCount());
  });
}

void registerQuantizedTactics(CpuKernelRegistry& registry);

void registerQuantizedCpuKernels(CpuKernelRegistry& registry) {
  registry.add(fused::kDomain, quantized::kQuantizedConv, quantizedConv);
  registry.add(fused::kDomain, quantized::kQuantizedMatMul, quantizedMatMul);
  registerQuantizedTactics(registry);
}

}  // namespace kiln
