// The nested (block by block) layout on a hand-made graph of residual blocks, nested clusters and
// edges that cross several frames, and on a big flat graph cut into bands: every box placed
// without overlap inside its frames, frames nested or apart, every route attached to its two boxes
// and crossing frames through their top and bottom, identical blocks laid out alike, the same
// input giving the same layout.
#include <graph/graph_layout.h>

#include <kiln/error.h>

#include <QtTest>

#include <cmath>
#include <random>

using namespace kiln::views;

namespace {

constexpr double kTolerance = 1.5;  // scene units a route end may be off its box's border
constexpr double kArrowReach = 12;  // an arrow head's length, and some

QRectF boxOf(const LayoutGraph& graph, const LayoutResult& layout, int node) {
  const QSizeF size = graph.nodes[size_t(node)].size;
  return QRectF(layout.nodeCenters[size_t(node)] - QPointF(size.width() / 2, size.height() / 2), size);
}

// Distance from `p` to the border of `rect` (0 on it, positive inside and outside).
double distanceToBorder(const QRectF& rect, QPointF p) {
  const double dx = std::max({rect.left() - p.x(), 0.0, p.x() - rect.right()});
  const double dy = std::max({rect.top() - p.y(), 0.0, p.y() - rect.bottom()});
  if (dx > 0 || dy > 0) return std::hypot(dx, dy);
  return std::min({p.x() - rect.left(), rect.right() - p.x(), p.y() - rect.top(), rect.bottom() - p.y()});
}

bool isInCluster(const LayoutGraph& graph, int node, int cluster) {
  for (int c = graph.nodes[size_t(node)].cluster; c >= 0; c = graph.clusters[size_t(c)].parent)
    if (c == cluster) return true;
  return false;
}

// Does the route pass through a point on the horizontal line y inside [left, right]?
bool crossesAt(const EdgeRoute& route, double y, double left, double right) {
  for (size_t i = 0; i < route.bezier.size(); i += 3)
    if (std::abs(route.bezier[i].y() - y) < 0.5 && route.bezier[i].x() > left && route.bezier[i].x() < right)
      return true;
  return false;
}

// A stage of residual blocks between an input and an output, with side clusters: the shape of a
// ResNet as Kiln Studio lays it out, plus edges that jump across frames.
struct ResidualModel {
  LayoutGraph graph;
  int input = 0, output = 0;
  std::vector<int> blockClusters;
  std::vector<std::vector<int>> blockNodes;  // in creation order, the same for identical blocks
  int longEntryTarget = 0;                   // a node two frames deep, fed from the input
  int longExitSource = 0;                    // a node two frames deep, feeding the output

  int node(QSizeF size, int cluster) {
    graph.nodes.push_back({size, cluster});
    return int(graph.nodes.size()) - 1;
  }
  int cluster(int parent) {
    graph.clusters.push_back({parent, 20});
    return int(graph.clusters.size()) - 1;
  }
  void edge(int from, int to) { graph.edges.push_back({from, to}); }

