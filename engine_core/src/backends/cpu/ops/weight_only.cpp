// CPU kernels for the INT4 weight-only ops (semantics: engine_core/src/ops/weight_only.cpp and
// weight_only_nbits.cpp): the float activations times weights dequantized one K-tile at a time
// into the step's workspace and multiplied by the ordinary sgemm (kernels/cpu/quant/int4_weights.h),
// then the fp32 epilogue. One tactic, cpu.matmul.int4_dequant_gemm, so the workspace is planned.
// MatMulNBits (only the reference executor meets it: the builder turns it into
// kiln.WeightOnlyMatMul) converts its weights on every run.
#include <kernels/cpu/quant/int4_weights.h>

#include "../../../ops/op_families.h"
#include "../../../ops/weight_only.h"
#include "fused_epilogue.h"

namespace kiln {
namespace {

using weight_only::kScalesInput;
using weight_only::kZeroPointsInput;

constexpr const char* kDequantGemmTactic = "cpu.matmul.int4_dequant_gemm";

kernels::Int4Weights weightsShape(const Layer& layer) {
  kernels::Int4Weights w;
  w.k = layer.attrInt(weight_only::kK, 0);
  w.n = layer.attrInt(weight_only::kN, 0);
  w.groupSize = layer.attrInt(weight_only::kGroupSize, 0);
  return w;
}

// The layer's weights, checked against its attributes (a plan's tensors are verified, not trusted).
kernels::Int4Weights weightsOf(const KernelContext& ctx) {
  kernels::Int4Weights w = weightsShape(ctx.layer());
  if (w.k <= 0 || w.n <= 0 || w.groupSize <= 0 || w.groupSize % 2 != 0)
    ctx.fail("attributes K, N and group_size must be positive (group_size even)");
  const HostTensor& packed = ctx.input(1);
  if (packed.dtype() != DataType::kUInt8 || packed.elementCount() != w.n * w.bytesPerColumn())
    ctx.fail("the packed weights must be " + std::to_string(w.n * w.bytesPerColumn()) + " uint8 values");
  w.packed = packed.data<uint8_t>();
  w.scales = float32Input(ctx, kScalesInput, w.n * w.groups(), "the scales");
  if (ctx.hasInput(kZeroPointsInput)) {
    const HostTensor& zeros = ctx.input(kZeroPointsInput);
    if (zeros.dtype() != DataType::kInt8 || zeros.elementCount() != w.n * w.groups())
      ctx.fail("the zero points must be " + std::to_string(w.n * w.groups()) + " int8 values");
    w.zeros = zeros.data<int8_t>();
  }
  return w;
}

// y = A · W over A's rows, then the epilogue (bias, activation, residual) in place.
void runInt4MatMul(KernelContext& ctx, const kernels::Int4Weights& w, HostTensor& y, const kernels::Epilogue& epilogue) {
  const HostTensor& a = ctx.input(0);
  if (a.rank() == 0 || a.dims().back() != w.k)
    ctx.fail("A has shape " + dimsToString(a.dims()) + "; its last dim must be K = " + std::to_string(w.k));
  auto* workspace = static_cast<float*>(ctx.workspace(uint64_t(kernels::int4MatMulWorkspaceFloats(w)) * 4));
  kernels::int4MatMul(float32Input(ctx, 0, a.elementCount(), "A"), a.elementCount() / w.k, w, y.data<float>(),
                      workspace);
  if (!epilogue.isIdentity()) kernels::applyEpilogue(y.data<float>(), y.elementCount(), epilogue);
}

kernels::Epilogue withColumnBias(kernels::Epilogue epilogue, const float* bias, int64_t columns) {
  if (bias) {
    epilogue.bias = bias;
    epilogue.biasLength = columns;
  }
  return epilogue;
}

void weightOnlyMatMul(KernelContext& ctx) {
  const kernels::Int4Weights w = weightsOf(ctx);
  const float* bias = ctx.hasInput(2) ? float32Input(ctx, 2, w.n, "the bias") : nullptr;
  HostTensor& y = ctx.allocateOutput(0);
  runInt4MatMul(ctx, w, y, withColumnBias(readEpilogue(ctx, y), bias, w.n));
}

void matMulNBits(KernelContext& ctx) {
  std::string why;
  const auto shape = weight_only::readNBitsShape(ctx.layer(), why);
  if (!shape) ctx.fail(why);
  const HostTensor* zeroPoints = ctx.hasInput(weight_only::kNBitsZeroPointsInput)
                                     ? &ctx.input(weight_only::kNBitsZeroPointsInput)
                                     : nullptr;
  const weight_only::Int4Tensors t = weight_only::int4FromMatMulNBits(
      *shape, ctx.input(1), ctx.input(weight_only::kNBitsScalesInput), zeroPoints, ctx.layer().describe());
  kernels::Int4Weights w{t.packed.data<uint8_t>(), t.scales.data<float>(),
                         t.zeros ? t.zeros->data<int8_t>() : nullptr, t.k, t.n, t.groupSize};
  const float* bias = ctx.hasInput(weight_only::kNBitsBiasInput)
                          ? float32Input(ctx, weight_only::kNBitsBiasInput, w.n, "the bias")
                          : nullptr;
  runInt4MatMul(ctx, w, ctx.allocateOutput(0), withColumnBias(kernels::Epilogue{}, bias, w.n));
}

uint64_t dequantGemmWorkspace(const Layer& layer, const LayerShapes&) {
  const kernels::Int4Weights w = weightsShape(layer);
  if (w.k <= 0 || w.n <= 0 || w.groupSize <= 0) return 0;
  return uint64_t(kernels::int4MatMulWorkspaceFloats(w)) * 4;
}

}  // namespace

void registerWeightOnlyCpuKernels(CpuKernelRegistry& registry) {
  registry.add(fused::kDomain, weight_only::kWeightOnlyMatMul, weightOnlyMatMul);
  registry.add(weight_only::kMicrosoftDomain, weight_only::kMatMulNBits, matMulNBits);
  registry.addTactic(fused::kDomain, weight_only::kWeightOnlyMatMul,
                     {kDequantGemmTactic, nullptr, dequantGemmWorkspace,
                      [](const Layer&, const LayerWeights&, const Tactic&) -> CpuKernelFn { return weightOnlyMatMul; }});
}

}  // namespace kiln
