// Conv / ConvTranspose + per-channel bias Add + activation + residual Add (before or after the
// activation) -> one kiln.FusedConv, so the output is written once instead of up to four times.
// A bias Add is folded into the convolution's own B.
#include "../ops/fused.h"
#include "epilogue_match.h"
#include "passes.h"

namespace kiln {
namespace {

using namespace passes;

// The output channel count when the Conv's output has a known rank and channel dim.
std::optional<int64_t> outputChannels(const Network& network, const Layer& conv) {
  const Tensor* out = network.findTensor(conv.outputs[0]);
  if (!out || !out->shape.hasRank() || out->shape.rank() < 3 || !out->shape[1].isKnown()) return std::nullopt;
  return out->shape[1].value();
}

// A constant of shape [M,1,...,1] or [1,M,1,...,1] (right-aligned against the output) adds one
// value per output channel.
bool isPerChannel(const HostTensor& value, size_t outputRank, int64_t channels) {
  if (value.elementCount() != channels || value.rank() < outputRank - 1 || value.rank() > outputRank) return false;
  size_t channelDim = value.rank() - (outputRank - 1);
  for (size_t d = 0; d < value.rank(); ++d)
    if (d != channelDim && value.dim(d) != 1) return false;
  return true;
}

// The convolution's B (if any) plus the Add's per-channel constant, as a [M] tensor.
HostTensor combinedBias(const HostTensor* own, const HostTensor& added) {
  HostTensor sum = added.clone().reshaped({added.elementCount()});
  if (own)
    for (int64_t c = 0; c < sum.elementCount(); ++c) sum.data<float>()[c] += own->data<float>()[c];
  return sum;
}

class FuseConvEpiloguePass final : public EpilogueFusionPass {
 public:
  FuseConvEpiloguePass() : EpilogueFusionPass(fused::kFusedConv) {}
  std::string name() const override { return "FuseConvEpilogue"; }

 private:
  std::optional<Candidate> match(const Network& network, const GraphIndex& index,
                                 const Layer& conv) const override {
    if (!(isOp(conv, "Conv") || isOp(conv, "ConvTranspose")) || !conv.hasOutput(0) || conv.outputs.size() != 1)
      return std::nullopt;
    const Tensor* out = network.findTensor(conv.outputs[0]);
    auto channels = outputChannels(network, conv);
    if (!out || out->dtype != DataType::kFloat32 || !channels) return std::nullopt;

    Candidate candidate{{}, conv, std::nullopt};
    EpilogueMatch& epilogue = candidate.match;
    epilogue.output = conv.outputs[0];
    const HostTensor* ownBias = conv.hasInput(2) ? constantValue(network, conv.inputs[2]) : nullptr;
    bool biasFoldable = !conv.hasInput(2) || (ownBias && ownBias->dtype() == DataType::kFloat32 &&
                                               ownBias->elementCount() == *channels);
    if (biasFoldable) {
      auto accept = [&](const HostTensor& v) { return isPerChannel(v, out->shape.rank(), *channels); };
      if (auto add = matchBiasAdd(network, index, epilogue.output, accept)) {
        candidate.newBias = combinedBias(ownBias, *constantValue(network, add->constant));
        epilogue.layers.push_back(add->layer);
        epilogue.output = index.layer(add->layer).outputs[0];
      }
    }
    matchEpilogueTail(network, index, epilogue);
    candidate.fused.inputs.resize(2);
    candidate.fused.inputs.push_back(conv.hasInput(2) ? conv.inputs[2] : "");
    return candidate;
  }
};

}  // namespace

std::unique_ptr<Pass> createFuseConvEpiloguePass() { return std::make_unique<FuseConvEpiloguePass>(); }

}  // namespace kiln
