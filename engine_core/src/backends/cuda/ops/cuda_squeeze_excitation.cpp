// kiln.SqueezeExcitation on the GPU (kernels/cuda/pool/squeeze_excitation.h): the global average
// pool and both 1x1 products of a squeeze-and-excitation block in two kernels, where the unfused
// layers took four or five launches (the pool's split pass, two library GEMMs) of a few
// microseconds each: EfficientNet-B0 has sixteen such blocks, MobileNetV3-Large eight. The input
// is read channels-last or channels-first, as the plan keeps it; the [N, C2, 1, 1] gate is the
// same bytes in both layouts. The FuseSqueezeExcitation pass makes the layer only for this backend.
#include "../../../ops/fused.h"
#include "../../common/fused_epilogue.h"
#include "../cuda_ops.h"
#include "../cuda_precision.h"
#include "../cuda_runtime_support.h"
#include "../cuda_step.h"

#include <kernels/cuda/pool/squeeze_excitation.h>

#include <kiln/error.h>

#include <algorithm>

namespace kiln::cuda {
namespace {

namespace k = kernels::cuda;
namespace se = fused::squeeze_excitation;

const std::string kTacticPrefix = "cuda.squeeze_excitation.";

int64_t spatialOf(const std::vector<int64_t>& x) {
  int64_t spatial = 1;
  for (size_t d = 2; d < x.size(); ++d) spatial *= x[d];
  return spatial;
}

// `activations` with the kernel's dims for X [N, C, spatial...], W1 [R, C, 1...] and W2 [C2, R,
// 1...]; nullopt where they do not fit together or the kernel refuses them.
std::optional<k::SqueezeExcitation> problemOf(const std::vector<int64_t>& x, const std::vector<int64_t>& w1,
                                              const std::vector<int64_t>& w2, k::SqueezeExcitation activations = {}) {
  if (x.size() < 3 || w1.size() < 2 || w2.size() < 2 || w1[1] != x[1] || w2[1] != w1[0]) return {};
  k::SqueezeExcitation p = activations;
  p.batch = x[0], p.channels = x[1], p.spatial = spatialOf(x), p.hidden = w1[0], p.outChannels = w2[0];
  if (!k::squeezeExcitationTakes(p)) return {};
  return p;
}

class SqueezeExcitationStep : public CudaStep {
 public:
  SqueezeExcitationStep(const Layer& layer, const Tactic& tactic, const LayerSignature& signature, CudaDevice& device)
      : CudaStep(layer, tactic, signature, device,
                 storageOf(outputDeclared(signature), tacticPrecision(layer, tactic))),
        layout_(tactic.inputFormat(se::kX) == TensorFormat::kNHWC ? k::PoolLayout::kChannelsLast
                                                                  : k::PoolLayout::kChannelsFirst),
        hasB1_(layer.hasInput(se::kB1)),
        hasB2_(layer.hasInput(se::kB2)),
        name_(layer.describe()) {
    const FusedEpilogue squeeze = readFusedEpilogue(layer, fused::kSqueezePrefix);
    const FusedEpilogue excite = readFusedEpilogue(layer, fused::kExcitePrefix);
    activations_.squeeze = squeeze.activation;
    activations_.squeezeAlpha = squeeze.alpha, activations_.squeezeBeta = squeeze.beta;
    activations_.excite = excite.activation;
    activations_.exciteAlpha = excite.alpha, activations_.exciteBeta = excite.beta;
  }

  uint64_t workspaceBytes(std::span<const TensorView> inputs, std::span<const TensorView>) const override {
    if (inputs.size() <= se::kW2) return 0;
    const auto p = problemOf(inputs[se::kX].dims, inputs[se::kW1].dims, inputs[se::kW2].dims);
    return p ? k::squeezeExcitationWorkspaceBytes(*p, layout_, elementType(inputs[se::kX])) : 0;
  }

  void enqueue(const StepArgs& args, Stream& stream) const override {
    const auto p =
        problemOf(args.inputs[se::kX].dims, args.inputs[se::kW1].dims, args.inputs[se::kW2].dims, activations_);
    if (!p)
      throw Error(ErrorCode::kUnsupported, name_ + ": input " + dimsToString(args.inputs[se::kX].dims) +
                                               " with filters " + dimsToString(args.inputs[se::kW1].dims) + " and " +
                                               dimsToString(args.inputs[se::kW2].dims) +
                                               " is not a squeeze-and-excitation the kernel takes (at most " +
                                               std::to_string(k::kSqueezeExcitationMaxValues) +
                                               " channels and hidden values); rebuild the plan");
    if (p->batch == 0) return;
    const TensorView& gate = args.outputs[0];
    check(k::squeezeExcitation(*p, input(args, se::kX), input(args, se::kW1), hasB1_ ? input(args, se::kB1) : nullptr,
                               input(args, se::kW2), hasB2_ ? input(args, se::kB2) : nullptr, gate.data, layout_,
                               elementType(gate), args.workspace, args.workspaceBytes, streamOf(stream)));
  }

 private:
  k::PoolLayout layout_;
  k::SqueezeExcitation activations_;  // only the activation fields
  bool hasB1_, hasB2_;
  std::string name_;
};

std::vector<Tactic> squeezeExcitationTactics(const Layer&, Precision precision, const LayerInputs& inputs,
                                             CudaDevice&) {
  Tactic t;
  t.id = kTacticPrefix + precisionTag(precision);
  const auto p = inputs.dims.size() > se::kW2
                     ? problemOf(inputs.dims[se::kX], inputs.dims[se::kW1], inputs.dims[se::kW2])
                     : std::nullopt;
  if (p) {  // either layout the plan gives
    const DataType storage = storageOf(inputs.types.empty() ? DataType::kFloat32 : inputs.types[0], precision);
    if (const auto type = elementTypeOf(storage))
      t.workspaceBytes = std::max(k::squeezeExcitationWorkspaceBytes(*p, k::PoolLayout::kChannelsLast, *type),
                                  k::squeezeExcitationWorkspaceBytes(*p, k::PoolLayout::kChannelsFirst, *type));
  }
  return {t};
}

SupportVerdict squeezeExcitationTensors(const Layer&, Precision, const LayerSignature& tensors) {
  return firstRefusal(
      {ranksWithinLimit(tensors), allOfTypes(tensors, {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16})});
}

}  // namespace

void registerSqueezeExcitationCudaOps(CudaOpRegistry& registry) {
  CudaOp op = stepOp<SqueezeExcitationStep>(squeezeExcitationTensors);
  op.tactics = squeezeExcitationTactics;
  op.channelsLastInputs = [](const Layer&, const std::string&) { return std::vector<size_t>{se::kX}; };
  registry.add(fused::kDomain, fused::kSqueezeExcitation, op);
}

}  // namespace kiln::cuda