  ResidualModel() {
    std::mt19937 random(7);
    std::uniform_real_distribution<double> width(60, 200), height(30, 110);
    auto randomSizes = [&](int count) {
      std::vector<QSizeF> sizes;
      for (int i = 0; i < count; ++i) sizes.emplace_back(std::round(width(random)), std::round(height(random)));
      return sizes;
    };
    const std::vector<QSizeF> plain = randomSizes(6), downsampling = randomSizes(8);
    input = node({120, 38}, -1);
    const int stage = cluster(-1);
    int x = input;
    for (int b = 0; b < 6; ++b) {
      const bool downsample = b == 0 || b == 3;
      const std::vector<QSizeF>& sizes = downsample ? downsampling : plain;
      const int block = cluster(stage);
      std::vector<int> nodes;
      for (int i = 0; i < 6; ++i) nodes.push_back(node(sizes[size_t(i)], block));
      for (int i = 0; i + 1 < 6; ++i) edge(nodes[size_t(i)], nodes[size_t(i + 1)]);
      edge(x, nodes[0]);
      if (downsample) {
        const int shortcut = cluster(block);
        nodes.push_back(node(sizes[6], shortcut));
        nodes.push_back(node(sizes[7], shortcut));
        edge(x, nodes[6]);
        edge(nodes[6], nodes[7]);
        edge(nodes[7], nodes[4]);
      } else {
        edge(x, nodes[4]);  // the skip connection into the Add
      }
      blockClusters.push_back(block);
      blockNodes.push_back(nodes);
      x = nodes[5];
    }
    longEntryTarget = blockNodes[4][2];
    edge(input, longEntryTarget);
    longExitSource = blockNodes[1][3];
    const int side = cluster(-1);
    const int sideNode = node({90, 40}, side);
    edge(x, sideNode);
    output = node({120, 38}, -1);
    edge(sideNode, output);
    edge(x, output);
    edge(longExitSource, output);
  }
};

void checkBoxes(const LayoutGraph& graph, const LayoutResult& layout) {
  QCOMPARE(layout.nodeCenters.size(), graph.nodes.size());
  QCOMPARE(layout.clusterRects.size(), graph.clusters.size());
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const QRectF box = boxOf(graph, layout, int(n));
    QVERIFY2(std::isfinite(box.x()) && std::isfinite(box.y()), "a node has no position");
    QVERIFY2(layout.bounds.adjusted(-0.5, -0.5, 0.5, 0.5).contains(box), "a node lies outside the bounds");
    for (int c = graph.nodes[n].cluster; c >= 0; c = graph.clusters[size_t(c)].parent)
      QVERIFY2(layout.clusterRects[size_t(c)].contains(box), qPrintable(QStringLiteral("node %1 outside frame %2").arg(n).arg(c)));
    for (size_t m = n + 1; m < graph.nodes.size(); ++m)
      QVERIFY2(!box.adjusted(0.5, 0.5, -0.5, -0.5).intersects(boxOf(graph, layout, int(m))),
               qPrintable(QStringLiteral("nodes %1 and %2 overlap").arg(n).arg(m)));
  }
  // Frames are nested (a cluster inside its ancestors) or apart.
  for (size_t a = 0; a < graph.clusters.size(); ++a)
    for (size_t b = a + 1; b < graph.clusters.size(); ++b) {
      const QRectF& ra = layout.clusterRects[a];
      const QRectF& rb = layout.clusterRects[b];
      bool bInA = false, aInB = false;
      for (int p = graph.clusters[b].parent; p >= 0; p = graph.clusters[size_t(p)].parent) bInA |= p == int(a);
      for (int p = graph.clusters[a].parent; p >= 0; p = graph.clusters[size_t(p)].parent) aInB |= p == int(b);
      if (bInA) QVERIFY(ra.contains(rb));
      else if (aInB) QVERIFY(rb.contains(ra));
      else QVERIFY2(!ra.intersects(rb), qPrintable(QStringLiteral("frames %1 and %2 overlap").arg(a).arg(b)));
    }
}

