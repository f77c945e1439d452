#pragma once
// The graph as the views see it: nodes (layers, graph inputs and outputs), edges named by tensors,
// and nested groups (blocks named by a common path such as "/layer1/0/", and If/Loop/Scan bodies)
// that can be collapsed into one box. Plain C++ over kiln::Network; no Qt.
#include <kiln/network.h>

#include <memory>
#include <string>
#include <vector>

namespace kiln::views {

enum class NodeKind { kLayer, kInput, kOutput };

struct GraphNode {
  NodeKind kind = NodeKind::kLayer;
  const Layer* layer = nullptr;      // set for kLayer
  const Network* network = nullptr;  // the graph or subgraph the node belongs to
  std::string name;                  // the layer's name, or the tensor's for inputs and outputs
  int group = -1;                    // innermost group, -1 at top level
};

// `tensor` is the value flowing along the edge; for a body's result flowing into its If/Loop node
// it is the body output's name.
struct GraphEdge {
  int from = 0;
  int to = 0;
  std::string tensor;
};

enum class GroupKind { kNamePrefix, kSubgraph };

struct GraphGroup {
  GroupKind kind = GroupKind::kNamePrefix;
  std::string path;   // "/layer1/0" or "loop/body": unique, stable across reloads
  std::string title;  // what the view shows: "layer1/0", "body"
  int parent = -1;
  int owner = -1;     // kSubgraph: the If/Loop/Scan node whose body this is
  int depth = 0;
  std::vector<int> childGroups;
  std::vector<int> members;  // nodes directly inside (not in a child group)
  int nodeCount = 0;         // nodes inside at any depth
};

class GraphStructure {
 public:
  GraphStructure() = default;
  explicit GraphStructure(std::shared_ptr<const Network> network);

  const std::shared_ptr<const Network>& network() const { return network_; }
  const std::vector<GraphNode>& nodes() const { return nodes_; }
  const std::vector<GraphEdge>& edges() const { return edges_; }
  // Parents come before their children.
  const std::vector<GraphGroup>& groups() const { return groups_; }
  bool isInGroup(int node, int group) const;
  int layerCount() const { return layerCount_; }

  // Nodes whose name, op type or input/output tensor names contain `text` (case-insensitive),
  // best matches (whole name) first; every node in graph order when `text` is empty.
  std::vector<int> search(const std::string& text) const;

 private:
  void addNetwork(const Network& network, int group, const struct Scope* outer);
  void addNamePrefixGroups();
  int addGroup(GraphGroup group);

  std::shared_ptr<const Network> network_;
  std::vector<GraphNode> nodes_;
  std::vector<GraphEdge> edges_;
  std::vector<GraphGroup> groups_;
  int layerCount_ = 0;
};

// The graph as drawn for a set of collapsed groups: a collapsed group stands for all its nodes, and
// edges between the same two drawn items merge.
struct VisibleGraph {
  struct Item {
    bool isGroup = false;
    int index = 0;    // node or group index in the structure
    int cluster = -1; // innermost expanded group drawn around it (index into `clusters`)
  };
  struct Edge {
    int from = 0;  // item indices
    int to = 0;
    std::vector<int> sourceEdges;  // structure edges drawn by this edge
  };
  std::vector<Item> items;
  std::vector<Edge> edges;
  std::vector<int> clusters;       // expanded groups with something visible inside
  std::vector<int> clusterParent;  // index into `clusters`, -1 at top level
  std::vector<int> itemOfNode;     // for every structure node, the item that shows it
};

VisibleGraph makeVisibleGraph(const GraphStructure& structure, const std::vector<bool>& collapsed);

// Control-flow bodies start collapsed; when more than `maxVisibleItems` would show, the deepest
// blocks collapse first until the graph fits.
std::vector<bool> defaultCollapsedGroups(const GraphStructure& structure, int maxVisibleItems);

}  // namespace kiln::views
