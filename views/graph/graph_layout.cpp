#include "graph/graph_layout.h"

#include "graph/dot_layout.h"
#include "graph/layout_bands.h"

#include <kiln/error.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>

// Nested layout, as Netron-class viewers do it: dot never sees a cluster. Every cluster (and the
// top level) becomes a small flat graph of its own boxes, its child clusters as single boxes of
// their laid-out size, and ports: an entry port on the top rank for every outside value used
// inside, an exit port on the bottom rank for every inside value used outside. Clusters are laid out
// innermost first; those with identical flat graphs (sizes, edges, ports) share one dot run, so a
// model of 700 repeated blocks costs a dozen small layouts. An edge's route is then stitched from
// its pieces: source → exit ports → the common container → entry ports → target. Containers of
// many boxes are first cut into frameless bands (layout_bands.h), so no dot run grows big.
namespace kiln::views {
namespace {

constexpr double kFrameMargin = 10;       // between a frame and its boxes (sides and bottom)
constexpr double kTitleGap = 4;           // between a frame's title bar and its first rank
constexpr double kMinFrameWidth = 80;
constexpr double kArrowLength = 10;       // dot's arrow head, used when dot gave no route
const QSizeF kPortSize(2, 2);

enum class ItemKind { kNode, kCluster, kEntryPort, kExitPort };

// A box of a container's flat graph. `index`: the node, the cluster, or a port's source node.
struct Item {
  ItemKind kind;
  int index;
};

// The top level or one cluster, as a flat graph.
struct Container {
  std::vector<Item> items;  // the flat graph's nodes, in this order
  std::map<int, int> entryPortOf;  // source node -> item
  std::map<int, int> exitPortOf;   // source node -> item
  std::map<std::tuple<int, int, int>, int> edgeOf;  // (from item, to item, key) -> flat edge
  dot::FlatGraph graph;
  int parent = -1;   // container, -1 for the top level
  int depth = 0;
  int layout = -1;   // index of its (shared) flat layout
  QPointF origin;    // where the flat layout's (0, 0) lies in the scene
  QRectF frame;      // clusters: the frame in the scene
};

// One part of an edge's route: flat edge `edge` of container `container`.
struct Piece {
  int container;
  int edge;
};

QPointF lerp(QPointF a, QPointF b, double t) { return a + (b - a) * t; }

void appendLine(EdgeRoute& route, QPointF to) {
  const QPointF from = route.bezier.back();
  route.bezier.insert(route.bezier.end(), {lerp(from, to, 1.0 / 3), lerp(from, to, 2.0 / 3), to});
  route.arrowTip = to;
}

// Appends `piece` to `route`, joining them with a straight segment where they do not meet.
void appendRoute(EdgeRoute& route, const EdgeRoute& piece) {
  if (route.bezier.empty()) {
    route.bezier = piece.bezier;
    route.arrowTip = piece.arrowTip;
    return;
  }
  const QPointF gap = piece.bezier.front() - route.bezier.back();
  if (std::abs(gap.x()) + std::abs(gap.y()) > 0.01) appendLine(route, piece.bezier.front());
  route.bezier.insert(route.bezier.end(), piece.bezier.begin() + 1, piece.bezier.end());
  route.arrowTip = piece.arrowTip;
}

// Moves a route's first (or last) point to `point`, its neighbouring control point along, so the
// curve keeps its direction where it meets a port.
void moveStart(EdgeRoute& route, QPointF point) {
  const QPointF delta = point - route.bezier.front();
  route.bezier[0] += delta;
  route.bezier[1] += delta;
}

void moveEnd(EdgeRoute& route, QPointF point) {
  const size_t last = route.bezier.size() - 1;
  const QPointF delta = point - route.bezier[last];
  route.bezier[last] += delta;
  route.bezier[last - 1] += delta;
  route.arrowTip = point;
}

// The point halfway along a Bézier chain, counting segments.
QPointF middleOf(const std::vector<QPointF>& bezier) {
  const size_t segments = (bezier.size() - 1) / 3;
  if (segments % 2 == 0) return bezier[3 * (segments / 2)];
  const QPointF* p = &bezier[3 * (segments / 2)];
  return (p[0] + 3 * p[1] + 3 * p[2] + p[3]) / 8;  // the segment at t = 1/2
}

void translate(EdgeRoute& route, QPointF offset) {
  for (QPointF& p : route.bezier) p += offset;
  route.arrowTip += offset;
}

void checkCancel(const LayoutMonitor& monitor, double fraction, const char* phase) {
  if (monitor && !monitor(fraction, phase)) throw Error(ErrorCode::kCancelled, "the layout was cancelled");
}

void validate(const LayoutGraph& graph) {
  const int nodes = int(graph.nodes.size()), clusters = int(graph.clusters.size());
  for (const auto& node : graph.nodes)
    if (node.cluster >= clusters)
      throw Error(ErrorCode::kInvalidArgument, "layout: a node names cluster " + std::to_string(node.cluster) +
                                                   " of " + std::to_string(clusters));
  for (const auto& edge : graph.edges)
    if (edge.from < 0 || edge.from >= nodes || edge.to < 0 || edge.to >= nodes)
      throw Error(ErrorCode::kInvalidArgument, "layout: an edge joins nodes " + std::to_string(edge.from) + " and " +
                                                   std::to_string(edge.to) + " of " + std::to_string(nodes));
  for (int c = 0; c < clusters; ++c) {
    int steps = 0;
    for (int p = graph.clusters[size_t(c)].parent; p >= 0; p = graph.clusters[size_t(p)].parent)
      if (p >= clusters || ++steps > clusters)
        throw Error(ErrorCode::kInvalidArgument,
                    "layout: cluster " + std::to_string(c) + " has a missing or cyclic parent");
  }
}

// The flat graph's content as bytes: clusters with equal signatures get equal layouts.
std::string signature(const dot::FlatGraph& graph) {
  std::string bytes;
  auto put = [&bytes](auto value) { bytes.append(reinterpret_cast<const char*>(&value), sizeof(value)); };
  put(graph.nodes.size());
  for (const auto& node : graph.nodes) {
    put(node.size.width());
    put(node.size.height());
    put(node.pin);
  }
  for (const auto& edge : graph.edges) {
    put(edge.from);
    put(edge.to);
    put(edge.arrowHead);
  }
  return bytes;
}

class NestedLayout {
 public:
  // Clusters from `firstBand` on are bands: no frame, no title, not in the result.
  NestedLayout(const LayoutGraph& input, size_t firstBand, const LayoutOptions& options, const LayoutMonitor& monitor)
      : input_(input), firstBand_(int(firstBand)), options_(options), monitor_(monitor) {}

