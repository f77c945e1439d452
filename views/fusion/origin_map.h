#pragma once
// Which graph nodes each engine layer came from, both ways: an engine layer's origins are the ONNX
// nodes fused into it (BuildReport::LayerSummary::origins). Layers without recorded origins map to
// the node of the same name, so profiles of unfused engines still land on the graph.
#include "graph/graph_scene.h"

#include <kiln/build_report.h>

#include <map>
#include <string>
#include <vector>

namespace kiln::views {

class OriginMap {
 public:
  OriginMap() = default;
  OriginMap(const std::vector<LayerSummary>& layers, const GraphStructure& structure);

  // Graph nodes of the engine layer `layerName` (empty when nothing matches).
  std::vector<int> nodesOfLayer(const std::string& layerName) const;
  // Index (into the report's layers) of the engine layer that node `node` was fused into, or -1.
  int layerOfNode(int node) const;

 private:
  std::map<std::string, int> nodeByName_;
  std::map<std::string, std::vector<int>> nodesByLayer_;
  std::map<int, int> layerByNode_;
};

// A value per engine layer spread onto its origin nodes as a heatmap; fractions are each value
// over the largest.
struct LayerValue {
  std::string layer;
  double value = 0;
  QString label;
};
std::map<int, GraphScene::NodeHeat> layerHeatmap(const OriginMap& origins, const std::vector<LayerValue>& values);

}  // namespace kiln::views
