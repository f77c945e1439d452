#include "subgraph_cache.h"

namespace kiln {
namespace {

// For each tensor the last step (index into `order`) that reads it, directly or from a subgraph;
// graph outputs live to the end (order.size()).
std::unordered_map<std::string, size_t> lastUseSteps(const Network& network, const std::vector<size_t>& order) {
  std::unordered_map<std::string, size_t> lastUse;
  for (size_t step = 0; step < order.size(); ++step) {
    const Layer& layer = network.layers()[order[step]];
    for (const auto& in : layer.inputs) lastUse[in] = step;
    for (const auto& ref : subgraphReferences(layer)) lastUse[ref] = step;  // subgraphs read outer tensors implicitly
  }
  for (const auto& out : network.outputs()) lastUse[out] = order.size();
  return lastUse;
}


// Enough for every shape a real model's control flow sees; beyond it (shapes that change on every
// run) the entries are dropped rather than grown without bound.
constexpr size_t kMaxTypesPerLayer = 64;

void encode(const Tensor* t, std::vector<int64_t>& key) {
  if (!t) {
    key.push_back(-1);
    return;
  }
  key.push_back(int64_t(t->kind));
  key.push_back(int64_t(t->dtype));
  if (!t->shape.hasRank()) {
    key.push_back(-1);
    return;
  }
  key.push_back(int64_t(t->shape.rank()));
  for (const Dim& d : t->shape.dims()) key.push_back(d.isKnown() ? d.value() : -1);
}

}  // namespace

std::vector<std::string> subgraphReferences(const Layer& layer) {
  std::vector<std::string> names;
  auto add = [&](const Attribute::Graph& g) {
    if (!g) return;
    for (auto& name : g->outerScopeReferences()) names.push_back(std::move(name));
  };
  for (const auto& [key, attr] : layer.attributes) {
    if (auto g = attr.get<Attribute::Graph>()) add(*g);
    if (auto gs = attr.get<std::vector<Attribute::Graph>>())
      for (const auto& g : *gs) add(g);
  }
  return names;
}

bool hasSubgraphs(const Layer& layer) {
  for (const auto& [key, attr] : layer.attributes)
    if (attr.get<Attribute::Graph>() || attr.get<std::vector<Attribute::Graph>>()) return true;
  return false;
}

std::vector<Tensor> SubgraphInferenceCache::outputTypes(const Layer& layer, const std::vector<const Tensor*>& inputTypes,
                                                        const Network::ScopeLookup& scope, const Infer& infer) {
  LayerEntry* entry;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto [it, added] = layers_.try_emplace(&layer);
    if (added) it->second.outerReferences = subgraphReferences(layer);
    entry = &it->second;  // entries are never erased, and their outerReferences never change
  }
  std::vector<int64_t> key;
  for (const Tensor* t : inputTypes) encode(t, key);
  for (const auto& name : entry->outerReferences) encode(scope ? scope(name) : nullptr, key);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = entry->byTypes.find(key); it != entry->byTypes.end()) return it->second;
  }
  std::vector<Tensor> types = infer();
  std::lock_guard<std::mutex> lock(mutex_);
  if (entry->byTypes.size() >= kMaxTypesPerLayer) entry->byTypes.clear();
  entry->byTypes.emplace(std::move(key), types);
  return types;
}

const GraphSchedule& SubgraphRunCache::schedule(const Network& graph) {
  auto [it, added] = schedules_.try_emplace(&graph);
  if (added) {
    it->second.order = graph.topologicalOrder();
    it->second.lastUse = lastUseSteps(graph, it->second.order);
  }
  return it->second;
}

}  // namespace kiln