  LayoutResult run() {
    collectItems();
    pieces_.resize(input_.edges.size());
    for (size_t e = 0; e < input_.edges.size(); ++e) splitEdge(int(e));
    layOutContainers();
    place();
    return result();
  }

 private:
  int root() const { return int(input_.clusters.size()); }
  int containerOfNode(int node) const {
    const int cluster = input_.nodes[size_t(node)].cluster;
    return cluster >= 0 ? cluster : root();
  }

  // Items ordered by the first node they hold, so that identical blocks list them alike.
  void collectItems() {
    const int clusters = int(input_.clusters.size());
    containers_.resize(size_t(clusters) + 1);
    for (int c = 0; c < clusters; ++c) {
      const int parent = input_.clusters[size_t(c)].parent;
      containers_[size_t(c)].parent = parent >= 0 ? parent : root();
    }
    std::vector<int> firstNode(size_t(clusters), INT_MAX);
    for (int n = 0; n < int(input_.nodes.size()); ++n)
      for (int c = input_.nodes[size_t(n)].cluster; c >= 0; c = input_.clusters[size_t(c)].parent)
        firstNode[size_t(c)] = std::min(firstNode[size_t(c)], n);
    std::vector<std::vector<std::tuple<int, int, Item>>> members(containers_.size());
    for (int n = 0; n < int(input_.nodes.size()); ++n)
      members[size_t(containerOfNode(n))].push_back({n, 0, {ItemKind::kNode, n}});
    for (int c = 0; c < clusters; ++c)
      members[size_t(containers_[size_t(c)].parent)].push_back({firstNode[size_t(c)], c + 1, {ItemKind::kCluster, c}});
    itemOfNode_.resize(input_.nodes.size());
    itemOfCluster_.resize(size_t(clusters));
    for (size_t c = 0; c < containers_.size(); ++c) {
      auto& list = members[c];
      std::sort(list.begin(), list.end(), [](const auto& a, const auto& b) {
        return std::tie(std::get<0>(a), std::get<1>(a)) < std::tie(std::get<0>(b), std::get<1>(b));
      });
      for (const auto& member : list) {
        const Item& item = std::get<2>(member);
        (item.kind == ItemKind::kNode ? itemOfNode_ : itemOfCluster_)[size_t(item.index)] = addItem(int(c), item);
      }
    }
    for (size_t c = 0; c < containers_.size(); ++c)
      for (int p = containers_[c].parent; p >= 0; p = containers_[size_t(p)].parent) ++containers_[c].depth;
  }

