#include "graph/dot_layout.h"

#include <kiln/error.h>

#include <graphviz/gvc.h>

#include <string>

namespace kiln::views::dot {
namespace {

constexpr double kPointsPerInch = 72.0;

std::mutex& graphvizMutex() {
  static std::mutex mutex;
  return mutex;
}

// Graphviz takes `char*` for strings it never modifies.
char* mutableText(const char* text) { return const_cast<char*>(text); }

void setAttribute(void* object, const char* name, const std::string& value) {
  agsafeset(object, mutableText(name), mutableText(value.c_str()), mutableText(""));
}

std::string inches(double sceneUnits) { return std::to_string(sceneUnits / kPointsPerInch); }

// One graph and its layout, freed in the right order whatever happens.
struct GraphHandle {
  GVC_t* context;
  Agraph_t* graph;
  bool laidOut = false;
  GraphHandle(GVC_t* gvc) : context(gvc), graph(agopen(mutableText("kiln"), Agdirected, nullptr)) {}
  ~GraphHandle() {
    if (laidOut) gvFreeLayout(context, graph);
    agclose(graph);
  }
};

void setGraphAttributes(Agraph_t* graph, const LayoutOptions& options, bool boundedIterations) {
  setAttribute(graph, "rankdir", "TB");
  setAttribute(graph, "splines", "spline");
  setAttribute(graph, "ranksep", inches(options.rankSeparation));
  setAttribute(graph, "nodesep", inches(options.nodeSeparation));
  if (boundedIterations) {
    // dot's x-coordinate network simplex dominates on big flat graphs; bounding it keeps the
    // chain-like graphs of neural networks straight at a fraction of the cost.
    setAttribute(graph, "nslimit", "0.02");
    setAttribute(graph, "mclimit", "0.5");
  }
  agattr(graph, AGNODE, mutableText("shape"), mutableText("box"));
  agattr(graph, AGNODE, mutableText("fixedsize"), mutableText("true"));
  agattr(graph, AGNODE, mutableText("label"), mutableText(""));
  agattr(graph, AGNODE, mutableText("width"), mutableText("1"));
  agattr(graph, AGNODE, mutableText("height"), mutableText("1"));
  agattr(graph, AGEDGE, mutableText("arrowhead"), mutableText("normal"));
}

// A subgraph holding the nodes pinned to the first (rank=min) or last (rank=max) rank.
Agraph_t* pinnedRank(Agraph_t* graph, RankPin pin) {
  Agraph_t* subgraph = agsubg(graph, mutableText(pin == RankPin::kTop ? "top_rank" : "bottom_rank"), 1);
  setAttribute(subgraph, "rank", pin == RankPin::kTop ? "min" : "max");
  return subgraph;
}

}  // namespace

struct DotRunner::Context {
  GVC_t* gvc = gvContext();
  ~Context() { gvFreeContext(gvc); }
};

DotRunner::DotRunner() : lock_(graphvizMutex()) {
  agseterr(AGERR);  // warnings would only clutter stderr
  context_ = std::make_unique<Context>();
}

DotRunner::~DotRunner() = default;

FlatLayout DotRunner::layout(const FlatGraph& input, const LayoutOptions& options, bool boundedIterations) {
  FlatLayout result;
  if (input.nodes.empty()) return result;
  GraphHandle handle(context_->gvc);
  Agraph_t* graph = handle.graph;
  setGraphAttributes(graph, options, boundedIterations);
  Agsym_t* widthSymbol = agattr(graph, AGNODE, mutableText("width"), nullptr);
  Agsym_t* heightSymbol = agattr(graph, AGNODE, mutableText("height"), nullptr);
  Agsym_t* arrowSymbol = agattr(graph, AGEDGE, mutableText("arrowhead"), nullptr);

  Agraph_t* topRank = nullptr;
  Agraph_t* bottomRank = nullptr;
  std::vector<Agnode_t*> nodes(input.nodes.size());
  for (size_t i = 0; i < input.nodes.size(); ++i) {
    const FlatGraph::Node& node = input.nodes[i];
    const std::string name = "n" + std::to_string(i);
    nodes[i] = agnode(graph, mutableText(name.c_str()), 1);
    agxset(nodes[i], widthSymbol, mutableText(inches(node.size.width()).c_str()));
    agxset(nodes[i], heightSymbol, mutableText(inches(node.size.height()).c_str()));
    if (node.pin == RankPin::kTop) {
      if (!topRank) topRank = pinnedRank(graph, RankPin::kTop);
      agsubnode(topRank, nodes[i], 1);
    } else if (node.pin == RankPin::kBottom) {
      if (!bottomRank) bottomRank = pinnedRank(graph, RankPin::kBottom);
      agsubnode(bottomRank, nodes[i], 1);
    }
  }
  std::vector<Agedge_t*> edges(input.edges.size());
  for (size_t i = 0; i < input.edges.size(); ++i) {
    const FlatGraph::Edge& edge = input.edges[i];
    // Parallel edges get distinct names so each keeps its own route.
    const std::string name = "e" + std::to_string(i);
    edges[i] = agedge(graph, nodes[size_t(edge.from)], nodes[size_t(edge.to)], mutableText(name.c_str()), 1);
    if (!edge.arrowHead) agxset(edges[i], arrowSymbol, mutableText("none"));
  }

  if (gvLayout(handle.context, graph, "dot") != 0)
    throw Error(ErrorCode::kInternal, "Graphviz could not lay out a graph of " + std::to_string(input.nodes.size()) +
                                          " boxes; try collapsing groups");
  handle.laidOut = true;

  // Graphviz's y grows upwards: flip it.
  const double top = GD_bb(graph).UR.y;
  auto toScene = [top](pointf p) { return QPointF(p.x, top - p.y); };
  result.centers.reserve(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    const QPointF center = toScene(ND_coord(nodes[i]));
    result.centers.push_back(center);
    const QSizeF size = input.nodes[i].size;
    result.bounds |= QRectF(center - QPointF(size.width() / 2, size.height() / 2), size);
  }
  result.routes.resize(edges.size());
  for (size_t i = 0; i < edges.size(); ++i) {
    const splines* spline = ED_spl(edges[i]);
    if (!spline || spline->size == 0) continue;
    const bezier& curve = spline->list[0];
    EdgeRoute& route = result.routes[i];
    route.bezier.reserve(size_t(curve.size));
    for (int k = 0; k < curve.size; ++k) {
      route.bezier.push_back(toScene(curve.list[k]));
      result.bounds |= QRectF(route.bezier.back(), QSizeF(0.01, 0.01));
    }
    route.arrowTip = curve.eflag ? toScene(curve.ep) : route.bezier.back();
  }
  return result;
}

}  // namespace kiln::views::dot
