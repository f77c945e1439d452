// The CPU backend's convolution tactics: Conv and kiln.FusedConv over Conv, float32, one tactic per
// kernels::ConvAlgorithm plus oneDNN's JIT convolutions, each running the fused epilogue (bias,
// activation, residual) itself. The builder times those that apply; Conv layers of other types run
// the reference kernel.
#include <kernels/cpu/conv/direct_conv.h>
#include <kernels/cpu/conv/onednn_conv.h>

#include "../../../ops/fused.h"
#include "conv_pool_common.h"
#include "fused_epilogue.h"

#include <functional>
#include <optional>

namespace kiln {
namespace {

using kernels::ConvAlgorithm;

struct ConvTacticSpec {
  const char* id;
  ConvAlgorithm algorithm;
};

// Best general guess first: the specialised paths where they apply, then im2col + GEMM.
constexpr ConvTacticSpec kConvTactics[] = {{"cpu.conv.gemm_1x1", ConvAlgorithm::kPointwiseGemm},
                                           {"cpu.conv.depthwise", ConvAlgorithm::kDepthwise},
                                           {"cpu.conv.im2col_gemm", ConvAlgorithm::kIm2colGemm},
                                           {"cpu.conv.direct", ConvAlgorithm::kDirect}};

bool isFusedLayer(const Layer& layer) { return layer.domain == fused::kDomain; }

// The Conv attributes of a Conv or FusedConv layer.
Layer convLayer(const Layer& layer) { return isFusedLayer(layer) ? fused::baseLayer(layer) : layer; }

// The convolution at these input dims, when they are known.
std::optional<kernels::ConvShape> convShapeAt(const Layer& layer, const LayerShapes& dims) {
  if (dims.size() < 2 || dims[0].size() < 3 || dims[0].size() > 2 + size_t(kernels::kMaxSpatialRank) ||
      dims[1].size() != dims[0].size())
    return std::nullopt;
  try {
    return forwardConvShape(convLayer(layer), dims[0], dims[1]);
  } catch (const Error&) {
    return std::nullopt;
  }
}

// The float32 convolution a tactic would run, when the layer is one.
std::optional<kernels::ConvShape> float32ConvShape(const Layer& layer, const LayerInputs& in) {
  if (isFusedLayer(layer) && layer.attrString(fused::kBase, "") != "Conv") return std::nullopt;
  for (size_t i = 0; i < layer.inputs.size() && i < in.types.size(); ++i)
    if (!layer.inputs[i].empty() && in.types[i] != DataType::kFloat32) return std::nullopt;
  return convShapeAt(layer, in.dims);
}

bool applies(const ConvTacticSpec& spec, const Layer& layer, const LayerInputs& in) {
  auto shape = float32ConvShape(layer, in);
  if (!shape || !kernels::convAlgorithmApplies(spec.algorithm, *shape)) return false;
  // The direct loops make 16 output channels of a group at a time: with fewer most lanes are idle.
  return spec.algorithm != ConvAlgorithm::kDirect || shape->outChannels / shape->group >= 8;
}

uint64_t workspaceBytes(const ConvTacticSpec& spec, const Layer& layer, const LayerShapes& dims) {
  auto shape = convShapeAt(layer, dims);
  return shape ? kernels::convWorkspaceBytes(spec.algorithm, *shape) : 0;
}

// The float32 convolution of a tactic's kernel at run time; fails (asking for a rebuild) when the
// inputs are not float32 or `applies` rejects the shape.
kernels::ConvShape runtimeConvShape(KernelContext& ctx, const std::function<bool(const kernels::ConvShape&)>& applies) {
  const HostTensor &x = ctx.input(0), &w = ctx.input(1);
  if (x.dtype() != DataType::kFloat32 || w.dtype() != DataType::kFloat32)
    ctx.fail("the plan's convolution tactic runs float32 only, got " + std::string(toString(x.dtype())) +
             "; rebuild the plan");
  const kernels::ConvShape shape = forwardConvShape(convLayer(ctx.layer()), x, w);
  if (!applies(shape))
    ctx.fail("the plan's convolution tactic does not apply to this convolution's shape; rebuild the plan");
  return shape;
}

// `packed`: the direct tactic's weights, repacked once when they are constant.
CpuKernelFn convKernel(ConvAlgorithm algorithm, std::shared_ptr<const std::vector<float>> packed) {
  return [algorithm, packed](KernelContext& ctx) {
    const kernels::ConvShape shape = runtimeConvShape(
        ctx, [algorithm](const kernels::ConvShape& s) { return kernels::convAlgorithmApplies(algorithm, s); });
    const HostTensor &x = ctx.input(0), &w = ctx.input(1);
    const float* bias = ctx.hasInput(2) ? float32Input(ctx, 2, shape.outChannels, "the bias") : nullptr;
    HostTensor& y = ctx.allocateOutput(0);
    const kernels::Epilogue epilogue = isFusedLayer(ctx.layer()) ? readEpilogue(ctx, y) : kernels::Epilogue{};
    void* workspace = ctx.workspace(kernels::convWorkspaceBytes(algorithm, shape));
    if (packed)
      kernels::directConvolution(shape, x.data<float>(), packed->data(), bias, epilogue, y.data<float>(),
                                 static_cast<float*>(workspace));
    else
      kernels::convolution(shape, x.data<float>(), w.data<float>(), bias, epilogue, y.data<float>(), algorithm,
                           workspace);
  };
}

CpuKernelFn instantiate(const ConvTacticSpec& spec, const Layer& layer, const LayerWeights& weights) {
  const HostTensor* w = weights.size() > 1 ? weights[1] : nullptr;
  if (spec.algorithm != ConvAlgorithm::kDirect || !w || w->dtype() != DataType::kFloat32 || w->rank() < 3)
    return convKernel(spec.algorithm, nullptr);
  const int64_t group = convLayer(layer).attrInt("group", 1);
  const int64_t kernelSize = elementCount(std::vector<int64_t>(w->dims().begin() + 2, w->dims().end()));
  return convKernel(spec.algorithm, std::make_shared<const std::vector<float>>(kernels::packDirectConvWeights(
                                        group, w->dim(0), w->dim(1), kernelSize, w->data<float>())));
}

// oneDNN's JIT convolutions: one kernels::OneDnnConvolution per plan layer, which prepares each
// shape it meets once.
constexpr const char* kOneDnnTactic = "cpu.conv.onednn";

uint64_t oneDnnWorkspaceBytes(const Layer& layer, const LayerShapes& dims) {
  auto shape = convShapeAt(layer, dims);
  if (!shape || !kernels::oneDnnConvApplies(*shape)) return 0;
  // Sized for constant weights (re-laid out once, outside the workspace) and no epilogue: the
  // epilogue's post-ops do not change the buffers; a step that needs more asks for it at run time.
  return kernels::OneDnnConvolution(true).workspaceBytes(*shape, {}, layer.inputs.size() > 2 && !layer.inputs[2].empty());
}

CpuKernelFn oneDnnKernel(const Layer& layer, const LayerWeights& weights, const Tactic& tactic) {
  const bool constantWeights = weights.size() > 1 && weights[1] != nullptr;
  kernels::ActivationLayouts layouts;
  layouts.xChannelsLast = tactic.inputFormat(0) == TensorFormat::kNHWC;
  layouts.residualChannelsLast = isFusedLayer(layer) && tactic.inputFormat(3) == TensorFormat::kNHWC;
  layouts.yChannelsLast = tactic.outputFormat == TensorFormat::kNHWC;
  auto conv = std::make_shared<kernels::OneDnnConvolution>(constantWeights, layouts);
  return [conv](KernelContext& ctx) {
    const kernels::ConvShape shape = runtimeConvShape(ctx, kernels::oneDnnConvApplies);
    const float* bias = ctx.hasInput(2) ? float32Input(ctx, 2, shape.outChannels, "the bias") : nullptr;
    HostTensor& y = ctx.allocateOutput(0);
    const kernels::Epilogue epilogue = isFusedLayer(ctx.layer()) ? readEpilogue(ctx, y) : kernels::Epilogue{};
    conv->run(shape, ctx.input(0).data<float>(), ctx.input(1).data<float>(), bias, epilogue, y.data<float>(),
              [&ctx](uint64_t bytes) { return ctx.workspace(bytes); });
  };
}

}  // namespace

void registerConvTactics(CpuKernelRegistry& registry) {
  for (const auto& [domain, opType] : {std::pair<std::string, std::string>{"", "Conv"}, {fused::kDomain, fused::kFusedConv}}) {
    for (const ConvTacticSpec& spec : kConvTactics)
      registry.addTactic(domain, opType,
                         {spec.id, [spec](const Layer& l, const LayerInputs& in) { return applies(spec, l, in); },
                          [spec](const Layer& l, const LayerShapes& dims) { return workspaceBytes(spec, l, dims); },
                          [spec](const Layer& l, const LayerWeights& weights, const Tactic&) {
                            return instantiate(spec, l, weights);
                          }});
    registry.addTactic(
        domain, opType,
        {kOneDnnTactic,
         [](const Layer& l, const LayerInputs& in) {
           auto shape = float32ConvShape(l, in);
           return shape && kernels::OneDnnConvolution::supports(*shape);
         },
         oneDnnWorkspaceBytes,
         [](const Layer& l, const LayerWeights& weights, const Tactic& tactic) { return oneDnnKernel(l, weights, tactic); },
         /*channelsLast=*/true});
  }
}

}  // namespace kiln