  int addItem(int container, Item item) {
    Container& owner = containers_[size_t(container)];
    owner.items.push_back(item);
    dot::RankPin pin = item.kind == ItemKind::kEntryPort  ? dot::RankPin::kTop
                       : item.kind == ItemKind::kExitPort ? dot::RankPin::kBottom
                                                          : dot::RankPin::kNone;
    owner.graph.nodes.push_back({QSizeF(), pin});
    return int(owner.items.size()) - 1;
  }

  int port(int container, ItemKind kind, int source) {
    auto& ports = kind == ItemKind::kEntryPort ? containers_[size_t(container)].entryPortOf
                                               : containers_[size_t(container)].exitPortOf;
    auto it = ports.find(source);
    if (it != ports.end()) return it->second;
    const int item = addItem(container, {kind, source});
    ports.emplace(source, item);
    return item;
  }

  // Edges through ports or frames carry one value (their source node): they merge. Edges between
  // two plain boxes keep their own route even when parallel.
  void addPiece(int edge, int container, int from, int to, int source) {
    Container& owner = containers_[size_t(container)];
    const bool plain = owner.items[size_t(from)].kind == ItemKind::kNode && owner.items[size_t(to)].kind == ItemKind::kNode;
    const auto key = std::make_tuple(from, to, plain ? -1 - edge : source);
    auto [it, inserted] = owner.edgeOf.emplace(key, int(owner.graph.edges.size()));
    if (inserted) owner.graph.edges.push_back({from, to, owner.items[size_t(to)].kind == ItemKind::kNode});
    pieces_[size_t(edge)].push_back({container, it->second});
  }

  int commonContainer(int a, int b) const {
    while (containers_[size_t(a)].depth > containers_[size_t(b)].depth) a = containers_[size_t(a)].parent;
    while (containers_[size_t(b)].depth > containers_[size_t(a)].depth) b = containers_[size_t(b)].parent;
    while (a != b) a = containers_[size_t(a)].parent, b = containers_[size_t(b)].parent;
    return a;
  }

  // Up from the source through exit ports, across the common container, down through entry ports.
  void splitEdge(int e) {
    const int source = input_.edges[size_t(e)].from, target = input_.edges[size_t(e)].to;
    const int common = commonContainer(containerOfNode(source), containerOfNode(target));
    int from = itemOfNode_[size_t(source)];
    for (int c = containerOfNode(source); c != common; c = containers_[size_t(c)].parent) {
      addPiece(e, c, from, port(c, ItemKind::kExitPort, source), source);
      from = itemOfCluster_[size_t(c)];
    }
    std::vector<int> down;  // containers below `common` holding the target, outermost last
    for (int c = containerOfNode(target); c != common; c = containers_[size_t(c)].parent) down.push_back(c);
    int to = down.empty() ? itemOfNode_[size_t(target)] : itemOfCluster_[size_t(down.back())];
    addPiece(e, common, from, to, source);
    for (size_t i = down.size(); i-- > 0;) {
      to = i > 0 ? itemOfCluster_[size_t(down[i - 1])] : itemOfNode_[size_t(target)];
      addPiece(e, down[i], port(down[i], ItemKind::kEntryPort, source), to, source);
    }
  }

