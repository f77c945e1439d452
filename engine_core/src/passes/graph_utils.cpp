#include "graph_utils.h"

#include <kiln/error.h>
#include <kiln/reference_executor.h>

#include <algorithm>
#include <cmath>

namespace kiln::passes {

namespace {
const std::vector<size_t> kNoConsumers;

void forEachSubgraph(const Layer& layer, const std::function<void(const Network&)>& fn) {
  for (const auto& [key, attr] : layer.attributes) {
    if (auto g = attr.get<Attribute::Graph>(); g && *g) fn(**g);
    if (auto gs = attr.get<std::vector<Attribute::Graph>>())
      for (const auto& g : *gs)
        if (g) fn(*g);
  }
}
}  // namespace

GraphIndex::GraphIndex(const Network& network) : network_(network) {
  graphOutputs_.insert(network.outputs().begin(), network.outputs().end());
  const auto& layers = network.layers();
  for (size_t i = 0; i < layers.size(); ++i) {
    for (const auto& out : layers[i].outputs)
      if (!out.empty()) producer_[out] = i;
    auto addConsumer = [&](const std::string& name) {
      auto& list = consumers_[name];
      if (list.empty() || list.back() != i) list.push_back(i);
    };
    for (const auto& in : layers[i].inputs)
      if (!in.empty()) addConsumer(in);
    forEachSubgraph(layers[i], [&](const Network& body) {
      for (const auto& ref : body.outerScopeReferences()) {
        subgraphReads_.insert(ref);
        addConsumer(ref);
      }
    });
  }
}

std::optional<size_t> GraphIndex::producer(const std::string& tensor) const {
  auto it = producer_.find(tensor);
  if (it == producer_.end()) return std::nullopt;
  return it->second;
}

const Layer* GraphIndex::producerOfType(const std::string& tensor, const std::string& opType) const {
  auto index = producer(tensor);
  if (!index) return nullptr;
  const Layer& l = layer(*index);
  return l.domain.empty() && l.opType == opType ? &l : nullptr;
}

const std::vector<size_t>& GraphIndex::consumers(const std::string& tensor) const {
  auto it = consumers_.find(tensor);
  return it == consumers_.end() ? kNoConsumers : it->second;
}

bool GraphIndex::onlyConsumerIs(const std::string& tensor, size_t consumer) const {
  auto sole = soleConsumer(tensor);
  return sole && *sole == consumer;
}

std::optional<size_t> GraphIndex::soleConsumer(const std::string& tensor) const {
  const auto& list = consumers(tensor);
  if (list.size() != 1 || isGraphOutput(tensor) || isReadBySubgraph(tensor)) return std::nullopt;
  return list.front();
}

bool GraphIndex::usedOnlyBy(const std::string& tensor, const std::set<size_t>& allowed) const {
  if (isGraphOutput(tensor) || isReadBySubgraph(tensor)) return false;
  for (size_t c : consumers(tensor))
    if (!allowed.count(c)) return false;
  return true;
}

const HostTensor* constantValue(const Network& network, const std::string& tensor) {
  if (tensor.empty()) return nullptr;
  const Tensor* t = network.findTensor(tensor);
  if (!t || !t->isConstant()) return nullptr;
  const auto& inputs = network.inputs();
  if (std::find(inputs.begin(), inputs.end(), tensor) != inputs.end()) return nullptr;
  return &*t->constant;
}

std::optional<double> scalarConstant(const Network& network, const std::string& tensor) {
  const HostTensor* value = constantValue(network, tensor);
  if (!value || value->elementCount() != 1) return std::nullopt;
  DataType type = value->dtype();
  if (!isFloatingPoint(type) && !isInteger(type)) return std::nullopt;
  return value->toDoubleVector().front();
}

bool isScalarConstant(const Network& network, const std::string& tensor, double expected, double tolerance) {
  auto value = scalarConstant(network, tensor);
  return value && std::abs(*value - expected) <= tolerance * std::max(1.0, std::abs(expected));
}

std::optional<std::vector<HostTensor>> evaluateOnConstants(const Network& network, const Layer& layer) {
  Network single;
  for (const auto& in : layer.inputs) {
    if (in.empty()) continue;
    const HostTensor* value = constantValue(network, in);
    if (!value) return std::nullopt;
    single.addConstant(in, *value);
  }
  single.addLayer(layer);
  for (const auto& out : layer.outputs)
    if (!out.empty()) single.markOutput(out);
  std::vector<Value> values;
  try {
    values = executeGraph(single, {}, {});
  } catch (const Error&) {
    return std::nullopt;
  }
  std::vector<HostTensor> results;
  for (const Value& v : values) {
    if (v.kind != ValueKind::kTensor || v.isSequence() || !v.hasElement) return std::nullopt;
    results.push_back(v.tensor);
  }
  return results;
}

std::optional<std::vector<int64_t>> constantInts(const Network& network, const std::string& tensor) {
  const HostTensor* value = constantValue(network, tensor);
  if (!value || !isInteger(value->dtype())) return std::nullopt;
  return value->toInt64Vector();
}

std::optional<std::string> otherOperand(const Layer& layer, const std::string& operand) {
  if (layer.inputs.size() != 2) return std::nullopt;
  if (layer.inputs[0] == operand) return layer.inputs[1];
  if (layer.inputs[1] == operand) return layer.inputs[0];
  return std::nullopt;
}

bool isOp(const Layer& layer, const char* opType) { return layer.domain.empty() && layer.opType == opType; }

std::optional<std::vector<int64_t>> knownDims(const Network& network, const std::string& tensor) {
  const Tensor* t = network.findTensor(tensor);
  if (!t || !t->shape.hasRank() || !t->shape.isFullyKnown()) return std::nullopt;
  return t->shape.knownDims();
}

bool sameDeterminedShape(const Shape& a, const Shape& b) {
  if (!a.hasRank() || !b.hasRank() || a.rank() != b.rank()) return false;
  for (size_t i = 0; i < a.rank(); ++i) {
    const Dim &x = a[i], &y = b[i];
    if (!(x.isKnown() || x.isSymbol()) || !(x == y)) return false;
  }
  return true;
}

void replaceAllUses(Network& network, const std::string& from, const std::string& to) {
  for (Layer& layer : network.layers())
    for (auto& in : layer.inputs)
      if (in == from) in = to;
}

void eraseLayers(Network& network, const std::set<size_t>& indices) {
  if (indices.empty()) return;
  auto& layers = network.layers();
  std::vector<Layer> kept;
  kept.reserve(layers.size());
  for (size_t i = 0; i < layers.size(); ++i)
    if (!indices.count(i)) kept.push_back(std::move(layers[i]));
  layers = std::move(kept);
}

std::string uniqueTensorName(const Network& network, const std::string& base) {
  if (!network.findTensor(base)) return base;
  for (int suffix = 1;; ++suffix) {
    std::string name = base + "_" + std::to_string(suffix);
    if (!network.findTensor(name)) return name;
  }
}

std::vector<std::string> mergedOrigins(const Network& network, const std::vector<size_t>& layers) {
  std::vector<std::string> origins;
  for (size_t index : layers) {
    const Layer& l = network.layers()[index];
    const auto& own = l.origins.empty() ? std::vector<std::string>{l.name} : l.origins;
    for (const auto& origin : own)
      if (std::find(origins.begin(), origins.end(), origin) == origins.end()) origins.push_back(origin);
  }
  return origins;
}

std::string describeLayers(const Network& network, const std::vector<size_t>& layers) {
  std::string text;
  for (size_t index : layers) {
    const Layer& l = network.layers()[index];
    if (!text.empty()) text += " + ";
    text += (l.domain.empty() ? "" : l.domain + ".") + l.opType + " '" + l.name + "'";
  }
  return text;
}

bool Rewriter::claimed(const std::vector<size_t>& layers) const {
  return std::any_of(layers.begin(), layers.end(), [&](size_t i) { return claimed_.count(i) != 0; });
}

void Rewriter::replace(const std::vector<size_t>& layers, Layer replacement) {
  if (replacement.origins.empty()) replacement.origins = mergedOrigins(network_, layers);
  for (const auto& out : replacement.outputs)
    if (!out.empty()) network_.addTensor(out);
  size_t position = *std::max_element(layers.begin(), layers.end());
  for (size_t i : layers) {
    claimed_.insert(i);
    if (i != position) removed_.insert(i);
  }
  placed_.emplace_back(position, std::move(replacement));
  ++rewrites_;
}

void Rewriter::remove(size_t layer) {
  claimed_.insert(layer);
  removed_.insert(layer);
  ++rewrites_;
}

size_t Rewriter::commit() {
  for (auto& [position, layer] : placed_) network_.layers()[position] = std::move(layer);
  eraseLayers(network_, removed_);
  size_t count = rewrites_;
  claimed_.clear();
  removed_.clear();
  placed_.clear();
  rewrites_ = 0;
  return count;
}

void repeatUntilStable(Network& network, const std::function<size_t(Network&)>& sweep, int maxSweeps) {
  for (int i = 0; i < maxSweeps; ++i)
    if (sweep(network) == 0) return;
}

}  // namespace kiln::passes
