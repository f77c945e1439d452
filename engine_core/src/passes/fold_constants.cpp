// Constant folding: a layer whose inputs are all build-time constants is evaluated once with the
// CPU reference kernels and replaced by its results. Shape and Size of tensors whose shape is fully
// known fold too, so the shape subgraphs exporters emit (Shape -> Gather -> Concat -> Reshape)
// collapse into constants in one topological sweep.
#include "graph_utils.h"
#include "passes.h"

#include <algorithm>
#include <unordered_set>

namespace kiln {
namespace {

using passes::constantValue;

// Ops whose result must not be frozen: random generators differ from run to run, and
// DequantizeLinear of a weight keeps the weight quantized for the INT8 builder.
bool mustNotFold(const Layer& layer) {
  static const std::unordered_set<std::string> kept = {"RandomNormal", "RandomUniform", "RandomNormalLike",
                                                       "RandomUniformLike", "Multinomial", "Bernoulli",
                                                       "DequantizeLinear"};
  if (!layer.domain.empty() || kept.count(layer.opType)) return true;
  for (const auto& [key, attr] : layer.attributes)  // control flow: its body may read anything
    if (attr.get<Attribute::Graph>() || attr.get<std::vector<Attribute::Graph>>()) return true;
  return false;
}

// Shape / Size of a tensor with a fully known shape, or nullopt.
std::optional<HostTensor> foldShapeQuery(const Network& network, const Layer& layer) {
  if (!layer.hasInput(0) || !(passes::isOp(layer, "Shape") || passes::isOp(layer, "Size"))) return std::nullopt;
  const Tensor* input = network.findTensor(layer.inputs[0]);
  if (!input || input->kind != ValueKind::kTensor || !input->shape.isFullyKnown()) return std::nullopt;
  std::vector<int64_t> dims = input->shape.knownDims();
  if (layer.opType == "Size") return HostTensor::scalar<int64_t>(elementCount(dims));
  // Shape-15 start/end: negative counts from the back, both clamp to [0, rank].
  int64_t rank = int64_t(dims.size());
  auto clampIndex = [&](int64_t i) { return std::clamp(i < 0 ? i + rank : i, int64_t(0), rank); };
  int64_t start = clampIndex(layer.attrInt("start", 0));
  int64_t end = clampIndex(layer.attrInt("end", rank));
  std::vector<int64_t> slice(dims.begin() + start, dims.begin() + std::max(start, end));
  return HostTensor::fromVector<int64_t>({int64_t(slice.size())}, slice);
}

bool allInputsConstant(const Network& network, const Layer& layer) {
  return std::all_of(layer.inputs.begin(), layer.inputs.end(),
                     [&](const std::string& in) { return in.empty() || constantValue(network, in); });
}

// A result known in advance to exceed the limit is not computed at all.
bool knownTooLarge(const Network& network, const Layer& layer, int64_t maxBytes) {
  for (const auto& out : layer.outputs) {
    const Tensor* t = out.empty() ? nullptr : network.findTensor(out);
    if (!t || !t->shape.isFullyKnown()) continue;
    if (byteSize(t->dtype) * uint64_t(*t->shape.elementCount()) > uint64_t(maxBytes)) return true;
  }
  return false;
}

class FoldConstantsPass final : public Pass {
 public:
  explicit FoldConstantsPass(int64_t maxResultBytes) : maxResultBytes_(maxResultBytes) {}
  std::string name() const override { return "FoldConstants"; }

 private:
  void apply(Network& network, PassContext& context) override {
    std::set<size_t> folded;
    for (size_t index : network.topologicalOrder()) {
      const Layer& layer = network.layers()[index];
      if (mustNotFold(layer)) continue;
      std::optional<std::vector<HostTensor>> results;
      if (auto shape = foldShapeQuery(network, layer)) results = std::vector<HostTensor>{*shape};
      else if (allInputsConstant(network, layer) && !knownTooLarge(network, layer, maxResultBytes_))
        results = passes::evaluateOnConstants(network, layer);
      if (!results || !fitsLimit(*results)) continue;
      // The outputs keep their names and become constants, so no reader needs rewiring.
      size_t next = 0;
      for (const auto& out : layer.outputs)
        if (!out.empty()) network.addConstant(out, (*results)[next++]);
      context.note("folded " + layer.opType + " '" + layer.name + "' into a constant");
      folded.insert(index);
    }
    passes::eraseLayers(network, folded);
  }

  bool fitsLimit(const std::vector<HostTensor>& results) const {
    return std::all_of(results.begin(), results.end(),
                       [&](const HostTensor& t) { return int64_t(t.byteSize()) <= maxResultBytes_; });
  }

  int64_t maxResultBytes_;
};

}  // namespace

std::unique_ptr<Pass> createFoldConstantsPass(int64_t maxResultBytes) {
  return std::make_unique<FoldConstantsPass>(maxResultBytes);
}

}  // namespace kiln