  QSizeF itemSize(const Item& item) const {
    switch (item.kind) {
      case ItemKind::kNode: return input_.nodes[size_t(item.index)].size;
      case ItemKind::kCluster: return containers_[size_t(item.index)].frame.size();
      default: return kPortSize;
    }
  }

  bool isFramed(int container) const { return container < firstBand_; }
  double titleHeight(int container) const {
    return isFramed(container) ? input_.clusters[size_t(container)].headerHeight + kTitleGap : 0;
  }

  // Innermost first, so that every cluster's frame size is known before its parent is laid out.
  void layOutContainers() {
    std::vector<int> order(containers_.size());
    for (size_t c = 0; c < order.size(); ++c) order[c] = int(c);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return containers_[size_t(a)].depth > containers_[size_t(b)].depth; });
    std::unordered_map<std::string, int> layoutOf;
    dot::DotRunner runner;
    for (size_t done = 0; done < order.size(); ++done) {
      Container& container = containers_[size_t(order[done])];
      for (size_t i = 0; i < container.items.size(); ++i) container.graph.nodes[i].size = itemSize(container.items[i]);
      auto [it, inserted] = layoutOf.emplace(signature(container.graph), int(layouts_.size()));
      if (inserted) {
        checkCancel(monitor_, 0.05 + 0.9 * double(done) / double(order.size()), "Running dot");
        const bool bounded = int(container.graph.nodes.size()) > options_.largeGraphNodes;
        boundedIterations_ = boundedIterations_ || bounded;
        layouts_.push_back(runner.layout(container.graph, options_, bounded));
      }
      container.layout = it->second;
      const QRectF content = layouts_[size_t(container.layout)].bounds;
      const bool framed = isFramed(order[done]);
      const double margin = framed ? kFrameMargin : 0;
      container.frame.setSize(QSizeF(std::max(content.width() + 2 * margin, framed ? kMinFrameWidth : 0.0),
                                     content.height() + titleHeight(order[done]) + margin));
    }
  }

