#include "graph/graph_structure.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <numeric>
#include <unordered_map>

namespace kiln::views {

// Tensor name -> producing node, chained to the enclosing graph's scope for subgraphs.
struct Scope {
  std::unordered_map<std::string, int> producers;
  const Scope* outer = nullptr;
  int find(const std::string& tensor) const {
    for (const Scope* scope = this; scope; scope = scope->outer) {
      auto it = scope->producers.find(tensor);
      if (it != scope->producers.end()) return it->second;
    }
    return -1;
  }
};

namespace {

std::string lowered(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return text;
}

// "/layer1/0/conv1/Conv" -> {"/layer1", "/layer1/0", "/layer1/0/conv1"}: the blocks the node is in.
std::vector<std::string> namePrefixes(const std::string& name) {
  std::vector<std::string> prefixes;
  if (name.empty() || name[0] != '/') return prefixes;
  for (size_t slash = name.find('/', 1); slash != std::string::npos; slash = name.find('/', slash + 1))
    if (slash > 1 && name[slash - 1] != '/') prefixes.push_back(name.substr(0, slash));
  return prefixes;
}

}  // namespace

GraphStructure::GraphStructure(std::shared_ptr<const Network> network) : network_(std::move(network)) {
  if (!network_) return;
  Scope top;
  for (const std::string& input : network_->runtimeInputs()) {
    top.producers[input] = int(nodes_.size());
    nodes_.push_back({NodeKind::kInput, nullptr, network_.get(), input, -1});
  }
  addNetwork(*network_, -1, &top);
  addNamePrefixGroups();
}

int GraphStructure::addGroup(GraphGroup group) {
  int index = int(groups_.size());
  if (group.parent >= 0) groups_[group.parent].childGroups.push_back(index);
  groups_.push_back(std::move(group));
  return index;
}

void GraphStructure::addNetwork(const Network& network, int group, const Scope* outer) {
  Scope scope;
  scope.outer = outer;
  // Top level: `outer` holds the graph inputs, which belong to this scope.
  const bool topLevel = group < 0;
  std::vector<size_t> order;
  try {
    order = network.topologicalOrder();
  } catch (const std::exception&) {  // a cycle: still show the file's order
    for (size_t i = 0; i < network.layers().size(); ++i) order.push_back(i);
  }
  for (size_t layerIndex : order) {
    const Layer& layer = network.layers()[layerIndex];
    const int node = int(nodes_.size());
    std::string name = layer.name.empty() ? layer.opType + "_" + std::to_string(layerIndex) : layer.name;
    nodes_.push_back({NodeKind::kLayer, &layer, &network, std::move(name), group});
    ++layerCount_;
    if (group >= 0) groups_[group].members.push_back(node);
    for (const std::string& input : layer.inputs) {
      if (input.empty()) continue;
      int producer = scope.find(input);
      if (producer >= 0) edges_.push_back({producer, node, input});
    }
    for (const auto& [attributeName, attribute] : layer.attributes) {
      std::vector<const Network*> bodies;
      if (auto* graph = attribute.get<Attribute::Graph>()) bodies.push_back(graph->get());
      if (auto* graphs = attribute.get<std::vector<Attribute::Graph>>())
        for (const auto& g : *graphs) bodies.push_back(g.get());
      for (size_t b = 0; b < bodies.size(); ++b) {
        if (!bodies[b]) continue;
        GraphGroup body;
        body.kind = GroupKind::kSubgraph;
        body.title = bodies.size() > 1 ? attributeName + "[" + std::to_string(b) + "]" : attributeName;
        body.path = nodes_[node].name + "/" + body.title;
        body.parent = group;
        body.owner = node;
        int bodyGroup = addGroup(std::move(body));
        addNetwork(*bodies[b], bodyGroup, &scope);
      }
    }
    for (const std::string& output : layer.outputs)
      if (!output.empty()) scope.producers[output] = node;
  }
  if (topLevel) {
    for (const std::string& output : network.outputs()) {
      const int node = int(nodes_.size());
      nodes_.push_back({NodeKind::kOutput, nullptr, &network, output, -1});
      int producer = scope.find(output);
      if (producer >= 0) edges_.push_back({producer, node, output});
    }
    return;
  }
  // A body's results leave through its owner node.
  const int owner = groups_[group].owner;
  for (const std::string& output : network.outputs()) {
    int producer = scope.producers.count(output) ? scope.producers.at(output) : -1;
    if (producer >= 0) edges_.push_back({producer, owner, output});
  }
}

void GraphStructure::addNamePrefixGroups() {
  // Count the top-level layers under every name prefix.
  std::map<std::string, int> counts;
  int topLevelLayers = 0;
  for (const GraphNode& node : nodes_) {
    if (node.kind != NodeKind::kLayer || node.group != -1) continue;
    ++topLevelLayers;
    for (const std::string& prefix : namePrefixes(node.name)) ++counts[prefix];
  }
  // A prefix makes a group when it holds two or more layers, not all of them, and not exactly the
  // same layers as its parent prefix (then the parent alone is shown, "/model/encoder" style).
  auto isBlock = [&](const std::string& prefix, const std::string& parentPrefix) {
    int count = counts[prefix];
    return count >= 2 && count < topLevelLayers && (parentPrefix.empty() || counts[parentPrefix] != count);
  };
  std::map<std::string, int> groupOfPrefix;
  for (size_t n = 0; n < nodes_.size(); ++n) {
    GraphNode& node = nodes_[n];
    if (node.kind != NodeKind::kLayer || node.group != -1) continue;
    std::vector<std::string> prefixes = namePrefixes(node.name);
    int parentGroup = -1;
    std::string parentPath;
    for (size_t i = 0; i < prefixes.size(); ++i) {
      const std::string& prefix = prefixes[i];
      const std::string& longer = i + 1 < prefixes.size() ? prefixes[i + 1] : std::string();
      // Keep the longest of a run of prefixes holding the same layers.
      if (!isBlock(prefix, i > 0 ? prefixes[i - 1] : std::string()) ||
          (!longer.empty() && counts[longer] == counts[prefix]))
        continue;
      auto [it, inserted] = groupOfPrefix.emplace(prefix, -1);
      if (inserted) {
        GraphGroup group;
        group.path = prefix;
        group.title = prefix.substr(parentPath.empty() ? 1 : parentPath.size() + 1);
        group.parent = parentGroup;
        it->second = addGroup(std::move(group));
      }
      parentGroup = it->second;
      parentPath = prefix;
    }
    node.group = parentGroup;
    if (parentGroup >= 0) groups_[parentGroup].members.push_back(int(n));
  }
  // A top-level If/Loop in a block keeps its bodies inside that block.
  for (size_t g = 0; g < groups_.size(); ++g) {
    GraphGroup& group = groups_[g];
    if (group.kind != GroupKind::kSubgraph || group.parent != -1) continue;
    group.parent = nodes_[group.owner].group;
    if (group.parent >= 0) groups_[group.parent].childGroups.push_back(int(g));
  }
  for (GraphGroup& group : groups_) {
    group.depth = 0;
    for (int g = group.parent; g >= 0; g = groups_[g].parent) ++group.depth;
  }
  for (const GraphNode& node : nodes_)
    for (int g = node.group; g >= 0; g = groups_[g].parent) ++groups_[g].nodeCount;
}

bool GraphStructure::isInGroup(int node, int group) const {
  for (int g = nodes_[node].group; g >= 0; g = groups_[g].parent)
    if (g == group) return true;
  return false;
}

std::vector<int> GraphStructure::search(const std::string& text) const {
  const std::string needle = lowered(text);
  if (needle.empty()) {
    std::vector<int> all(nodes_.size());
    std::iota(all.begin(), all.end(), 0);  // nodes are stored in graph (topological) order
    return all;
  }
  std::vector<std::pair<int, int>> ranked;  // (rank, node): 0 exact name, 1 name, 2 op type, 3 tensor
  for (size_t n = 0; n < nodes_.size(); ++n) {
    const GraphNode& node = nodes_[n];
    const std::string name = lowered(node.name);
    int rank = -1;
    if (name == needle) rank = 0;
    else if (name.find(needle) != std::string::npos) rank = 1;
    else if (node.layer && lowered(node.layer->opType).find(needle) != std::string::npos) rank = 2;
    else if (node.layer) {
      auto matches = [&](const std::vector<std::string>& tensors) {
        return std::any_of(tensors.begin(), tensors.end(),
                           [&](const std::string& t) { return lowered(t).find(needle) != std::string::npos; });
      };
      if (matches(node.layer->inputs) || matches(node.layer->outputs)) rank = 3;
    }
    if (rank >= 0) ranked.emplace_back(rank, int(n));
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](auto& a, auto& b) { return a.first < b.first; });
  std::vector<int> result;
  result.reserve(ranked.size());
  for (auto& [rank, node] : ranked) result.push_back(node);
  return result;
}

