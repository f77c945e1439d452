#include "fusion/origin_map.h"

#include <algorithm>

namespace kiln::views {

OriginMap::OriginMap(const std::vector<LayerSummary>& layers, const GraphStructure& structure) {
  for (size_t n = 0; n < structure.nodes().size(); ++n)
    if (structure.nodes()[n].kind == NodeKind::kLayer) nodeByName_.emplace(structure.nodes()[n].name, int(n));
  for (size_t l = 0; l < layers.size(); ++l) {
    std::vector<int>& nodes = nodesByLayer_[layers[l].name];
    const auto& names = layers[l].origins.empty() ? std::vector<std::string>{layers[l].name} : layers[l].origins;
    for (const std::string& name : names) {
      const auto it = nodeByName_.find(name);
      if (it == nodeByName_.end()) continue;
      nodes.push_back(it->second);
      layerByNode_.emplace(it->second, int(l));
    }
  }
}

std::vector<int> OriginMap::nodesOfLayer(const std::string& layerName) const {
  if (const auto it = nodesByLayer_.find(layerName); it != nodesByLayer_.end()) return it->second;
  if (const auto it = nodeByName_.find(layerName); it != nodeByName_.end()) return {it->second};
  return {};
}

int OriginMap::layerOfNode(int node) const {
  const auto it = layerByNode_.find(node);
  return it == layerByNode_.end() ? -1 : it->second;
}

std::map<int, GraphScene::NodeHeat> layerHeatmap(const OriginMap& origins, const std::vector<LayerValue>& values) {
  double largest = 0;
  for (const LayerValue& value : values) largest = std::max(largest, value.value);
  std::map<int, GraphScene::NodeHeat> heat;
  if (largest <= 0) return heat;
  for (const LayerValue& value : values)
    for (int node : origins.nodesOfLayer(value.layer)) heat[node] = {value.value / largest, value.label};
  return heat;
}

}  // namespace kiln::views
