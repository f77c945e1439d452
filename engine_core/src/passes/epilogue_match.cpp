#include "epilogue_match.h"

#include "../ops/fused.h"

#include <limits>

namespace kiln::passes {
namespace {

struct ActivationMatch {
  std::vector<size_t> layers;
  std::string output, name;
  float alpha = 0, beta = 0;
};

// x * Sigmoid(x): x is read by exactly the Sigmoid and the Mul.
std::optional<ActivationMatch> matchSiLU(const GraphIndex& index, const std::string& x) {
  const auto& readers = index.consumers(x);
  if (readers.size() != 2 || index.isGraphOutput(x) || index.isReadBySubgraph(x)) return std::nullopt;
  for (int first = 0; first < 2; ++first) {
    const Layer& sigmoid = index.layer(readers[first]);
    const Layer& mul = index.layer(readers[1 - first]);
    if (!isOp(sigmoid, "Sigmoid") || !isOp(mul, "Mul") || !sigmoid.hasOutput(0)) continue;
    if (otherOperand(mul, x) != sigmoid.outputs[0] || !index.onlyConsumerIs(sigmoid.outputs[0], readers[1 - first]))
      continue;
    return ActivationMatch{{readers[first], readers[1 - first]}, mul.outputs[0], "SiLU"};
  }
  return std::nullopt;
}

// Clip's bounds: attributes before opset 11, optional constant inputs after.
std::optional<std::pair<float, float>> clipBounds(const Network& network, const Layer& clip) {
  float low = std::numeric_limits<float>::lowest(), high = std::numeric_limits<float>::max();
  if (clip.opsetVersion < 11) return std::make_pair(clip.attrFloat("min", low), clip.attrFloat("max", high));
  for (size_t i : {1u, 2u}) {
    if (!clip.hasInput(i)) continue;
    auto bound = scalarConstant(network, clip.inputs[i]);
    if (!bound) return std::nullopt;
    (i == 1 ? low : high) = float(*bound);
  }
  return std::make_pair(low, high);
}

std::optional<ActivationMatch> matchActivation(const Network& network, const GraphIndex& index,
                                               const std::string& x) {
  if (auto silu = matchSiLU(index, x)) return silu;
  auto reader = index.soleConsumer(x);
  if (!reader) return std::nullopt;
  const Layer& layer = index.layer(*reader);
  if (!layer.domain.empty() || layer.inputs.empty() || layer.inputs[0] != x || !layer.hasOutput(0))
    return std::nullopt;
  ActivationMatch m{{*reader}, layer.outputs[0], layer.opType};
  const std::string& op = layer.opType;
  if (op == "Relu" || op == "Sigmoid" || op == "Tanh" || op == "HardSwish") return m;
  if (op == "LeakyRelu") {
    m.alpha = layer.attrFloat("alpha", 0.01f);
    return m;
  }
  if (op == "HardSigmoid") {
    m.alpha = layer.attrFloat("alpha", 0.2f);
    m.beta = layer.attrFloat("beta", 0.5f);
    return m;
  }
  if (op == "Gelu") {
    m.name = layer.attrString("approximate", "none") == "tanh" ? "GeluTanh" : "Gelu";
    return m;
  }
  if (op == "Clip") {
    auto bounds = clipBounds(network, layer);
    if (!bounds) return std::nullopt;
    std::tie(m.alpha, m.beta) = *bounds;
    return m;
  }
  return std::nullopt;
}

// An Add of `x` and another tensor of exactly x's shape and type: a residual connection.
std::optional<std::pair<size_t, std::string>> matchResidualAdd(const Network& network, const GraphIndex& index,
                                                              const std::string& x) {
  auto reader = index.soleConsumer(x);
  if (!reader || !isOp(index.layer(*reader), "Add")) return std::nullopt;
  auto other = otherOperand(index.layer(*reader), x);
  if (!other || *other == x || other->empty()) return std::nullopt;
  const Tensor* a = network.findTensor(x);
  const Tensor* b = network.findTensor(*other);
  if (!a || !b || a->dtype != b->dtype || !sameDeterminedShape(a->shape, b->shape)) return std::nullopt;
  return std::make_pair(*reader, *other);
}

// Writes the epilogue attributes of `match` into the fused layer.
void setEpilogueAttributes(Layer& fused, const EpilogueMatch& match) {
  if (!match.activation.empty()) {
    fused.attributes[fused::kActivation] = match.activation;
    fused.attributes[fused::kActivationAlpha] = match.alpha;
    fused.attributes[fused::kActivationBeta] = match.beta;
  }
  if (!match.residual.empty())
    fused.attributes[fused::kResidualBeforeActivation] = int64_t(match.residualBeforeActivation ? 1 : 0);
}

}  // namespace

void matchEpilogueTail(const Network& network, const GraphIndex& index, EpilogueMatch& match) {
  if (auto residual = matchResidualAdd(network, index, match.output)) {
    match.layers.push_back(residual->first);
    match.residual = residual->second;
    match.residualBeforeActivation = true;
    match.output = index.layer(residual->first).outputs[0];
  }
  if (auto activation = matchActivation(network, index, match.output)) {
    match.layers.insert(match.layers.end(), activation->layers.begin(), activation->layers.end());
    match.activation = activation->name;
    match.alpha = activation->alpha;
    match.beta = activation->beta;
    match.output = activation->output;
    if (match.residual.empty())
      if (auto residual = matchResidualAdd(network, index, match.output)) {
        match.layers.push_back(residual->first);
        match.residual = residual->second;
        match.residualBeforeActivation = false;
        match.output = index.layer(residual->first).outputs[0];
      }
  }
}

std::optional<BiasAdd> matchBiasAdd(const Network& network, const GraphIndex& index, const std::string& tensor,
                                    const std::function<bool(const HostTensor&)>& acceptBias) {
  auto reader = index.soleConsumer(tensor);
  if (!reader || !isOp(index.layer(*reader), "Add")) return std::nullopt;
  auto other = otherOperand(index.layer(*reader), tensor);
  const HostTensor* value = other ? constantValue(network, *other) : nullptr;
  if (!value || value->dtype() != DataType::kFloat32 || !acceptBias(*value)) return std::nullopt;
  return BiasAdd{*reader, *other};
}

void EpilogueFusionPass::apply(Network& network, PassContext& context) {
  repeatUntilStable(network, [&](Network& net) { return sweep(net, context); });
}

size_t EpilogueFusionPass::sweep(Network& network, PassContext& context) const {
  GraphIndex index(network);
  Rewriter rewriter(network);
  for (size_t i : network.topologicalOrder()) {
    const Layer& anchor = network.layers()[i];
    auto candidate = match(network, index, anchor);
    if (!candidate || candidate->match.layers.empty()) continue;
    std::vector<size_t> group{i};
    group.insert(group.end(), candidate->match.layers.begin(), candidate->match.layers.end());
    if (rewriter.claimed(group)) continue;

    Layer& fusedLayer = candidate->fused;
    fusedLayer.domain = fused::kDomain;
    fusedLayer.opType = fusedOpType_;
    fusedLayer.attributes[fused::kBase] = anchor.opType;
    setEpilogueAttributes(fusedLayer, candidate->match);
    if (!candidate->match.residual.empty()) fusedLayer.inputs.push_back(candidate->match.residual);
    while (!fusedLayer.inputs.empty() && fusedLayer.inputs.back().empty()) fusedLayer.inputs.pop_back();
    fusedLayer.outputs = {candidate->match.output};
    fusedLayer.origins.clear();
    if (!context.supports(fusedLayer)) continue;
    if (candidate->newBias) {
      std::string name = uniqueTensorName(network, anchor.name + "_fused_bias");
      network.addConstant(name, *candidate->newBias);
      fusedLayer.inputs.resize(std::max<size_t>(fusedLayer.inputs.size(), 3));
      fusedLayer.inputs[2] = name;
    }
    context.note("fused " + describeLayers(network, group) + " into " + std::string(fused::kDomain) + "." + fusedOpType_);
    rewriter.replace(group, std::move(fusedLayer));
  }
  return rewriter.commit();
}

}  // namespace kiln::passes
