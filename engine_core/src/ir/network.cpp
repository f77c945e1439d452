#include <kiln/error.h>
#include <kiln/network.h>

#include "../ops/op_schema.h"

#include <algorithm>
#include <queue>
#include <unordered_set>

namespace kiln {

Tensor& Network::addTensor(const std::string& name) {
  auto [it, inserted] = tensors_.try_emplace(name);
  if (inserted) {
    it->second.name = name;
    tensorOrder_.push_back(name);
  }
  return it->second;
}

Tensor& Network::addInput(const std::string& name, DataType dtype, Shape shape, ValueKind kind) {
  if (name.empty()) throw Error(ErrorCode::kInvalidModel, "a network input has an empty name");
  if (std::find(inputs_.begin(), inputs_.end(), name) != inputs_.end())
    throw Error(ErrorCode::kInvalidModel, "network input '" + name + "' is declared twice");
  Tensor& t = addTensor(name);
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.kind = kind;
  inputs_.push_back(name);
  return t;
}

Tensor& Network::addConstant(const std::string& name, HostTensor value) {
  Tensor& t = addTensor(name);
  t.dtype = value.dtype();
  t.shape = Shape::fromDims(value.dims());
  t.constant = std::move(value);
  return t;
}

Layer& Network::addLayer(Layer layer) {
  for (const auto& out : layer.outputs)
    if (!out.empty()) addTensor(out);
  if (layer.name.empty()) layer.name = layer.opType + "_" + std::to_string(layers_.size());
  if (layer.origins.empty()) layer.origins.push_back(layer.name);
  layers_.push_back(std::move(layer));
  return layers_.back();
}

void Network::markOutput(const std::string& name) {
  if (std::find(outputs_.begin(), outputs_.end(), name) == outputs_.end()) outputs_.push_back(name);
  addTensor(name);
}

const Tensor* Network::findTensor(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}
Tensor* Network::findTensor(const std::string& name) {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}
const Tensor& Network::tensor(const std::string& name) const {
  const Tensor* t = findTensor(name);
  if (!t) throw Error(ErrorCode::kInvalidModel, "no tensor named '" + name + "' in the network");
  return *t;
}
Tensor& Network::tensor(const std::string& name) {
  return const_cast<Tensor&>(static_cast<const Network*>(this)->tensor(name));
}

std::vector<std::string> Network::runtimeInputs() const {
  std::vector<std::string> out;
  for (const auto& name : inputs_) {
    const Tensor* t = findTensor(name);
    if (t && !t->isConstant()) out.push_back(name);
  }
  return out;
}

void Network::validate(const std::vector<std::string>& outerScope) const {
  std::unordered_set<std::string> available(outerScope.begin(), outerScope.end());
  for (const auto& name : inputs_) available.insert(name);
  for (const auto& [name, t] : tensors_)
    if (t.isConstant()) available.insert(name);
  std::unordered_map<std::string, const Layer*> producer;
  for (const Layer& layer : layers_) {
    for (const auto& out : layer.outputs) {
      if (out.empty()) continue;
      auto [it, inserted] = producer.emplace(out, &layer);
      if (!inserted)
        throw Error(ErrorCode::kInvalidModel, "tensor '" + out + "' is produced by both " + it->second->describe() +
                                                  " and " + layer.describe() + "; every tensor needs one producer");
      if (std::find(inputs_.begin(), inputs_.end(), out) != inputs_.end())
        throw Error(ErrorCode::kInvalidModel, layer.describe() + " writes graph input '" + out + "'");
    }
  }
  for (const Layer& layer : layers_)
    for (const auto& in : layer.inputs)
      if (!in.empty() && !available.count(in) && !producer.count(in))
        throw Error(ErrorCode::kInvalidModel, layer.describe() + " reads tensor '" + in +
                                                  "', which no node produces and which is neither a graph "
                                                  "input nor an initializer");
  for (const auto& out : outputs_)
    if (!available.count(out) && !producer.count(out))
      throw Error(ErrorCode::kInvalidModel, "graph output '" + out + "' is not produced by any node");
  (void)topologicalOrder();  // throws on cycles
}

namespace {

// The names `layer`'s subgraph attributes (If/Loop/Scan bodies) read from enclosing scopes.
std::vector<std::string> subgraphOuterReads(const Layer& layer) {
  std::vector<std::string> reads;
  auto add = [&](const Attribute::Graph& g) {
    if (g)
      for (auto& ref : g->outerScopeReferences()) reads.push_back(std::move(ref));
  };
  for (const auto& [key, attr] : layer.attributes) {
    if (auto g = attr.get<Attribute::Graph>()) add(*g);
    if (auto gs = attr.get<std::vector<Attribute::Graph>>())
      for (auto& g : *gs) add(g);
  }
  return reads;
}

}  // namespace

std::vector<size_t> Network::topologicalOrder() const {
  std::unordered_map<std::string, size_t> producer;
  for (size_t i = 0; i < layers_.size(); ++i)
    for (const auto& out : layers_[i].outputs)
      if (!out.empty()) producer[out] = i;
  // Subgraph bodies read outer tensors implicitly; those reads are dependencies too.
  auto dependencies = [&](const Layer& layer) {
    std::vector<std::string> deps = layer.inputs;
    for (auto& ref : subgraphOuterReads(layer)) deps.push_back(std::move(ref));
    return deps;
  };
  std::vector<int> indegree(layers_.size(), 0);
  std::vector<std::vector<size_t>> consumers(layers_.size());
  for (size_t i = 0; i < layers_.size(); ++i) {
    std::unordered_set<size_t> seen;
    for (const auto& in : dependencies(layers_[i])) {
      auto it = producer.find(in);
      if (in.empty() || it == producer.end() || !seen.insert(it->second).second) continue;
      ++indegree[i];
      consumers[it->second].push_back(i);
    }
  }
  std::vector<size_t> order;
  order.reserve(layers_.size());
  std::queue<size_t> ready;
  for (size_t i = 0; i < layers_.size(); ++i)
    if (indegree[i] == 0) ready.push(i);
  while (!ready.empty()) {
    size_t i = ready.front();
    ready.pop();
    order.push_back(i);
    for (size_t c : consumers[i])
      if (--indegree[c] == 0) ready.push(c);
  }
  if (order.size() != layers_.size()) {
    for (size_t i = 0; i < layers_.size(); ++i)
      if (indegree[i] > 0)
        throw Error(ErrorCode::kInvalidModel, "the graph has a cycle through " + layers_[i].describe() +
                                                  "; ONNX graphs must be acyclic");
  }
  return order;
}

std::vector<std::string> Network::outerScopeReferences() const {
  std::unordered_set<std::string> defined(inputs_.begin(), inputs_.end());
  for (const auto& [name, t] : tensors_)
    if (t.isConstant()) defined.insert(name);
  for (const Layer& l : layers_)
    for (const auto& o : l.outputs) defined.insert(o);
  std::vector<std::string> refs;
  std::unordered_set<std::string> seen;
  auto note = [&](const std::string& name) {
    if (!name.empty() && !defined.count(name) && seen.insert(name).second) refs.push_back(name);
  };
  for (const Layer& l : layers_) {
    for (const auto& in : l.inputs) note(in);
    for (const auto& r : subgraphOuterReads(l)) note(r);
  }
  for (const auto& o : outputs_) note(o);
  return refs;
}

void Network::inferShapes(const ScopeLookup& outerScope) {
  for (size_t index : topologicalOrder()) inferLayer(index, outerScope);
}

void Network::inferLayer(size_t layerIndex, const ScopeLookup& outerScope, std::vector<bool>* valuesRead) {
  Layer& layer = layers_.at(layerIndex);
  const OpSchema* schema = OpSchemaRegistry::instance().find(layer.domain, layer.opType);
  if (!schema)
    throw Error(ErrorCode::kUnsupported, layer.describe() + ": op '" + layer.opType + "' of domain '" +
                                             (layer.domain.empty() ? "ai.onnx" : layer.domain) +
                                             "' is not supported by Kiln");
  std::vector<const Tensor*> ins;
  std::vector<const HostTensor*> values;
  for (const auto& name : layer.inputs) {
    const Tensor* t = name.empty() ? nullptr : findTensor(name);
    if (!t && !name.empty() && outerScope) t = outerScope(name);
    if (!name.empty() && !t)
      throw Error(ErrorCode::kInvalidModel, layer.describe() + " reads tensor '" + name + "', which is not defined");
    ins.push_back(t);
    values.push_back(t && t->isConstant() ? &*t->constant : nullptr);
  }
  int arity = int(layer.inputs.size());
  if (arity < schema->minInputs || (schema->maxInputs >= 0 && arity > schema->maxInputs))
    throw Error(ErrorCode::kInvalidModel, layer.describe() + " has " + std::to_string(arity) +
                                              " inputs; the op takes " + std::to_string(schema->minInputs) +
                                              (schema->maxInputs < 0 ? " or more"
                                                                     : " to " + std::to_string(schema->maxInputs)));
  auto scope = [this, &outerScope](const std::string& name) -> const Tensor* {
    if (const Tensor* t = findTensor(name)) return t;
    return outerScope ? outerScope(name) : nullptr;
  };
  InferenceContext ctx(layer, std::move(ins), std::move(values), scope);
  schema->infer(ctx);
  if (valuesRead) {
    valuesRead->assign(layer.inputs.size(), false);
    for (size_t i = 0; i < layer.inputs.size(); ++i) (*valuesRead)[i] = ctx.valueRequested(i);
  }
  for (size_t i = 0; i < layer.outputs.size(); ++i) {
    if (layer.outputs[i].empty() || i >= ctx.outputs().size()) continue;
    Tensor& out = tensor(layer.outputs[i]);
    const Tensor& inferred = ctx.output(i);
    if (inferred.dtype != DataType::kUndefined) out.dtype = inferred.dtype;
    out.kind = inferred.kind;
    // Keep a declared (value_info) shape when inference knows less than it.
    if (inferred.shape.hasRank() || !out.shape.hasRank()) out.shape = inferred.shape;
  }
}

void Network::sortLayersTopologically() {
  std::vector<Layer> sorted;
  sorted.reserve(layers_.size());
  for (size_t index : topologicalOrder()) sorted.push_back(std::move(layers_[index]));
  layers_ = std::move(sorted);
}

void Network::removeUnusedTensors() {
  std::unordered_set<std::string> used(inputs_.begin(), inputs_.end());
  used.insert(outputs_.begin(), outputs_.end());
  for (const Layer& l : layers_) {
    used.insert(l.inputs.begin(), l.inputs.end());
    used.insert(l.outputs.begin(), l.outputs.end());
  }
  // Subgraph bodies read this graph's tensors (initializers too) by name.
  for (const Layer& l : layers_)
    for (auto& ref : subgraphOuterReads(l)) used.insert(std::move(ref));
  for (const auto& ref : outerScopeReferences()) used.insert(ref);
  std::vector<std::string> order;
  for (const auto& name : tensorOrder_) {
    if (used.count(name)) order.push_back(name);
    else tensors_.erase(name);
  }
  tensorOrder_ = std::move(order);
}

int64_t Network::parameterCount() const {
  int64_t n = 0;
  for (const auto& [name, t] : tensors_)
    if (t.isConstant()) n += t.constant->elementCount();
  return n;
}

int64_t Network::parameterBytes() const {
  int64_t n = 0;
  for (const auto& [name, t] : tensors_)
    if (t.isConstant()) n += int64_t(t.constant->byteSize());
  return n;
}

}  // namespace kiln
