// Groups, search and collapse/expand, on the structure and in the scene.
#include "sample_networks.h"

#include <graph/graph_scene.h>
#include <graph/graph_structure.h>
#include <graph/node_item.h>

#include <QSignalSpy>
#include <QtTest>

using namespace kiln::views;

namespace {

int findGroup(const GraphStructure& structure, const std::string& path) {
  for (size_t g = 0; g < structure.groups().size(); ++g)
    if (structure.groups()[g].path == path) return int(g);
  return -1;
}

std::string nameOf(const GraphStructure& structure, int node) { return structure.nodes()[size_t(node)].name; }

}  // namespace

class GraphStructureTest : public QObject {
  Q_OBJECT
 private slots:
  void groupsFollowNamePaths() {
    GraphStructure structure(kiln::test::sampleNetwork());
    const int block = findGroup(structure, "/layer1/0");
    QVERIFY(block >= 0);
    QCOMPARE(structure.groups()[size_t(block)].nodeCount, 7);
    QCOMPARE(structure.groups()[size_t(block)].title, std::string("0"));
    const int stage = findGroup(structure, "/layer1");
    QCOMPARE(structure.groups()[size_t(block)].parent, stage);
    // "/layer2/0" has a downsampling shortcut, itself a block.
    QVERIFY(findGroup(structure, "/layer2/0/downsample") >= 0);
    // Single-layer prefixes ("/conv1") make no group.
    QCOMPARE(findGroup(structure, "/conv1"), -1);
  }

