#include "pass_test_util.h"

#include "passes/graph_utils.h"

using namespace kiln;
using namespace kiln::test;
using namespace kiln::passes;

namespace {

// x -> a (Identity) -> b, c (two Identities reading a); b is a graph output, c feeds d.
std::shared_ptr<Network> forkedNetwork() {
  ModelBuilder mb;
  mb.input("x", onnx::TensorProto::FLOAT, {4});
  mb.initializer("k", HostTensor::fromVector<float>({1}, {2.5f}));
  mb.node("Identity", {"x"}, {"a"}, "ida");
  mb.node("Identity", {"a"}, {"b"}, "idb");
  mb.node("Identity", {"a"}, {"c"}, "idc");
  mb.node("Identity", {"c"}, {"d"}, "idd");
  mb.output("b");
  mb.output("d");
  return importModel(mb);
}

}  // namespace

TEST(GraphUtils, IndexKnowsProducersConsumersAndOutputs) {
  auto net = forkedNetwork();
  GraphIndex index(*net);
  EXPECT_EQ(index.producer("a"), 0u);
  EXPECT_FALSE(index.producer("x").has_value());
  EXPECT_EQ(index.consumers("a"), (std::vector<size_t>{1, 2}));
  EXPECT_TRUE(index.isGraphOutput("b"));
  EXPECT_FALSE(index.soleConsumer("a").has_value());  // two readers
  EXPECT_EQ(index.soleConsumer("c"), 3u);
  EXPECT_TRUE(index.onlyConsumerIs("c", 3));
  EXPECT_FALSE(index.onlyConsumerIs("b", 3));
  EXPECT_TRUE(index.usedOnlyBy("a", {1, 2}));
  EXPECT_FALSE(index.usedOnlyBy("a", {1}));
  EXPECT_NE(index.producerOfType("a", "Identity"), nullptr);
  EXPECT_EQ(index.producerOfType("a", "Relu"), nullptr);
}

TEST(GraphUtils, ConstantLookup) {
  auto net = forkedNetwork();
  ASSERT_NE(constantValue(*net, "k"), nullptr);
  EXPECT_EQ(constantValue(*net, "x"), nullptr);
  EXPECT_EQ(scalarConstant(*net, "k"), 2.5);
  EXPECT_TRUE(isScalarConstant(*net, "k", 2.5));
  EXPECT_FALSE(isScalarConstant(*net, "k", 2.6));
  EXPECT_FALSE(constantInts(*net, "k").has_value());  // float, not integer
}

TEST(GraphUtils, EditsRewireEraseAndName) {
  auto net = forkedNetwork();
  replaceAllUses(*net, "c", "a");
  EXPECT_EQ(net->layers()[3].inputs[0], "a");
  eraseLayers(*net, {2, 2});
  ASSERT_EQ(net->layers().size(), 3u);
  EXPECT_EQ(net->layers()[2].name, "idd");
  EXPECT_EQ(uniqueTensorName(*net, "fresh"), "fresh");
  EXPECT_EQ(uniqueTensorName(*net, "a"), "a_1");
  net->validate();
}

TEST(GraphUtils, RewriterReplacesGroupsAndMergesOrigins) {
  auto net = forkedNetwork();
  net->layers()[2].origins = {"onnx_c1", "onnx_c2"};
  Rewriter rewriter(*net);
  Layer merged;
  merged.name = "merged";
  merged.opType = "Identity";
  merged.inputs = {"a"};
  merged.outputs = {"d"};
  rewriter.replace({2, 3}, merged);
  EXPECT_TRUE(rewriter.claimed({3}));
  EXPECT_FALSE(rewriter.claimed({0, 1}));
  EXPECT_EQ(rewriter.commit(), 1u);
  ASSERT_EQ(net->layers().size(), 3u);
  EXPECT_EQ(net->layers()[2].name, "merged");
  EXPECT_EQ(net->layers()[2].origins, (std::vector<std::string>{"onnx_c1", "onnx_c2", "idd"}));
  EXPECT_EQ(describeLayers(*net, {0, 2}), "Identity 'ida' + Identity 'merged'");
  net->validate();
}