namespace {

// The outermost collapsed group around `node`, or -1 when every group around it is expanded.
int collapsedAncestor(const GraphStructure& structure, int node, const std::vector<bool>& collapsed) {
  int outermost = -1;
  for (int g = structure.nodes()[node].group; g >= 0; g = structure.groups()[g].parent)
    if (collapsed[g]) outermost = g;
  return outermost;
}

}  // namespace

VisibleGraph makeVisibleGraph(const GraphStructure& structure, const std::vector<bool>& collapsed) {
  const auto& groups = structure.groups();
  VisibleGraph visible;
  std::vector<int> itemOfGroup(groups.size(), -1);
  std::vector<int> clusterOfGroup(groups.size(), -1);
  // Clusters are the expanded groups around visible items, created outermost first.
  std::function<int(int)> clusterFor = [&](int group) -> int {
    if (group < 0) return -1;
    if (clusterOfGroup[group] < 0) {
      int parent = clusterFor(groups[group].parent);
      clusterOfGroup[group] = int(visible.clusters.size());
      visible.clusters.push_back(group);
      visible.clusterParent.push_back(parent);
    }
    return clusterOfGroup[group];
  };
  visible.itemOfNode.resize(structure.nodes().size());
  for (size_t n = 0; n < structure.nodes().size(); ++n) {
    int hiddenIn = collapsedAncestor(structure, int(n), collapsed);
    if (hiddenIn < 0) {
      visible.itemOfNode[n] = int(visible.items.size());
      visible.items.push_back({false, int(n), clusterFor(structure.nodes()[n].group)});
      continue;
    }
    if (itemOfGroup[hiddenIn] < 0) {
      itemOfGroup[hiddenIn] = int(visible.items.size());
      visible.items.push_back({true, hiddenIn, clusterFor(groups[hiddenIn].parent)});
    }
    visible.itemOfNode[n] = itemOfGroup[hiddenIn];
  }
  std::map<std::pair<int, int>, int> edgeBetween;
  for (size_t e = 0; e < structure.edges().size(); ++e) {
    const GraphEdge& edge = structure.edges()[e];
    int from = visible.itemOfNode[edge.from], to = visible.itemOfNode[edge.to];
    if (from == to) continue;
    auto [it, inserted] = edgeBetween.emplace(std::make_pair(from, to), int(visible.edges.size()));
    if (inserted) visible.edges.push_back({from, to, {}});
    visible.edges[it->second].sourceEdges.push_back(int(e));
  }
  return visible;
}

std::vector<bool> defaultCollapsedGroups(const GraphStructure& structure, int maxVisibleItems) {
  const auto& groups = structure.groups();
  std::vector<bool> collapsed(groups.size(), false);
  int maxDepth = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    collapsed[g] = groups[g].kind == GroupKind::kSubgraph;
    maxDepth = std::max(maxDepth, groups[g].depth);
  }
  for (int depth = maxDepth; depth >= 0; --depth) {
    if (int(makeVisibleGraph(structure, collapsed).items.size()) <= maxVisibleItems) break;
    for (size_t g = 0; g < groups.size(); ++g)
      if (groups[g].depth >= depth) collapsed[g] = true;
  }
  return collapsed;
}

}  // namespace kiln::views