  void controlFlowBodiesAreCollapsedGroups() {
    GraphStructure structure(kiln::test::sampleNetwork());
    const int thenBody = findGroup(structure, "/gate/If/then_branch");
    const int elseBody = findGroup(structure, "/gate/If/else_branch");
    QVERIFY(thenBody >= 0 && elseBody >= 0);
    QCOMPARE(structure.groups()[size_t(thenBody)].kind, GroupKind::kSubgraph);
    QCOMPARE(structure.groups()[size_t(thenBody)].nodeCount, 1);
    const auto collapsed = defaultCollapsedGroups(structure, 10'000);
    QVERIFY(collapsed[size_t(thenBody)] && collapsed[size_t(elseBody)]);
    QVERIFY(!collapsed[size_t(findGroup(structure, "/layer1/0"))]);
    // The body reads an outer tensor and feeds its owner.
    const int owner = structure.groups()[size_t(thenBody)].owner;
    QCOMPARE(nameOf(structure, owner), std::string("/gate/If"));
    const int softmax = structure.groups()[size_t(thenBody)].members.at(0);
    bool feedsOwner = false, readsOuter = false;
    for (const GraphEdge& edge : structure.edges()) {
      feedsOwner |= edge.from == softmax && edge.to == owner;
      readsOuter |= edge.to == softmax && nameOf(structure, edge.from) == "/fc/Gemm";
    }
    QVERIFY(feedsOwner && readsOuter);
  }

  void searchFindsNamesOpTypesAndTensors() {
    GraphStructure structure(kiln::test::sampleNetwork());
    auto byName = structure.search("/layer1/0/conv1/Conv");
    QVERIFY(!byName.empty());
    QCOMPARE(nameOf(structure, byName.front()), std::string("/layer1/0/conv1/Conv"));  // exact match first
    // Op types match case-insensitively; consumers of "..._BatchNormalization_output_0" match by tensor.
    auto byOp = structure.search("batchnormalization");
    const auto options = kiln::test::SampleNetworkOptions{};
    const auto isBatchNorm = [&](int n) {
      return structure.nodes()[size_t(n)].layer && structure.nodes()[size_t(n)].layer->opType == "BatchNormalization";
    };
    QCOMPARE(int(std::count_if(byOp.begin(), byOp.end(), isBatchNorm)),
             1 + 2 * options.stages * options.blocksPerStage + (options.stages - 1));
    QVERIFY(isBatchNorm(byOp.front()));
    QVERIFY(!structure.search("Relu").empty());
    auto byTensor = structure.search("/head/Softmax_output_0");
    QVERIFY(std::find_if(byTensor.begin(), byTensor.end(), [&](int n) {
              return nameOf(structure, n) == "/head/context/MatMul";
            }) != byTensor.end());
    QVERIFY(structure.search("no such node").empty());
  }

  void emptySearchListsEveryNodeInGraphOrder() {
    GraphStructure structure(kiln::test::sampleNetwork());
    const std::vector<int> all = structure.search("");
    QCOMPARE(all.size(), structure.nodes().size());
    std::vector<int> position(all.size(), -1);
    for (size_t i = 0; i < all.size(); ++i) position[size_t(all[i])] = int(i);
    QVERIFY(std::find(position.begin(), position.end(), -1) == position.end());  // every node, once
    // Producers come before their consumers. Only edges inside the main graph: a body's result flows
    // back up to its If node, which is listed before the body.
    const kiln::Network* main = structure.network().get();
    int checked = 0;
    for (const GraphEdge& edge : structure.edges()) {
      if (structure.nodes()[size_t(edge.from)].network != main || structure.nodes()[size_t(edge.to)].network != main)
        continue;
      QVERIFY2(position[size_t(edge.from)] < position[size_t(edge.to)], edge.tensor.c_str());
      ++checked;
    }
    QVERIFY(checked > 10);
    QVERIFY(structure.nodes()[size_t(all.front())].kind == NodeKind::kInput);
    QVERIFY(structure.nodes()[size_t(all.back())].kind == NodeKind::kOutput);
  }

  void collapseAndExpandChangeVisibleItems() {
    GraphStructure structure(kiln::test::sampleNetwork());
    std::vector<bool> collapsed(structure.groups().size(), false);
    const size_t expanded = makeVisibleGraph(structure, collapsed).items.size();
    QCOMPARE(expanded, structure.nodes().size());
    const int block = findGroup(structure, "/layer1/0");
    collapsed[size_t(block)] = true;
    VisibleGraph oneCollapsed = makeVisibleGraph(structure, collapsed);
    QCOMPARE(oneCollapsed.items.size(), expanded - 7 + 1);
    // Edges into and out of the block now attach to its box, with no self-loops.
    for (const auto& edge : oneCollapsed.edges) QVERIFY(edge.from != edge.to);
    std::fill(collapsed.begin(), collapsed.end(), true);
    QVERIFY(makeVisibleGraph(structure, collapsed).items.size() < oneCollapsed.items.size());
  }

  void sceneCollapseExpandAndReveal() {
    GraphScene scene;
    QSignalSpy finished(&scene, &GraphScene::layoutFinished);
    scene.setNetwork(kiln::test::sampleNetwork());
    QVERIFY(finished.wait(60'000));
    const size_t expandedItems = scene.nodeItems().size();
    const int block = findGroup(scene.structure(), "/layer1/0");
    scene.setGroupCollapsed(block, true);
    QVERIFY(finished.wait(60'000));
    QCOMPARE(scene.nodeItems().size(), expandedItems - 6);
    QVERIFY(scene.isGroupCollapsed(block));
    // Revealing a hidden node expands its group and selects it.
    const int conv = scene.structure().search("/layer1/0/conv2/Conv").front();
    QSignalSpy focus(&scene, &GraphScene::focusRequested);
    scene.revealNode(conv);
    QVERIFY(finished.wait(60'000));
    QVERIFY(!scene.isGroupCollapsed(block));
    QCOMPARE(scene.nodeItems().size(), expandedItems);
    QCOMPARE(scene.selectedNode(), conv);
    QCOMPARE(focus.count(), 1);
    scene.setAllGroupsCollapsed(true);
    QVERIFY(finished.wait(60'000));
    QVERIFY(scene.nodeItems().size() < 20);
    QVERIFY(scene.clusterItems().empty());
  }
};

QTEST_MAIN(GraphStructureTest)
#include "graph_structure_test.moc"
