#include "pass_test_util.h"

#include "passes/graph_utils.h"

using namespace kiln;
using namespace kiln::test;

namespace {

// Removes every Identity whose output is not a graph output and notes it (a stand-in pass).
class DropInnerIdentities final : public Pass {
 public:
  std::string name() const override { return "DropInnerIdentities"; }

 private:
  void apply(Network& network, PassContext& context) override {
    passes::GraphIndex index(network);
    std::set<size_t> dropped;
    for (size_t i = 0; i < network.layers().size(); ++i) {
      const Layer& l = network.layers()[i];
      if (l.opType != "Identity" || index.isGraphOutput(l.outputs[0])) continue;
      passes::replaceAllUses(network, l.outputs[0], l.inputs[0]);
      context.note("dropped '" + l.name + "'");
      dropped.insert(i);
    }
    passes::eraseLayers(network, dropped);
  }
};

ModelBuilder identityChain() {
  ModelBuilder mb;
  mb.input("x", onnx::TensorProto::FLOAT, {2, 3});
  mb.node("Identity", {"x"}, {"a"}, "first");
  mb.node("Identity", {"a"}, {"b"}, "second");
  mb.node("Identity", {"b"}, {"y"}, "last");
  mb.output("y");
  return mb;
}

std::vector<std::string> passNames(int level) {
  auto run = optimize(identityChain(), PassManager::standard(level));
  std::vector<std::string> names;
  for (const auto& r : run.records) names.push_back(r.name);
  return names;
}

}  // namespace

TEST(PassManager, RecordsCountsChangesAndTime) {
  auto net = importModel(identityChain());
  PassContext context;
  context.note("left over from an earlier pass");
  PassRecord record = DropInnerIdentities().run(*net, context);
  EXPECT_EQ(record.name, "DropInnerIdentities");
  EXPECT_EQ(record.layersBefore, 3);
  EXPECT_EQ(record.layersAfter, 1);
  EXPECT_EQ(record.changes, (std::vector<std::string>{"dropped 'first'", "dropped 'second'"}));
  EXPECT_GE(record.milliseconds, 0.0);
  EXPECT_TRUE(context.changes.empty());
}

TEST(PassManager, FillsMissingOriginsAndReinfersShapes) {
  auto net = importModel(identityChain());
  net->layers()[0].origins.clear();
  net->tensor("y").shape = Shape();  // stale: the manager must re-infer it
  PassManager manager;
  manager.add(std::make_unique<DropInnerIdentities>());
  PassContext context;
  auto records = manager.run(*net, context);
  ASSERT_EQ(records.size(), 1u);
  ASSERT_EQ(net->layers().size(), 1u);
  EXPECT_EQ(net->layers()[0].inputs[0], "x");
  EXPECT_EQ(net->tensor("y").shape.toString(), "[2,3]");
  EXPECT_EQ(net->findTensor("a"), nullptr);  // unused tensors are dropped
  auto fresh = importModel(identityChain());
  fresh->layers()[1].origins.clear();
  PassManager().run(*fresh, context);
  EXPECT_EQ(fresh->layers()[1].origins, std::vector<std::string>{"second"});
}

TEST(PassManager, StandardPipelinesGrowWithTheLevel) {
  EXPECT_TRUE(passNames(0).empty());
  EXPECT_EQ(passNames(1), (std::vector<std::string>{"FoldConstants", "RemoveNoops", "EliminateDeadCode"}));
  auto level2 = passNames(2);
  for (const char* name : {"FoldBatchNorm", "FuseConvEpilogue", "FuseMatMulEpilogue"})
    EXPECT_NE(std::find(level2.begin(), level2.end(), name), level2.end()) << name;
  EXPECT_EQ(std::find(level2.begin(), level2.end(), "FusePointwise"), level2.end());
  auto level3 = passNames(3);
  for (const char* name : {"RecognizeLayerNorm", "RecognizeGelu", "FuseAttention", "FusePointwise"})
    EXPECT_NE(std::find(level3.begin(), level3.end(), name), level3.end()) << name;
  EXPECT_EQ(passNames(5), level3);
}

TEST(PassManager, StandardPipelineKeepsAGraphOutputName) {
  auto run = optimize(identityChain(), PassManager::standard(3));
  ASSERT_EQ(run.optimized->layers().size(), 1u);  // y must stay the name of the output
  EXPECT_EQ(run.optimized->outputs(), std::vector<std::string>{"y"});
  expectSameOutputs(run);
}
