#pragma once
// One flat graph (no clusters) through Graphviz dot: boxes of fixed size, some pinned to the top or
// bottom rank, edges with or without an arrow head. The nested layout (graph_layout.cpp) runs it
// once for every distinct block of a model. Graphviz computes geometry only.
#include "graph/graph_layout.h"

#include <QPointF>
#include <QRectF>
#include <QSizeF>

#include <memory>
#include <mutex>
#include <vector>

namespace kiln::views::dot {

// Ports where edges enter (top) and leave (bottom) a block sit on its first or last rank.
enum class RankPin { kNone, kTop, kBottom };

struct FlatGraph {
  struct Node {
    QSizeF size;
    RankPin pin = RankPin::kNone;
  };
  struct Edge {
    int from = 0;
    int to = 0;
    bool arrowHead = true;  // false for edges ending at a port or a block's frame
  };
  std::vector<Node> nodes;
  std::vector<Edge> edges;
};

// Coordinates with y growing downwards; `bounds` holds every box and route.
struct FlatLayout {
  std::vector<QPointF> centers;
  std::vector<EdgeRoute> routes;  // an empty route where dot gave none
  QRectF bounds;
};

// Holds a Graphviz context and the lock that serialises all Graphviz use in the process (Graphviz
// keeps global state); lay out any number of graphs while it lives.
class DotRunner {
 public:
  DotRunner();
  ~DotRunner();
  DotRunner(const DotRunner&) = delete;
  DotRunner& operator=(const DotRunner&) = delete;

  // Throws kiln::Error(kInternal) when Graphviz fails. `boundedIterations` caps dot's network
  // simplex (coordinate assignment) and halves crossing minimisation: for graphs of thousands of
  // boxes, where the exact optimum costs seconds and looks the same.
  FlatLayout layout(const FlatGraph& graph, const LayoutOptions& options, bool boundedIterations);

 private:
  std::unique_lock<std::mutex> lock_;
  struct Context;
  std::unique_ptr<Context> context_;
};

}  // namespace kiln::views::dot
