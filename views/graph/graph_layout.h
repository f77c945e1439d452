#pragma once
// Places the nodes of a directed graph and routes its edges with Graphviz (dot), block by block:
// each cluster is laid out on its own and placed as one box in its parent, and clusters with the
// same content (the repeated blocks of a ResNet or BERT) share one layout. Graphviz only computes
// geometry here; drawing is done by GraphScene's items.
#include <QPointF>
#include <QRectF>
#include <QSizeF>

#include <functional>
#include <string>
#include <vector>

namespace kiln::views {

// What to lay out: boxes of known size, edges between them, and nested clusters that keep groups of
// boxes together (expanded blocks such as "/layer1/0/").
struct LayoutGraph {
  struct Node {
    QSizeF size;
    int cluster = -1;  // innermost cluster, -1 for none
  };
  struct Edge {
    int from = 0;
    int to = 0;
  };
  struct Cluster {
    int parent = -1;
    double headerHeight = 0;  // room kept at the cluster's top for its title
  };
  std::vector<Node> nodes;
  std::vector<Edge> edges;
  std::vector<Cluster> clusters;
};

// An edge's route: a cubic Bézier chain (start point, then three points per segment) in scene
// coordinates, ending where the arrow head begins; `arrowTip` is where the arrow touches the target.
struct EdgeRoute {
  std::vector<QPointF> bezier;
  QPointF arrowTip;
  // Where the tensor's label goes: the middle of the route's first piece (up to the first frame it
  // crosses), which all edges fanning out of one value share, so their labels coincide.
  QPointF labelAt;
};

struct LayoutResult {
  std::vector<QPointF> nodeCenters;
  std::vector<EdgeRoute> edges;
  std::vector<QRectF> clusterRects;
  QRectF bounds;
  std::string method;  // how it was produced: "dot", "dot, 9 layouts for 723 blocks"
};

struct LayoutOptions {
  double rankSeparation = 36;  // vertical gap between ranks, in scene units
  double nodeSeparation = 24;
  // The top level or a cluster holding more boxes than this is laid out as a stack of bands of
  // about this many (see layout_bands.h): a model without blocks still lays out in pieces.
  int maxBandItems = 400;
  // Above this many boxes in one flat graph (a band can hold more when one rank is that wide),
  // dot's coordinate assignment runs with bounded iterations.
  int largeGraphNodes = 1500;
};

// Reports progress (0..1) with a phase name; returns false to cancel.
using LayoutMonitor = std::function<bool(double fraction, const char* phase)>;

// Lays `graph` out top to bottom. A cluster's frame holds its boxes and a title bar of its
// `headerHeight`; edges into and out of a cluster cross its frame through ports on its top and
// bottom. Throws kiln::Error(kCancelled) when the monitor cancels, kInvalidArgument for edges or
// clusters naming missing nodes or clusters, and kInternal when Graphviz fails. Safe to call from
// any thread (calls are serialised, as Graphviz keeps global state).
LayoutResult layoutGraph(const LayoutGraph& graph, const LayoutOptions& options = {},
                         const LayoutMonitor& monitor = {});

}  // namespace kiln::views