void checkRoutes(const LayoutGraph& graph, const LayoutResult& layout) {
  QCOMPARE(layout.edges.size(), graph.edges.size());
  for (size_t e = 0; e < graph.edges.size(); ++e) {
    const EdgeRoute& route = layout.edges[e];
    const auto [from, to] = graph.edges[e];
    QVERIFY2(route.bezier.size() >= 4 && (route.bezier.size() - 1) % 3 == 0, "a route is not a Bézier chain");
    QVERIFY2(distanceToBorder(boxOf(graph, layout, from), route.bezier.front()) < kTolerance,
             qPrintable(QStringLiteral("edge %1 does not start at its source").arg(e)));
    QVERIFY2(distanceToBorder(boxOf(graph, layout, to), route.arrowTip) < kTolerance,
             qPrintable(QStringLiteral("edge %1 does not end at its target").arg(e)));
    const QPointF arrow = route.arrowTip - route.bezier.back();
    QVERIFY(std::hypot(arrow.x(), arrow.y()) < kArrowReach);
    // Crossing into a frame goes through its top, out of a frame through its bottom.
    for (size_t c = 0; c < graph.clusters.size(); ++c) {
      const QRectF& frame = layout.clusterRects[c];
      const bool fromInside = isInCluster(graph, from, int(c)), toInside = isInCluster(graph, to, int(c));
      if (toInside && !fromInside)
        QVERIFY2(crossesAt(route, frame.top(), frame.left(), frame.right()),
                 qPrintable(QStringLiteral("edge %1 does not enter frame %2 at its top").arg(e).arg(c)));
      if (fromInside && !toInside)
        QVERIFY2(crossesAt(route, frame.bottom(), frame.left(), frame.right()),
                 qPrintable(QStringLiteral("edge %1 does not leave frame %2 at its bottom").arg(e).arg(c)));
    }
  }
}

// A node's place within its innermost frame.
QPointF offsetInFrame(const LayoutGraph& graph, const LayoutResult& layout, int node) {
  return layout.nodeCenters[size_t(node)] - layout.clusterRects[size_t(graph.nodes[size_t(node)].cluster)].topLeft();
}

}  // namespace

class NestedLayoutTest : public QObject {
  Q_OBJECT
 private slots:
  void residualBlocks() {
    const ResidualModel model;
    const LayoutResult layout = layoutGraph(model.graph);
    checkBoxes(model.graph, layout);
    checkRoutes(model.graph, layout);
    // Data flows down: the input above the first block, the output below the last.
    QVERIFY(layout.nodeCenters[size_t(model.input)].y() < layout.clusterRects[size_t(model.blockClusters[0])].top());
    QVERIFY(layout.nodeCenters[size_t(model.output)].y() > layout.clusterRects[size_t(model.blockClusters[5])].bottom());
    for (size_t b = 1; b < model.blockClusters.size(); ++b)
      QVERIFY(layout.clusterRects[size_t(model.blockClusters[b])].top() >
              layout.clusterRects[size_t(model.blockClusters[b - 1])].bottom());
  }

  void identicalBlocksShareTheirLayout() {
    const ResidualModel model;
    const LayoutResult layout = layoutGraph(model.graph);
    // Blocks 2 and 5 (plain) and 0 and 3 (with a shortcut) have the same boxes and connections.
    for (auto [a, b] : {std::pair{2, 5}, std::pair{0, 3}}) {
      QCOMPARE(layout.clusterRects[size_t(model.blockClusters[size_t(a)])].size(),
               layout.clusterRects[size_t(model.blockClusters[size_t(b)])].size());
      for (size_t i = 0; i < model.blockNodes[size_t(a)].size(); ++i)
        QCOMPARE(offsetInFrame(model.graph, layout, model.blockNodes[size_t(a)][i]),
                 offsetInFrame(model.graph, layout, model.blockNodes[size_t(b)][i]));
    }
    // The long edges give blocks 1 and 4 ports of their own: their own layouts.
    QVERIFY(QString::fromStdString(layout.method).contains(QStringLiteral("layouts for 10 blocks")));
  }

  void deterministic() {
    const ResidualModel model;
    const LayoutResult first = layoutGraph(model.graph), second = layoutGraph(model.graph);
    QCOMPARE(first.nodeCenters, second.nodeCenters);
    QCOMPARE(first.clusterRects, second.clusterRects);
    for (size_t e = 0; e < first.edges.size(); ++e) QCOMPARE(first.edges[e].bezier, second.edges[e].bezier);
  }

