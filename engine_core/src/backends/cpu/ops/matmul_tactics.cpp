// The CPU backend's matrix-product tactics for float32 MatMul, Gemm and kiln.FusedMatMul over
// either, whose B is a matrix (the weights of a linear layer):
//   cpu.matmul.blas    the op's own kernel (OpenBLAS sgemm, epilogue in a pass after it)
//   cpu.matmul.onednn  oneDNN's matmul with bias, activation and residual as post-ops, B packed once
// The builder times both; other products (batched B, integer or double types, Gemm with transA,
// alpha != 1 or a C that is not a row of biases) run the op's kernel alone.
#include <kernels/cpu/gemm/onednn_matmul.h>

#include "../../../ops/fused.h"
#include "../../../runtime/host_execution.h"
#include "fused_epilogue.h"

#include <optional>

namespace kiln {
namespace {

constexpr const char* kBlasTactic = "cpu.matmul.blas";
constexpr const char* kOneDnnTactic = "cpu.matmul.onednn";

// A float32 product the tactics take: its shape and, when it has one, the input holding the bias.
struct MatMulForm {
  kernels::MatMulShape shape;
  std::optional<size_t> biasInput;
};

bool isFusedLayer(const Layer& layer) { return layer.domain == fused::kDomain; }

// What a layer of these input dims computes, when the tactics take it.
std::optional<MatMulForm> matMulForm(const Layer& layer, const LayerShapes& dims) {
  const Layer base = isFusedLayer(layer) ? fused::baseLayer(layer) : layer;
  if (dims.size() < 2 || dims[0].size() < 2 || dims[1].size() != 2) return std::nullopt;
  const std::vector<int64_t> &a = dims[0], &b = dims[1];
  MatMulForm form;
  form.shape.k = a.back();
  form.shape.m = 1;
  for (size_t i = 0; i + 1 < a.size(); ++i) form.shape.m *= a[i];
  const bool hasThird = dims.size() > 2 && !dims[2].empty();
  if (base.opType == "MatMul") {
    if (b[0] != form.shape.k) return std::nullopt;
    form.shape.n = b[1];
    // A fused MatMul's third input is its bias along the last output axis.
    if (isFusedLayer(layer) && layer.inputs.size() > 2 && !layer.inputs[2].empty()) {
      if (!hasThird || dims[2] != std::vector<int64_t>{form.shape.n}) return std::nullopt;
      form.biasInput = 2;
    }
  } else if (base.opType == "Gemm") {
    // Gemm's C becomes the bias only when it is one row added as it is.
    if (a.size() != 2 || base.attrInt("transA", 0) != 0 || base.attrFloat("alpha", 1.0f) != 1.0f) return std::nullopt;
    form.shape.transB = base.attrInt("transB", 0) != 0;
    if (b[form.shape.transB ? 1 : 0] != form.shape.k) return std::nullopt;
    form.shape.n = b[form.shape.transB ? 0 : 1];
    if (layer.inputs.size() > 2 && !layer.inputs[2].empty()) {
      const bool row = hasThird && (dims[2] == std::vector<int64_t>{form.shape.n} ||
                                    dims[2] == std::vector<int64_t>{1, form.shape.n});
      if (!row || base.attrFloat("beta", 1.0f) != 1.0f) return std::nullopt;
      form.biasInput = 2;
    }
  } else {
    return std::nullopt;
  }
  if (!kernels::oneDnnMatMulApplies(form.shape)) return std::nullopt;
  return form;
}

bool applies(const Layer& layer, const LayerInputs& in) {
  for (size_t i = 0; i < layer.inputs.size() && i < in.types.size(); ++i)
    if (!layer.inputs[i].empty() && in.types[i] != DataType::kFloat32) return false;
  auto form = matMulForm(layer, in.dims);
  return form && kernels::OneDnnMatMul::supports(form->shape);
}

LayerShapes inputDims(const KernelContext& ctx) {
  LayerShapes dims;
  for (size_t i = 0; i < ctx.inputCount(); ++i)
    dims.push_back(ctx.hasInput(i) ? ctx.input(i).dims() : std::vector<int64_t>{});
  return dims;
}

uint64_t oneDnnWorkspaceBytes(const Layer& layer, const LayerShapes& dims) {
  auto form = matMulForm(layer, dims);
  return form ? kernels::OneDnnMatMul(true).workspaceBytes(form->shape, {}, form->biasInput.has_value()) : 0;
}

CpuKernelFn oneDnnKernel(const LayerWeights& weights) {
  auto matmul = std::make_shared<kernels::OneDnnMatMul>(weights.size() > 1 && weights[1] != nullptr);
  return [matmul](KernelContext& ctx) {
    for (size_t i = 0; i < ctx.inputCount(); ++i)
      if (ctx.hasInput(i) && ctx.input(i).dtype() != DataType::kFloat32)
        ctx.fail("the plan's matmul tactic runs float32 only, got " + std::string(toString(ctx.input(i).dtype())) +
                 "; rebuild the plan");
    const auto form = matMulForm(ctx.layer(), inputDims(ctx));
    if (!form) ctx.fail("the plan's matmul tactic does not apply to these input shapes; rebuild the plan");
    HostTensor& y = ctx.allocateOutput(0);
    const kernels::Epilogue epilogue = isFusedLayer(ctx.layer()) ? readEpilogue(ctx, y) : kernels::Epilogue{};
    const float* bias = form->biasInput ? ctx.input(*form->biasInput).data<float>() : nullptr;
    matmul->run(form->shape, ctx.input(0).data<float>(), ctx.input(1).data<float>(), bias, epilogue, y.data<float>(),
                [&ctx](uint64_t bytes) { return ctx.workspace(bytes); });
  };
}

}  // namespace

void registerMatMulTactics(CpuKernelRegistry& registry) {
  for (const auto& [domain, opType] : {std::pair<std::string, std::string>{"", "MatMul"},
                                       {"", "Gemm"},
                                       {fused::kDomain, fused::kFusedMatMul}}) {
    registry.addTactic(domain, opType,
                       {kBlasTactic, applies, nullptr,
                        [](const Layer& l, const LayerWeights&, const Tactic&) { return cpuKernelFor(l); }});
    registry.addTactic(domain, opType,
                       {kOneDnnTactic, applies, oneDnnWorkspaceBytes,
                        [](const Layer&, const LayerWeights& weights, const Tactic&) { return oneDnnKernel(weights); }});
  }
}

}  // namespace kiln