  // Outermost first: a cluster's frame is where its parent's layout put its box.
  void place() {
    std::vector<int> order(containers_.size());
    for (size_t c = 0; c < order.size(); ++c) order[c] = int(c);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return containers_[size_t(a)].depth < containers_[size_t(b)].depth; });
    for (int c : order) {
      Container& container = containers_[size_t(c)];
      const dot::FlatLayout& layout = layouts_[size_t(container.layout)];
      if (c == root()) {
        container.frame = QRectF(QPointF(0, 0), layout.bounds.size());
        container.origin = -layout.bounds.topLeft();
      } else {
        const QRectF& frame = container.frame;
        const QPointF contentTopLeft(frame.center().x() - layout.bounds.width() / 2, frame.top() + titleHeight(c));
        container.origin = contentTopLeft - layout.bounds.topLeft();
      }
      for (size_t i = 0; i < container.items.size(); ++i) {
        if (container.items[i].kind != ItemKind::kCluster) continue;
        QRectF& frame = containers_[size_t(container.items[i].index)].frame;
        frame.moveCenter(container.origin + layout.centers[i]);
      }
    }
  }

  QPointF centerOf(int container, int item) const {
    const Container& owner = containers_[size_t(container)];
    return owner.origin + layouts_[size_t(owner.layout)].centers[size_t(item)];
  }

  // A piece of route in scene coordinates, meeting the ports of the frames it starts or ends at.
  EdgeRoute pieceRoute(const Piece& piece, int source) const {
    const Container& owner = containers_[size_t(piece.container)];
    const dot::FlatGraph::Edge& edge = owner.graph.edges[size_t(piece.edge)];
    EdgeRoute route = layouts_[size_t(owner.layout)].routes[size_t(piece.edge)];
    if (route.bezier.size() < 4) route = straightRoute(piece.container, edge);
    else translate(route, owner.origin);
    const Item& from = owner.items[size_t(edge.from)];
    if (from.kind == ItemKind::kCluster) {
      const Container& cluster = containers_[size_t(from.index)];
      const double portX = centerOf(from.index, cluster.exitPortOf.at(source)).x();
      moveStart(route, QPointF(portX, cluster.frame.bottom()));
    }
    const Item& to = owner.items[size_t(edge.to)];
    if (to.kind == ItemKind::kCluster) {
      const Container& cluster = containers_[size_t(to.index)];
      const double portX = centerOf(to.index, cluster.entryPortOf.at(source)).x();
      moveEnd(route, QPointF(portX, cluster.frame.top()));
    }
    return route;
  }

  // From the bottom of one box to the top of the other: for the rare edge dot gives no route.
  EdgeRoute straightRoute(int container, const dot::FlatGraph::Edge& edge) const {
    const Container& owner = containers_[size_t(container)];
    const QPointF from = centerOf(container, edge.from) + QPointF(0, owner.graph.nodes[size_t(edge.from)].size.height() / 2);
    const QPointF tip = centerOf(container, edge.to) - QPointF(0, owner.graph.nodes[size_t(edge.to)].size.height() / 2);
    EdgeRoute route;
    route.bezier.push_back(from);
    appendLine(route, edge.arrowHead ? tip - QPointF(0, kArrowLength) : tip);
    route.arrowTip = tip;
    return route;
  }

  LayoutResult result() const {
    LayoutResult result;
    result.bounds = containers_[size_t(root())].frame;
    result.nodeCenters.reserve(input_.nodes.size());
    for (size_t n = 0; n < input_.nodes.size(); ++n)
      result.nodeCenters.push_back(centerOf(containerOfNode(int(n)), itemOfNode_[n]));
    result.edges.resize(input_.edges.size());
    for (size_t e = 0; e < input_.edges.size(); ++e) {
      EdgeRoute& route = result.edges[e];
      for (const Piece& piece : pieces_[e]) {
        const EdgeRoute part = pieceRoute(piece, input_.edges[e].from);
        if (route.bezier.empty()) route.labelAt = middleOf(part.bezier);
        appendRoute(route, part);
      }
    }
    result.clusterRects.reserve(size_t(firstBand_));
    for (int c = 0; c < firstBand_; ++c) result.clusterRects.push_back(containers_[size_t(c)].frame);
    result.method = boundedIterations_ ? "dot (bounded iterations)" : "dot";
    if (layouts_.size() > 1) {
      result.method += ", " + std::to_string(layouts_.size()) + " layouts for ";
      if (firstBand_ > 0) result.method += std::to_string(firstBand_) + " blocks";
      if (firstBand_ > 0 && root() > firstBand_) result.method += " and ";
      if (root() > firstBand_) result.method += std::to_string(root() - firstBand_) + " bands";
    }
    return result;
  }

  const LayoutGraph& input_;
  const int firstBand_;
  const LayoutOptions& options_;
  const LayoutMonitor& monitor_;
  std::vector<Container> containers_;  // clusters by index, then the top level
  std::vector<int> itemOfNode_;        // item of every node in its container
  std::vector<int> itemOfCluster_;     // item of every cluster in its parent container
  std::vector<std::vector<Piece>> pieces_;  // for every edge, its pieces from source to target
  std::vector<dot::FlatLayout> layouts_;    // one for every distinct flat graph
  bool boundedIterations_ = false;
};

}  // namespace

LayoutResult layoutGraph(const LayoutGraph& input, const LayoutOptions& options, const LayoutMonitor& monitor) {
  checkCancel(monitor, 0.0, "Preparing layout");
  validate(input);
  const BandedGraph banded = cutIntoBands(input, options.maxBandItems);
  LayoutResult result = NestedLayout(banded.graph, banded.firstBand, options, monitor).run();
  checkCancel(monitor, 1.0, "Layout done");
  return result;
}

}  // namespace kiln::views
