// A squeeze-and-excitation block's gate (EfficientNet, MobileNetV3): GlobalAveragePool(x) -> 1x1
// (Fused)Conv FC1 -> 1x1 (Fused)Conv FC2, each intermediate read only by the next layer -> one
// kiln.SqueezeExcitation. At batch 1 on the GPU the pool (with its split-finish kernel) and the two
// tiny convolutions are four launches a block, which the CUDA backend's kernel makes one; the Mul
// that applies the gate to x stays. Only for the CUDA backend (the CPU runs the three layers as fast
// apart) and only where it supports the fused layer.
#include "../ops/fused.h"
#include "graph_utils.h"
#include "passes.h"

#include <algorithm>

namespace kiln {
namespace {

using namespace passes;

// Whether every value of int-list attribute `key` is `expected` (an absent attribute is the default).
bool allValues(const Layer& layer, const char* key, int64_t expected) {
  const std::vector<int64_t> values = layer.attrInts(key, {});
  return std::all_of(values.begin(), values.end(), [&](int64_t v) { return v == expected; });
}

bool isFloat32(const Network& network, const std::string& tensor) {
  const Tensor* t = network.findTensor(tensor);
  return t && t->dtype == DataType::kFloat32;
}

// One fully connected stage of the block: a 1x1 convolution over a [N, C, 1, ...] map that is a plain
// matrix-vector product per image, with its epilogue's activation.
struct Stage {
  std::string filter, bias;  // bias "" when none
  int64_t outputs = 0;
  std::string activation;
  float alpha = 0, beta = 0;
};

// `layer` as a stage reading `input` (of `rank` dims and `channels` channels), or nullopt: a plain
// Conv or a kiln.FusedConv over Conv, group 1, no residual, a constant float32 filter whose spatial
// dims are all 1, a constant float32 bias or none, unit strides and dilations, no padding.
std::optional<Stage> matchStage(const Network& network, const Layer& layer, const std::string& input, size_t rank,
                                int64_t channels) {
  const bool fusedConv = layer.domain == fused::kDomain && layer.opType == fused::kFusedConv &&
                         layer.attrString(fused::kBase, "") == "Conv";
  if (!(fusedConv || isOp(layer, "Conv")) || layer.inputs.size() < 2 || layer.inputs.size() > 3 ||
      layer.outputs.size() != 1 || layer.inputs[0] != input || layer.inputs[1] == input)
    return std::nullopt;
  if (layer.attrInt("group", 1) != 1 || layer.attrString("auto_pad", "NOTSET") != "NOTSET" ||
      !allValues(layer, "strides", 1) || !allValues(layer, "dilations", 1) || !allValues(layer, "pads", 0) ||
      !allValues(layer, "kernel_shape", 1) || !isFloat32(network, layer.outputs[0]))
    return std::nullopt;
  const HostTensor* filter = constantValue(network, layer.inputs[1]);
  if (!filter || filter->dtype() != DataType::kFloat32 || filter->rank() != rank || filter->dim(1) != channels)
    return std::nullopt;
  for (size_t d = 2; d < rank; ++d)
    if (filter->dim(d) != 1) return std::nullopt;
  Stage stage;
  stage.filter = layer.inputs[1];
  stage.outputs = filter->dim(0);
  if (layer.hasInput(2)) {
    const HostTensor* bias = constantValue(network, layer.inputs[2]);
    if (!bias || bias->dtype() != DataType::kFloat32 || bias->rank() != 1 || bias->dim(0) != stage.outputs)
      return std::nullopt;
    stage.bias = layer.inputs[2];
  }
  if (fusedConv) {
    stage.activation = layer.attrString(fused::kActivation, "");
    stage.alpha = layer.attrFloat(fused::kActivationAlpha, 0.0f);
    stage.beta = layer.attrFloat(fused::kActivationBeta, 0.0f);
  }
  return stage;
}

// The stage's activation as the fused layer's `prefix`ed epilogue attributes (none: no attributes).
void setStageEpilogue(Layer& layer, const std::string& prefix, const Stage& stage) {
  if (stage.activation.empty()) return;
  layer.attributes[prefix + fused::kActivation] = stage.activation;
  layer.attributes[prefix + fused::kActivationAlpha] = stage.alpha;
  layer.attributes[prefix + fused::kActivationBeta] = stage.beta;
}

class FuseSqueezeExcitationPass final : public Pass {
 public:
  std::string name() const override { return "FuseSqueezeExcitation"; }

 private:
  void apply(Network& network, PassContext& context) override {
    if (context.backend != BackendKind::kCuda) return;
    GraphIndex index(network);
    Rewriter rewriter(network);
    for (size_t i : network.topologicalOrder()) {
      const Layer& pool = network.layers()[i];
      if (!isOp(pool, "GlobalAveragePool") || pool.inputs.size() != 1 || pool.outputs.size() != 1) continue;
      const Tensor* x = network.findTensor(pool.inputs[0]);
      if (!x || x->dtype != DataType::kFloat32 || !x->shape.hasRank() || x->shape.rank() < 3 ||
          !x->shape[1].isKnown() || !isFloat32(network, pool.outputs[0]))
        continue;
      const size_t rank = x->shape.rank();
      // soleConsumer: the one reader, and the tensor is neither a graph output nor read by a subgraph.
      const auto fc1Index = index.soleConsumer(pool.outputs[0]);
      if (!fc1Index) continue;
      const Layer& fc1 = network.layers()[*fc1Index];
      const auto squeeze = matchStage(network, fc1, pool.outputs[0], rank, x->shape[1].value());
      if (!squeeze) continue;
      const auto fc2Index = index.soleConsumer(fc1.outputs[0]);
      if (!fc2Index) continue;
      const Layer& fc2 = network.layers()[*fc2Index];
      const auto excite = matchStage(network, fc2, fc1.outputs[0], rank, squeeze->outputs);
      if (!excite) continue;
      const std::vector<size_t> group{i, *fc1Index, *fc2Index};
      if (rewriter.claimed(group)) continue;

      Layer fusedLayer;
      fusedLayer.name = pool.name;
      fusedLayer.domain = fused::kDomain;
      fusedLayer.opType = fused::kSqueezeExcitation;
      fusedLayer.opsetVersion = 1;
      fusedLayer.inputs = {pool.inputs[0], squeeze->filter, squeeze->bias, excite->filter, excite->bias};
      if (fusedLayer.inputs.back().empty()) fusedLayer.inputs.pop_back();
      fusedLayer.outputs = fc2.outputs;
      setStageEpilogue(fusedLayer, fused::kSqueezePrefix, *squeeze);
      setStageEpilogue(fusedLayer, fused::kExcitePrefix, *excite);
      if (!context.supports(fusedLayer)) continue;
      context.note("fused " + describeLayers(network, group) + " into " + std::string(fused::kDomain) + "." +
                   fused::kSqueezeExcitation);
      rewriter.replace(group, std::move(fusedLayer));
    }
    rewriter.commit();
  }
};

}  // namespace

std::unique_ptr<Pass> createFuseSqueezeExcitationPass() { return std::make_unique<FuseSqueezeExcitationPass>(); }

}  // namespace kiln