  void flatGraphWithParallelEdges() {
    LayoutGraph graph;
    for (int i = 0; i < 5; ++i) graph.nodes.push_back({QSizeF(80 + 10 * i, 40), -1});
    graph.edges = {{0, 1}, {0, 1}, {1, 2}, {0, 3}, {3, 4}, {2, 4}};
    const LayoutResult layout = layoutGraph(graph);
    checkBoxes(graph, layout);
    checkRoutes(graph, layout);
    QVERIFY(layout.edges[0].bezier != layout.edges[1].bezier);  // each parallel edge keeps its route
    QCOMPARE(QString::fromStdString(layout.method), QStringLiteral("dot"));
  }

  // A long flat chain with skips is laid out in bands; nothing of them shows but the layout.
  void bigFlatGraphInBands() {
    LayoutGraph graph;
    std::mt19937 random(11);
    std::uniform_real_distribution<double> width(60, 220), height(30, 90);
    for (int i = 0; i < 1200; ++i) {
      graph.nodes.push_back({QSizeF(std::round(width(random)), std::round(height(random))), -1});
      if (i > 0) graph.edges.push_back({i - 1, i});
      if (i % 5 == 4) graph.edges.push_back({i - 4, i});  // a residual skip over three boxes
    }
    const LayoutResult layout = layoutGraph(graph);
    QVERIFY(QString::fromStdString(layout.method).contains(QStringLiteral("bands")));
    checkBoxes(graph, layout);
    checkRoutes(graph, layout);
    QVERIFY(layout.clusterRects.empty());
    // Still one column going down: every edge runs downwards.
    for (const auto& edge : graph.edges)
      QVERIFY(layout.nodeCenters[size_t(edge.to)].y() > layout.nodeCenters[size_t(edge.from)].y());
  }

  // Bands also hold clusters: frames stay nested or apart, routes attached.
  void bandsAroundBlocks() {
    const ResidualModel model;
    LayoutOptions options;
    options.maxBandItems = 3;
    const LayoutResult layout = layoutGraph(model.graph, options);
    QVERIFY(QString::fromStdString(layout.method).contains(QStringLiteral("bands")));
    checkBoxes(model.graph, layout);
    checkRoutes(model.graph, layout);
  }

  void emptyClusterGetsAFrame() {
    LayoutGraph graph;
    graph.nodes = {{QSizeF(80, 40), -1}, {QSizeF(80, 40), 1}};
    graph.clusters = {{-1, 20}, {-1, 20}};
    graph.edges = {{0, 1}};
    const LayoutResult layout = layoutGraph(graph);
    checkBoxes(graph, layout);
    checkRoutes(graph, layout);
    QVERIFY(layout.clusterRects[0].width() > 0 && layout.clusterRects[0].height() > 0);
  }

  void badInputIsRejected() {
    LayoutGraph graph;
    graph.nodes = {{QSizeF(80, 40), -1}};
    graph.edges = {{0, 3}};
    QVERIFY_THROWS_EXCEPTION(kiln::Error, layoutGraph(graph));
    graph.edges.clear();
    graph.clusters = {{1, 20}, {0, 20}};  // each the other's parent
    QVERIFY_THROWS_EXCEPTION(kiln::Error, layoutGraph(graph));
    graph.clusters.clear();
    graph.nodes[0].cluster = 4;
    QVERIFY_THROWS_EXCEPTION(kiln::Error, layoutGraph(graph));
  }

  void monitorCancels() {
    const ResidualModel model;
    int calls = 0;
    try {
      layoutGraph(model.graph, {}, [&calls](double, const char*) { return ++calls < 3; });
      QFAIL("the layout was not cancelled");
    } catch (const kiln::Error& e) {
      QCOMPARE(e.code(), kiln::ErrorCode::kCancelled);
    }
    QCOMPARE(calls, 3);
  }
};

QTEST_MAIN(NestedLayoutTest)
#include "nested_layout_test.moc"
