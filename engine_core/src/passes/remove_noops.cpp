// Removes layers that pass their input through unchanged: Identity, Dropout at inference, Cast to
// the type it already has, Reshape/Expand/Squeeze/Unsqueeze/Flatten to the shape it already has,
// reshaping pairs that cancel (Unsqueeze then Squeeze of the same axes), identity Transposes, a
// Concat of one input (what a transformer's empty key/value cache leaves). Readers of the output read the input instead; when the output is a graph output (whose name is
// part of the model's interface) the input's producer writes that name directly.
#include "graph_utils.h"
#include "passes.h"

#include <algorithm>
#include <unordered_set>

namespace kiln {
namespace {

using passes::GraphIndex;

bool isReshaping(const Layer& layer) {
  static const std::unordered_set<std::string> ops = {"Reshape", "Squeeze", "Unsqueeze", "Flatten"};
  return layer.domain.empty() && ops.count(layer.opType);
}

const Tensor* typed(const Network& network, const std::string& name) {
  const Tensor* t = name.empty() ? nullptr : network.findTensor(name);
  return t && t->dtype != DataType::kUndefined ? t : nullptr;
}

// True when `layer`'s output 0 equals its input 0 (and its other outputs are unused).
bool passesInputThrough(const Network& network, const GraphIndex& index, const Layer& layer) {
  if (!layer.hasInput(0) || !layer.hasOutput(0)) return false;
  for (size_t i = 1; i < layer.outputs.size(); ++i)  // Dropout's mask must not be needed
    if (layer.hasOutput(i) && (index.isGraphOutput(layer.outputs[i]) || !index.consumers(layer.outputs[i]).empty()))
      return false;
  const Tensor* in = typed(network, layer.inputs[0]);
  const Tensor* out = typed(network, layer.outputs[0]);
  if (passes::isOp(layer, "Identity")) return true;
  if (passes::isOp(layer, "Dropout")) {
    if (!layer.hasInput(2)) return true;
    auto training = passes::scalarConstant(network, layer.inputs[2]);
    return training && *training == 0;
  }
  if (!in || !out || in->kind != ValueKind::kTensor) return false;
  if (passes::isOp(layer, "Cast") || passes::isOp(layer, "CastLike")) return in->dtype == out->dtype;
  if (isReshaping(layer) || passes::isOp(layer, "Expand"))
    return in->dtype == out->dtype && passes::sameDeterminedShape(in->shape, out->shape);
  if (passes::isOp(layer, "Concat")) return layer.inputs.size() == 1 && in->dtype == out->dtype;
  if (passes::isOp(layer, "Transpose")) {
    auto perm = layer.attrInts("perm");
    if (perm.empty()) return in->shape.hasRank() && in->shape.rank() <= 1;  // default perm reverses
    for (size_t i = 0; i < perm.size(); ++i)
      if (perm[i] != int64_t(i)) return false;
    return true;
  }
  return false;
}

// For a reshaping layer fed by another reshaping layer, the first one's input when the pair ends
// at the shape it started from (reshapes keep the element order, so the data is identical).
std::optional<std::string> cancellingPairSource(const Network& network, const GraphIndex& index,
                                                const std::set<size_t>& removed, const Layer& layer) {
  if (!isReshaping(layer) || !layer.hasInput(0) || !layer.hasOutput(0)) return std::nullopt;
  auto producer = index.producer(layer.inputs[0]);
  if (!producer || removed.count(*producer)) return std::nullopt;
  const Layer& first = index.layer(*producer);
  if (!isReshaping(first) || !first.hasInput(0) || first.outputs[0] != layer.inputs[0]) return std::nullopt;
  const Tensor* source = typed(network, first.inputs[0]);
  const Tensor* out = typed(network, layer.outputs[0]);
  if (!source || !out || !passes::sameDeterminedShape(source->shape, out->shape)) return std::nullopt;
  return first.inputs[0];
}

class RemoveNoopsPass final : public Pass {
 public:
  std::string name() const override { return "RemoveNoops"; }

 private:
  void apply(Network& network, PassContext& context) override {
    passes::repeatUntilStable(network, [&](Network& net) { return sweep(net, context); });
  }

  size_t sweep(Network& network, PassContext& context) {
    GraphIndex index(network);
    std::set<size_t> removed;
    for (size_t i : network.topologicalOrder()) {
      const Layer& layer = network.layers()[i];
      std::optional<std::string> source;
      if (passesInputThrough(network, index, layer)) source = layer.inputs[0];
      else source = cancellingPairSource(network, index, removed, layer);
      if (!source || !bypass(network, index, removed, i, *source)) continue;
      context.note("removed no-op " + layer.opType + " '" + layer.name + "'");
      removed.insert(i);
    }
    passes::eraseLayers(network, removed);
    return removed.size();
  }

  // Makes readers of layer `i`'s output read `source`; false when that cannot be done safely.
  static bool bypass(Network& network, const GraphIndex& index, const std::set<size_t>& removed, size_t i,
                     const std::string& source) {
    const std::string output = network.layers()[i].outputs[0];
    if (index.isReadBySubgraph(output)) return false;  // would need rewriting inside the body
    if (!index.isGraphOutput(output)) {
      passes::replaceAllUses(network, output, source);
      return true;
    }
    // A graph output keeps its name: let the source's producer write it.
    auto producer = index.producer(source);
    if (!producer || removed.count(*producer) || index.isGraphOutput(source) || index.isReadBySubgraph(source))
      return false;
    auto& producerOutputs = network.layers()[*producer].outputs;
    auto written = std::find(producerOutputs.begin(), producerOutputs.end(), source);
    if (written == producerOutputs.end()) return false;  // renamed earlier in this sweep
    *written = output;
    passes::replaceAllUses(network, source, output);
    return true;
  }
};

}  // namespace

std::unique_ptr<Pass> createRemoveNoopsPass() { return std::make_unique<RemoveNoopsPass>(); }

}  // namespace kiln
