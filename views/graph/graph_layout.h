#pragma once
// Places the nodes of a directed graph and routes its edges with Graphviz (dot). Graphviz only
// computes geometry here; drawing is done by GraphScene's items.
#include <QPointF>
#include <QRectF>
#include <QSizeF>

#include <functional>
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
};

struct LayoutResult {
  std::vector<QPointF> nodeCenters;
  std::vector<EdgeRoute> edges;
  std::vector<QRectF> clusterRects;
  QRectF bounds;
  const char* method = "";  // which layout produced it ("dot", "dot (fast ranking)")
};

struct LayoutOptions {
  double rankSeparation = 36;  // vertical gap between ranks, in scene units
  double nodeSeparation = 24;
  // Above this many nodes dot's coordinate assignment runs with bounded iterations, so that
  // 5,000 nodes lay out in about two seconds instead of twelve.
  int largeGraphNodes = 1500;
};

// Reports progress (0..1) with a phase name; returns false to cancel.
using LayoutMonitor = std::function<bool(double fraction, const char* phase)>;

// Lays `graph` out top to bottom. Throws kiln::Error(kCancelled) when the monitor cancels and
// kiln::Error(kInternal) when Graphviz fails. Safe to call from any thread (calls are serialised,
// as Graphviz keeps global state).
LayoutResult layoutGraph(const LayoutGraph& graph, const LayoutOptions& options = {},
                         const LayoutMonitor& monitor = {});

}  // namespace kiln::views
