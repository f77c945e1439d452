#include "cuda_formats.h"

#include "../../ops/fused.h"
#include "../../runtime/subgraph_cache.h"
#include "cuda_ops.h"

#include <algorithm>
#include <set>

namespace kiln::cuda {

std::unordered_map<std::string, TensorFormat> channelsLastTensors(const Network& network,
                                                                  const std::vector<std::string>& tactics) {
  const auto& layers = network.layers();
  if (tactics.size() != layers.size()) return {};
  // Control flow's bodies read outer tensors as they are stored; a kiln.Pointwise body is no
  // control flow (its layer reads its inputs like any other).
  if (std::any_of(layers.begin(), layers.end(), [](const Layer& l) {
        return hasSubgraphs(l) && !(l.domain == fused::kDomain && l.opType == fused::kPointwise);
      }))
    return {};
  const auto& registry = CudaOpRegistry::instance();
  std::vector<std::vector<size_t>> takes(layers.size());  // per layer: the inputs it reads channels-last
  std::vector<bool> sameLayout(layers.size(), false);
  for (size_t i = 0; i < layers.size(); ++i) {
    if (tactics[i].empty()) continue;  // on another backend, or in the shape phase
    const CudaOp* op = registry.find(layers[i].domain, layers[i].opType);
    if (!op || !op->channelsLastInputs) continue;
    takes[i] = op->channelsLastInputs(layers[i], tactics[i]);
    sameLayout[i] = op->channelsLastInAndOut;
  }
  auto readsChannelsLast = [&](size_t layer, size_t input) {
    return std::find(takes[layer].begin(), takes[layer].end(), input) != takes[layer].end();
  };
  std::unordered_map<std::string, std::vector<std::pair<size_t, size_t>>> readers;  // tensor -> (layer, input)
  for (size_t i = 0; i < layers.size(); ++i)
    for (size_t j = 0; j < layers[i].inputs.size(); ++j)
      if (!layers[i].inputs[j].empty()) readers[layers[i].inputs[j]].emplace_back(i, j);
  const auto& outputs = network.outputs();

  std::set<std::string> channelsLast;
  for (size_t i = 0; i < layers.size(); ++i) {
    if (takes[i].empty() || layers[i].outputs.empty() || layers[i].outputs[0].empty()) continue;
    const std::string& made = layers[i].outputs[0];
    const Tensor* tensor = network.findTensor(made);
    if (!tensor || !tensor->shape.hasRank() || tensor->shape.rank() != 4 ||
        std::find(outputs.begin(), outputs.end(), made) != outputs.end())
      continue;
    auto read = readers.find(made);
    if (read == readers.end()) continue;
    if (std::all_of(read->second.begin(), read->second.end(),
                    [&](const auto& use) { return readsChannelsLast(use.first, use.second); }))
      channelsLast.insert(made);
  }
  // Layers that need one layout on both sides: where their two sides differ, both go linear
  // (which can undo another such layer's pair: repeat until nothing changes).
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < layers.size(); ++i) {
      if (!sameLayout[i] || layers[i].inputs.empty() || layers[i].outputs.empty()) continue;
      const std::string &in = layers[i].inputs[0], &out = layers[i].outputs[0];
      if (channelsLast.count(in) != channelsLast.count(out)) {
        changed = channelsLast.erase(in) + channelsLast.erase(out) > 0 || changed;
      }
    }
  }
  std::unordered_map<std::string, TensorFormat> formats;
  for (const auto& name : channelsLast) formats[name] = TensorFormat::kNHWC;
  return formats;
}

}  // namespace kiln::cuda
