#include "graph/layout_bands.h"

#include <algorithm>

namespace kiln::views {
namespace {

// A direct item of the container being cut: a node in it, or a child cluster.
struct BandItem {
  bool isCluster = false;
  int index = 0;
  int level = 0;
};

// The item of `container` (-1: the top level) that holds `node`, walking up from its cluster;
// fills `items` and `itemOfCluster` as new items appear (so in the order of their first node).
int itemHolding(const LayoutGraph& graph, int container, int node, std::vector<BandItem>& items,
                std::vector<int>& itemOfCluster) {
  int cluster = graph.nodes[size_t(node)].cluster;
  if (cluster == container) {
    items.push_back({false, node});
    return int(items.size()) - 1;
  }
  int child = -1;
  while (cluster != container) {
    if (cluster < 0) return -1;  // not inside `container`
    child = cluster;
    cluster = graph.clusters[size_t(cluster)].parent;
  }
  if (itemOfCluster[size_t(child)] < 0) {
    itemOfCluster[size_t(child)] = int(items.size());
    items.push_back({true, child});
  }
  return itemOfCluster[size_t(child)];
}

// Whole levels go to a band. Once a band is full, it closes at the level boundary, within the
// next half band, that the fewest values cross (each crossing value costs a port on both sides):
// between two blocks rather than inside one. The last band takes the rest when little is left.
std::vector<int> chooseBands(const std::vector<BandItem>& items, const std::vector<std::vector<int>>& successors,
                             int levels, int maxItems) {
  std::vector<int> itemsOnLevel(static_cast<size_t>(levels), 0);
  for (const BandItem& item : items) ++itemsOnLevel[size_t(item.level)];
  // crossing[L]: values made above level L and used at or below it.
  std::vector<int> crossing(static_cast<size_t>(levels) + 1, 0);
  for (size_t i = 0; i < items.size(); ++i) {
    int reach = items[i].level;
    for (int next : successors[i]) reach = std::max(reach, items[size_t(next)].level);
    if (reach == items[i].level) continue;
    ++crossing[size_t(items[i].level + 1)];
    --crossing[size_t(reach + 1)];
  }
  for (size_t level = 1; level < crossing.size(); ++level) crossing[level] += crossing[level - 1];

  std::vector<int> bandOfLevel(static_cast<size_t>(levels), 0);
  int band = 0, level = 0, unplaced = int(items.size());
  while (level < levels) {
    int size = 0;
    while (level < levels && (size < maxItems || unplaced - size < maxItems / 2)) {
      size += itemsOnLevel[size_t(level)];
      bandOfLevel[size_t(level++)] = band;
    }
    if (level == levels) break;
    int best = level, grown = size;
    for (int boundary = level; boundary < levels && grown <= maxItems * 3 / 2; grown += itemsOnLevel[size_t(boundary++)])
      if (crossing[size_t(boundary)] < crossing[size_t(best)]) best = boundary;
    for (; level < best; ++level) {
      size += itemsOnLevel[size_t(level)];
      bandOfLevel[size_t(level)] = band;
    }
    unplaced -= size;
    ++band;
  }
  return bandOfLevel;
}

void cutContainer(LayoutGraph& graph, int container, int maxItems) {
  std::vector<BandItem> items;
  std::vector<int> itemOfCluster(graph.clusters.size(), -1);
  std::vector<int> itemOfNode(graph.nodes.size());
  for (size_t n = 0; n < graph.nodes.size(); ++n)
    itemOfNode[n] = itemHolding(graph, container, int(n), items, itemOfCluster);
  for (size_t c = 0; c < graph.clusters.size(); ++c)  // clusters without nodes
    if (graph.clusters[c].parent == container && itemOfCluster[c] < 0) items.push_back({true, int(c)});

  // Longest path from the sources, along edges that follow the item order (the node order is
  // topological; edges against it, such as a loop body's results, do not push levels down).
  std::vector<std::vector<int>> successors(items.size());
  for (const auto& edge : graph.edges) {
    const int from = itemOfNode[size_t(edge.from)], to = itemOfNode[size_t(edge.to)];
    if (from >= 0 && to >= 0 && from < to) successors[size_t(from)].push_back(to);
  }
  int levels = 1;
  for (size_t i = 0; i < items.size(); ++i) {
    for (int next : successors[i]) items[size_t(next)].level = std::max(items[size_t(next)].level, items[i].level + 1);
    levels = std::max(levels, items[i].level + 1);
  }
  const std::vector<int> bandOfLevel = chooseBands(items, successors, levels, maxItems);
  const int bands = bandOfLevel.back() + 1;
  if (bands == 1) return;

  const int firstBand = int(graph.clusters.size());
  for (int b = 0; b < bands; ++b) graph.clusters.push_back({container, 0});
  for (const BandItem& item : items) {
    const int bandCluster = firstBand + bandOfLevel[size_t(item.level)];
    if (item.isCluster) graph.clusters[size_t(item.index)].parent = bandCluster;
    else graph.nodes[size_t(item.index)].cluster = bandCluster;
  }
}

}  // namespace

BandedGraph cutIntoBands(const LayoutGraph& input, int maxItems) {
  BandedGraph banded{input, input.clusters.size()};
  const int clusters = int(input.clusters.size());
  std::vector<int> directItems(size_t(clusters) + 1, 0);  // the top level last
  for (const auto& node : input.nodes) ++directItems[size_t(node.cluster >= 0 ? node.cluster : clusters)];
  for (const auto& cluster : input.clusters) ++directItems[size_t(cluster.parent >= 0 ? cluster.parent : clusters)];
  for (int container = 0; container <= clusters; ++container)
    if (directItems[size_t(container)] > maxItems) cutContainer(banded.graph, container < clusters ? container : -1, maxItems);
  return banded;
}

}  // namespace kiln::views
