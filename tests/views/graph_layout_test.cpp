// Graph layout of a small and a large model: finite positions, no overlapping boxes within a rank,
// a route for every edge from its source box to its target box; cancelling keeps the scene
// consistent.
#include "sample_networks.h"

#include <graph/edge_item.h>
#include <graph/graph_scene.h>
#include <graph/node_item.h>

#include <QSignalSpy>
#include <QtTest>

#include <cmath>
#include <map>

using namespace kiln::views;

namespace {

constexpr int kLayoutTimeoutMs = 120'000;

kiln::test::SampleNetworkOptions largeModel() {
  // 4 + 7 × 4 × 178 + 2 × 3 + 15 = 5,009 layers.
  return {.stages = 4, .blocksPerStage = 178, .channels = 4, .withHead = true};
}

constexpr double kArrowReach = 12;  // an arrow head's length, and some

QRectF boxOf(const NodeItem* item) {
  const QSizeF size = item->size();
  return QRectF(item->pos() - QPointF(size.width() / 2, size.height() / 2), size);
}

void checkLayout(const GraphScene& scene) {
  const auto& items = scene.nodeItems();
  QCOMPARE(items.size(), scene.visibleGraph().items.size());
  // Boxes in one rank share their centre's y; none may overlap another of its rank.
  std::map<long, std::vector<QRectF>> ranks;
  for (const NodeItem* item : items) {
    const QPointF p = item->pos();
    QVERIFY2(std::isfinite(p.x()) && std::isfinite(p.y()), "node position is not finite");
    ranks[std::lround(p.y())].push_back(boxOf(item));
  }
  for (auto& [y, boxes] : ranks) {
    std::sort(boxes.begin(), boxes.end(), [](const QRectF& a, const QRectF& b) { return a.left() < b.left(); });
    for (size_t i = 1; i < boxes.size(); ++i)
      QVERIFY2(boxes[i].left() >= boxes[i - 1].right() - 0.5,
               qPrintable(QStringLiteral("boxes overlap in the rank at y=%1").arg(y)));
  }
  QCOMPARE(scene.edgeItems().size(), scene.visibleGraph().edges.size());
  for (size_t e = 0; e < scene.edgeItems().size(); ++e) {
    const QPainterPath& path = scene.edgeItems()[e]->path();
    QVERIFY2(!path.isEmpty(), "an edge has no route");
    const auto& edge = scene.visibleGraph().edges[e];
    QVERIFY2(boxOf(items[size_t(edge.from)]).adjusted(-1.5, -1.5, 1.5, 1.5).contains(path.elementAt(0)),
             "an edge does not start at its source");
    QVERIFY2(boxOf(items[size_t(edge.to)]).adjusted(-kArrowReach, -kArrowReach, kArrowReach, kArrowReach)
                 .contains(path.currentPosition()),
             "an edge does not end at its target");
  }
}

bool layOut(GraphScene& scene, std::shared_ptr<const kiln::Network> network) {
  QSignalSpy finished(&scene, &GraphScene::layoutFinished);
  scene.setNetwork(std::move(network));
  return finished.wait(kLayoutTimeoutMs);
}

}  // namespace

class GraphLayoutTest : public QObject {
  Q_OBJECT
 private slots:
  void smallModel() {
    GraphScene scene;
    auto network = kiln::test::sampleNetwork();
    QVERIFY(layOut(scene, network));
    checkLayout(scene);
    // Everything fits: no group starts collapsed except the If's two bodies.
    QCOMPARE(int(scene.nodeItems().size()), int(network->layers().size()) + 2 /*input, output*/ + 2 /*bodies*/);
    QVERIFY(!scene.clusterItems().empty());
    for (const ClusterItem* cluster : scene.clusterItems()) {
      QVERIFY(cluster->boundingRect().isValid());
      // A frame encloses the boxes of its group.
      for (const NodeItem* item : scene.nodeItems())
        if (!item->isGroup() && scene.structure().isInGroup(item->index(), cluster->group()))
          QVERIFY(cluster->boundingRect().adjusted(-1, -1, 1, 1).contains(item->sceneBoundingRect().adjusted(2, 2, -2, -2)));
    }
  }

  void largeModel() {
    GraphScene scene;
    auto network = kiln::test::sampleNetwork(::largeModel());
    QVERIFY(network->layers().size() >= 5000);
    // It opens with its residual blocks collapsed...
    QVERIFY(layOut(scene, network));
    checkLayout(scene);
    const size_t opened = scene.nodeItems().size();
    QVERIFY(opened > 700 && opened < 1000);

    // ...a cancelled expansion keeps that layout...
    QSignalSpy cancelled(&scene, &GraphScene::layoutCancelled);
    QSignalSpy finished(&scene, &GraphScene::layoutFinished);
    scene.setAllGroupsCollapsed(false);
    QVERIFY(scene.isLayoutRunning());
    scene.cancelLayout();
    QCOMPARE(cancelled.count(), 1);
    QVERIFY(!scene.isLayoutRunning());
    QCOMPARE(scene.nodeItems().size(), opened);

    // ...and the full expansion lays out all 5,000 layers.
    scene.setAllGroupsCollapsed(false);
    QVERIFY(finished.wait(kLayoutTimeoutMs));
    QCOMPARE(cancelled.count(), 1);
    checkLayout(scene);
    QCOMPARE(scene.nodeItems().size(), scene.structure().nodes().size());
  }
};

QTEST_MAIN(GraphLayoutTest)
#include "graph_layout_test.moc"
