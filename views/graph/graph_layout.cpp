#include "graph/graph_layout.h"

#include <kiln/error.h>

#include <graphviz/gvc.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

namespace kiln::views {
namespace {

// Graphviz keeps global state (symbol tables, error level), so only one layout runs at a time.
std::mutex& graphvizMutex() {
  static std::mutex mutex;
  return mutex;
}

constexpr double kPointsPerInch = 72.0;

// Graphviz takes `char*` for strings it never modifies.
char* mutableText(const char* text) { return const_cast<char*>(text); }

void setAttribute(void* object, const char* name, const std::string& value) {
  agsafeset(object, mutableText(name), mutableText(value.c_str()), mutableText(""));
}

std::string number(double value) { return std::to_string(value); }

struct GraphvizSession {
  GVC_t* context = gvContext();
  Agraph_t* graph = nullptr;
  bool laidOut = false;
  ~GraphvizSession() {
    if (graph) {
      if (laidOut) gvFreeLayout(context, graph);
      agclose(graph);
    }
    gvFreeContext(context);
  }
};

void checkCancel(const LayoutMonitor& monitor, double fraction, const char* phase) {
  if (monitor && !monitor(fraction, phase)) throw Error(ErrorCode::kCancelled, "the layout was cancelled");
}

void setGraphAttributes(Agraph_t* graph, const LayoutGraph& input, const LayoutOptions& options) {
  setAttribute(graph, "rankdir", "TB");
  setAttribute(graph, "splines", "spline");
  setAttribute(graph, "ranksep", number(options.rankSeparation / kPointsPerInch));
  setAttribute(graph, "nodesep", number(options.nodeSeparation / kPointsPerInch));
  setAttribute(graph, "newrank", "true");
  if (int(input.nodes.size()) > options.largeGraphNodes) {
    // dot's x-coordinate network simplex takes ~90% of its time on big graphs (5,000 nodes: 11 s of
    // 12 s); bounding its iterations brings that to ~1.5 s and keeps the chain-like graphs of
    // neural networks straight. Ranking stays exact; crossing minimisation runs half its passes.
    setAttribute(graph, "nslimit", "0.02");
    setAttribute(graph, "mclimit", "0.5");
  }
}

std::vector<Agraph_t*> addClusters(Agraph_t* graph, const LayoutGraph& input) {
  std::vector<Agraph_t*> clusters(input.clusters.size(), nullptr);
  // Parents may come after children in the list: create them on demand.
  std::function<Agraph_t*(int)> clusterGraph = [&](int index) -> Agraph_t* {
    if (clusters[index]) return clusters[index];
    int parent = input.clusters[index].parent;
    Agraph_t* owner = parent >= 0 ? clusterGraph(parent) : graph;
    std::string name = "cluster_" + std::to_string(index);
    Agraph_t* cluster = agsubg(owner, mutableText(name.c_str()), 1);
    // An empty label of the header's height keeps room at the top for the title drawn by the view.
    setAttribute(cluster, "label", " ");
    setAttribute(cluster, "labelloc", "t");
    setAttribute(cluster, "fontsize", number(std::max(1.0, input.clusters[index].headerHeight)));
    setAttribute(cluster, "margin", "10");
    clusters[index] = cluster;
    return cluster;
  };
  for (size_t i = 0; i < clusters.size(); ++i) clusterGraph(int(i));
  return clusters;
}

}  // namespace

LayoutResult layoutGraph(const LayoutGraph& input, const LayoutOptions& options, const LayoutMonitor& monitor) {
  std::lock_guard lock(graphvizMutex());
  checkCancel(monitor, 0.0, "Preparing layout");
  agseterr(AGERR);  // warnings (e.g. about cluster edges) would only clutter stderr

  GraphvizSession session;
  session.graph = agopen(mutableText("kiln"), Agdirected, nullptr);
  Agraph_t* graph = session.graph;
  setGraphAttributes(graph, input, options);
  agattr(graph, AGNODE, mutableText("shape"), mutableText("box"));
  agattr(graph, AGNODE, mutableText("fixedsize"), mutableText("true"));
  agattr(graph, AGNODE, mutableText("label"), mutableText(""));
  agattr(graph, AGNODE, mutableText("width"), mutableText("1"));
  agattr(graph, AGNODE, mutableText("height"), mutableText("1"));
  Agsym_t* widthSymbol = agattr(graph, AGNODE, mutableText("width"), nullptr);
  Agsym_t* heightSymbol = agattr(graph, AGNODE, mutableText("height"), nullptr);

  std::vector<Agraph_t*> clusters = addClusters(graph, input);
  std::vector<Agnode_t*> nodes(input.nodes.size());
  for (size_t i = 0; i < input.nodes.size(); ++i) {
    const auto& node = input.nodes[i];
    std::string name = "n" + std::to_string(i);
    nodes[i] = agnode(graph, mutableText(name.c_str()), 1);
    agxset(nodes[i], widthSymbol, mutableText(number(node.size.width() / kPointsPerInch).c_str()));
    agxset(nodes[i], heightSymbol, mutableText(number(node.size.height() / kPointsPerInch).c_str()));
    if (node.cluster >= 0 && node.cluster < int(clusters.size())) agsubnode(clusters[node.cluster], nodes[i], 1);
  }
  std::vector<Agedge_t*> edges(input.edges.size(), nullptr);
  for (size_t i = 0; i < input.edges.size(); ++i) {
    const auto& edge = input.edges[i];
    // Parallel edges get distinct names so each keeps its own route.
    std::string name = "e" + std::to_string(i);
    edges[i] = agedge(graph, nodes[edge.from], nodes[edge.to], mutableText(name.c_str()), 1);
  }

  checkCancel(monitor, 0.1, "Running dot");
  if (gvLayout(session.context, graph, "dot") != 0)
    throw Error(ErrorCode::kInternal, "Graphviz could not lay out the graph (" + std::to_string(input.nodes.size()) +
                                          " nodes); try collapsing groups");
  session.laidOut = true;
  checkCancel(monitor, 0.9, "Reading layout");

  LayoutResult result;
  result.method = int(input.nodes.size()) > options.largeGraphNodes ? "dot (bounded iterations)" : "dot";
  const boxf box = GD_bb(graph);
  const double top = box.UR.y;
  auto toScene = [top](pointf p) { return QPointF(p.x, top - p.y); };
  result.bounds = QRectF(QPointF(box.LL.x, 0), QPointF(box.UR.x, box.UR.y - box.LL.y));
  result.nodeCenters.reserve(nodes.size());
  for (Agnode_t* node : nodes) result.nodeCenters.push_back(toScene(ND_coord(node)));
  result.edges.resize(edges.size());
  for (size_t i = 0; i < edges.size(); ++i) {
    const splines* spline = ED_spl(edges[i]);
    if (!spline || spline->size == 0) continue;
    const bezier& curve = spline->list[0];
    EdgeRoute& route = result.edges[i];
    for (int k = 0; k < curve.size; ++k) route.bezier.push_back(toScene(curve.list[k]));
    route.arrowTip = curve.eflag ? toScene(curve.ep) : route.bezier.back();
  }
  result.clusterRects.reserve(clusters.size());
  for (Agraph_t* cluster : clusters) {
    const boxf b = GD_bb(cluster);
    result.clusterRects.push_back(QRectF(toScene(pointf{b.LL.x, b.UR.y}), toScene(pointf{b.UR.x, b.LL.y})));
  }
  checkCancel(monitor, 1.0, "Layout done");
  return result;
}

}  // namespace kiln::views
