// The CPU backend's tactic for int8 kiln.QuantizedConv / kiln.QuantizedMatMul, cpu.quantized.onednn:
// oneDNN's int8 convolution and matmul compute the exact int32 sums (kernels/cpu/quant/onednn_int8.h)
// and the reference kernels' dequantization follows, so the outputs are theirs bit for bit. Offered
// where oneDNN's sums are exact (a CPU with AVX-512 VNNI); a layer oneDNN has no kernel for (uint8
// or zero-pointed B operands, its reference loops only, sums that could leave int32) runs the
// reference kernel inside the same step.
#include <kernels/cpu/common/onednn_support.h>
#include <kernels/cpu/quant/int8_layers.h>
#include <kernels/cpu/quant/onednn_int8.h>

#include "../../../ops/quantized.h"
#include "conv_pool_common.h"
#include "fused_epilogue.h"
#include "matmul_quant.h"
#include "quantized_layers.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <vector>

namespace kiln {
namespace {

using kernels::Int8Source;
using kernels::onednn::aligned;
using quantized::kActivationScaleInput;
using quantized::kActivationZeroPointInput;
using quantized::kWeightScaleInput;
using quantized::kWeightZeroPointInput;

constexpr const char* kTactic = "cpu.quantized.onednn";

bool isInt8(const Layer& layer) { return quantized::precisionOf(layer) == Precision::kINT8; }

bool applies(const Layer& layer, const LayerInputs& in) {
  if (!isInt8(layer) || !kernels::oneDnnInt8Exact() || in.types.size() < 2) return false;
  for (size_t i : {size_t(0), size_t(1)})
    if (in.types[i] != DataType::kFloat32 && in.types[i] != DataType::kInt8 && in.types[i] != DataType::kUInt8)
      return false;
  return layer.opType == quantized::kQuantizedMatMul || in.types[1] == DataType::kInt8;
}

Int8Source sourceOf(const Quantization& q) {
  return q.type == DataType::kUInt8 ? Int8Source::kUnsigned : Int8Source::kSigned;
}

// The part of the workspace each piece takes: the quantized activation, the int32 sums, oneDNN's.
struct Int8Workspace {
  uint64_t activation, sums, onednn;
  uint64_t total() const { return activation + sums + onednn; }
};

Int8Workspace int8Workspace(int64_t activationCount, int64_t sumCount, uint64_t onednnBytes) {
  return {aligned(uint64_t(activationCount)), aligned(uint64_t(sumCount) * sizeof(int32_t)), onednnBytes};
}

// --- kiln.QuantizedConv ---

uint64_t convWorkspaceBytes(const Layer& layer, const LayerShapes& dims) {
  if (dims.size() < 2 || dims[0].size() < 3 || dims[0].size() != dims[1].size()) return 0;
  try {
    const kernels::ConvShape s = forwardConvShape(fused::baseLayer(layer), dims[0], dims[1]);
    // The most any X needs (int8 or uint8, with a zero point or not: oneDNN's scratchpads differ).
    std::optional<uint64_t> onednn;
    const kernels::OneDnnInt8Convolution conv(true);
    for (Int8Source source : {Int8Source::kSigned, Int8Source::kUnsigned})
      for (bool zeroPoint : {false, true})
        if (auto bytes = conv.workspaceBytes(s, source, zeroPoint)) onednn = std::max(onednn.value_or(0), *bytes);
    if (!onednn) return 0;  // the reference kernel runs
    return int8Workspace(s.batch * s.inChannels * s.window.inSize(), s.batch * s.outChannels * s.window.outSize(),
                         *onednn)
        .total();
  } catch (const Error&) {
    return 0;
  }
}

void runConv(KernelContext& ctx, kernels::OneDnnInt8Convolution& conv, const CpuKernelFn& reference) {
  const HostTensor &x = ctx.input(0), &w = ctx.input(1);
  if (!isInt8(ctx.layer()) || w.dtype() != DataType::kInt8 || ctx.hasInput(kWeightZeroPointInput))
    return reference(ctx);  // it names what is wrong
  const kernels::ConvShape shape = forwardConvShape(fused::baseLayer(ctx.layer()), x, w);
  const Quantization xq = quantizationOf(ctx, 0, kActivationScaleInput, kActivationZeroPointInput, "X");
  const auto onednnBytes = conv.prepare(shape, sourceOf(xq), xq.zero != 0);
  if (!onednnBytes) return reference(ctx);
  const float* bias = ctx.hasInput(2) ? float32Input(ctx, 2, shape.outChannels, "the bias") : nullptr;
  int64_t wScaleCount = 0;
  const float* wScales = scaleValues(ctx, kWeightScaleInput, shape.outChannels, "w_scale", wScaleCount);

  const Int8Workspace parts =
      int8Workspace(x.elementCount(), shape.batch * shape.outChannels * shape.window.outSize(), *onednnBytes);
  auto* scratch = static_cast<uint8_t*>(ctx.workspace(parts.total()));
  auto* acc = reinterpret_cast<int32_t*>(scratch + parts.activation);
  const void* x8 = eightBitOperand(ctx, 0, xq, "X", scratch);
  conv.run(shape, x8, sourceOf(xq), xq.zero, w.data<int8_t>(), acc,
           [&](uint64_t) { return scratch + parts.activation + parts.sums; });
  FloatResult y(ctx);
  kernels::dequantizeConvolutionAccumulators(shape, acc, xq.scale, wScales, wScaleCount, bias, y.epilogue(), y.data());
  y.finish();
}

// --- kiln.QuantizedMatMul ---

uint64_t matMulWorkspaceBytes(const Layer&, const LayerShapes& dims) {
  if (dims.size() < 2 || dims[0].empty() || dims[1].empty()) return 0;
  try {
    const MatMulPlan plan = planMatMul(dims[0], dims[1]);
    const int64_t batch = int64_t(plan.aOffsets.size());
    // The most an int8 or uint8 A needs, with constant int8 weights.
    std::optional<uint64_t> onednn;
    const kernels::OneDnnInt8MatMul matmul(true);
    for (Int8Source source : {Int8Source::kSigned, Int8Source::kUnsigned})
      if (auto bytes =
              matmul.workspaceBytes(batch, plan.aOffsets.data(), plan.bOffsets.data(), plan.M, plan.K, plan.N, source))
        onednn = std::max(onednn.value_or(0), *bytes);
    if (!onednn) return 0;  // the reference kernel runs
    return int8Workspace(elementCount(dims[0]), batch * plan.M * plan.N, *onednn).total();
  } catch (const Error&) {
    return 0;
  }
}

void runMatMul(KernelContext& ctx, kernels::OneDnnInt8MatMul& matmul, const CpuKernelFn& reference) {
  if (!isInt8(ctx.layer())) return reference(ctx);
  const MatMulPlan plan = planMatMul(ctx.input(0).dims(), ctx.input(1).dims());
  const MatMulQuantization q = matMulQuantization(ctx, plan.N);
  // oneDNN multiplies by int8 weights only: B must be int8 or float quantized to int8, without a
  // zero point (A's is taken out after the product).
  const bool bInt8 = q.b.type == DataType::kInt8 && q.b.zero == 0 &&
                     (ctx.input(1).dtype() == DataType::kInt8 || ctx.input(1).dtype() == DataType::kFloat32);
  const int64_t batch = int64_t(plan.aOffsets.size());
  const auto onednnBytes =
      bInt8 ? matmul.prepare(batch, plan.aOffsets.data(), plan.bOffsets.data(), plan.M, plan.K, plan.N, sourceOf(q.a))
            : std::nullopt;
  if (!onednnBytes) return reference(ctx);

  const Int8Workspace parts = int8Workspace(ctx.input(0).elementCount(), batch * plan.M * plan.N, *onednnBytes);
  auto* scratch = static_cast<uint8_t*>(ctx.workspace(parts.total()));
  auto* acc = reinterpret_cast<int32_t*>(scratch + parts.activation);
  const void* a = eightBitOperand(ctx, 0, q.a, "A", scratch);
  std::vector<uint8_t> bStorage(ctx.input(1).dtype() == DataType::kInt8 ? 0 : size_t(ctx.input(1).elementCount()));
  const void* b = eightBitOperand(ctx, 1, q.b, "B", bStorage.data());
  matmul.run(batch, plan.aOffsets.data(), plan.bOffsets.data(), plan.M, plan.K, plan.N, a, sourceOf(q.a), q.a.zero,
             static_cast<const int8_t*>(b), acc, [&](uint64_t) { return scratch + parts.activation + parts.sums; });
  finishInt8MatMul(ctx, q, acc, batch * plan.M, plan.N);
}

CpuKernelFn instantiate(const Layer& layer, const LayerWeights& weights) {
  const CpuKernelFn& reference = cpuKernelFor(layer);
  // Constant int8 weights are re-laid out for oneDNN once; a float B is quantized on every run.
  const bool constantWeights = weights.size() > 1 && weights[1] && weights[1]->dtype() == DataType::kInt8;
  if (layer.opType == quantized::kQuantizedConv) {
    auto conv = std::make_shared<kernels::OneDnnInt8Convolution>(constantWeights);
    return [conv, &reference](KernelContext& ctx) { runConv(ctx, *conv, reference); };
  }
  auto matmul = std::make_shared<kernels::OneDnnInt8MatMul>(constantWeights);
  return [matmul, &reference](KernelContext& ctx) { runMatMul(ctx, *matmul, reference); };
}

}  // namespace

void registerQuantizedTactics(CpuKernelRegistry& registry) {
  auto make = [](const Layer& l, const LayerWeights& weights, const Tactic&) { return instantiate(l, weights); };
  registry.addTactic(fused::kDomain, quantized::kQuantizedConv, {kTactic, applies, convWorkspaceBytes, make});
  registry.addTactic(fused::kDomain, quantized::kQuantizedMatMul, {kTactic, applies, matMulWorkspaceBytes, make});
}

}  // namespace kiln
