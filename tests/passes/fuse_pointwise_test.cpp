#include "pass_test_util.h"

using namespace kiln;
using namespace kiln::test;

namespace {
constexpr auto F = onnx::TensorProto::FLOAT;
}

TEST(FusePointwise, ChainBecomesOneLayerWithItsBody) {
  ModelBuilder mb;
  mb.input("x", F, {2, 3});
  mb.input("z", F, {3});
  setScalar(mb, "two", 2.0f);
  mb.node("Add", {"x", "z"}, {"a"}, "add");
  mb.node("Mul", {"a", "two"}, {"m"}, "mul");
  mb.node("Tanh", {"m"}, {"y"}, "tanh");
  mb.output("y");
  auto run = optimize(mb, createFusePointwisePass());
  EXPECT_EQ(opCounts(*run.optimized), (std::map<std::string, int>{{"kiln.Pointwise", 1}}));
  const Layer& fused = onlyLayer(*run.optimized, "kiln.Pointwise");
  EXPECT_TRUE(hasOrigins(fused, {"add", "mul", "tanh"}));
  EXPECT_EQ(fused.inputs, (std::vector<std::string>{"x", "z"}));
  EXPECT_EQ(opCounts(fused.attrGraph("body")), (std::map<std::string, int>{{"Add", 1}, {"Mul", 1}, {"Tanh", 1}}));
  EXPECT_EQ(run.optimized->tensor("y").shape.toString(), "[2,3]");
  expectSameOutputs(run);
}

TEST(FusePointwise, TreesMergeAndSharedIntermediatesSplitGroups) {
  // s = Sigmoid(x) is read twice, so it ends its own group; (x*x) + (x-1) is one tree.
  ModelBuilder mb;
  mb.input("x", F, {4, 5});
  setScalar(mb, "one", 1.0f);
  mb.node("Exp", {"x"}, {"e"}, "exp");
  mb.node("Sigmoid", {"e"}, {"s"}, "sig");
  mb.node("Mul", {"x", "x"}, {"sq"}, "sq");
  mb.node("Sub", {"x", "one"}, {"dec"}, "dec");
  mb.node("Add", {"sq", "dec"}, {"t"}, "sum");
  mb.node("Mul", {"t", "s"}, {"y"}, "out1");
  mb.node("Neg", {"s"}, {"z"}, "out2");
  mb.output("y");
  mb.output("z");
  auto run = optimize(mb, createFusePointwisePass());
  EXPECT_EQ(opCounts(*run.optimized), (std::map<std::string, int>{{"Neg", 1}, {"kiln.Pointwise", 2}}));
  for (const Layer& l : run.optimized->layers())
    if (l.opType == "Pointwise" && l.outputs[0] == "y") EXPECT_TRUE(hasOrigins(l, {"sq", "dec", "sum", "out1"}));
  expectSameOutputs(run);
}

TEST(FusePointwise, GraphOutputIntermediateIsNotSwallowed) {
  ModelBuilder mb;
  mb.input("x", F, {3});
  mb.node("Abs", {"x"}, {"a"}, "abs");
  mb.node("Sqrt", {"a"}, {"y"}, "sqrt");
  mb.output("a");
  mb.output("y");
  auto run = optimize(mb, createFusePointwisePass());
  EXPECT_EQ(opCounts(*run.optimized), (std::map<std::string, int>{{"Abs", 1}, {"Sqrt", 1}}));
}
