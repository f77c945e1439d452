#include "pass_test_util.h"

using namespace kiln;
using namespace kiln::test;

namespace {
constexpr auto F = onnx::TensorProto::FLOAT;
}

TEST(FoldConstants, ShapeSubgraphCollapsesIntoAConstant) {
  // y = Reshape(x, Concat(Gather(Shape(x), 0), [-1])): the exporters' flatten.
  ModelBuilder mb;
  mb.input("x", F, {2, 3, 4});
  mb.initializer("zero", HostTensor::scalar<int64_t>(0));
  setInts(mb, "rest", {-1});
  mb.node("Shape", {"x"}, {"shape"}, "shape");
  mb.node("Gather", {"shape", "zero"}, {"batch"}, "gather");
  mb.node("Unsqueeze", {"batch", "zero_axes"}, {"batch1"}, "unsq");
  setInts(mb, "zero_axes", {0});
  mb.node("Concat", {"batch1", "rest"}, {"target"}, "concat");
  ModelBuilder::setInt(*mb.model().mutable_graph()->mutable_node(3), "axis", 0);
  mb.node("Reshape", {"x", "target"}, {"y"}, "reshape");
  mb.output("y");
  auto run = optimize(mb, createFoldConstantsPass());
  EXPECT_EQ(opCounts(*run.optimized), (std::map<std::string, int>{{"Reshape", 1}}));
  const HostTensor* target = run.optimized->tensor("target").constant ? &*run.optimized->tensor("target").constant : nullptr;
  ASSERT_NE(target, nullptr);
  EXPECT_EQ(target->toInt64Vector(), (std::vector<int64_t>{2, -1}));
  EXPECT_EQ(run.records[0].changes.size(), 4u);
  expectSameOutputs(run);
}

TEST(FoldConstants, ArithmeticOnWeightsFoldsAndRespectsTheSizeLimit) {
  ModelBuilder mb;
  mb.input("x", F, {64, 64});
  mb.initializer("w", randomFloats({64, 64}, 1));
  setScalar(mb, "s", 0.5f);
  mb.node("Mul", {"w", "s"}, {"ws"}, "scale_w");
  mb.node("Add", {"x", "ws"}, {"y"}, "add");
  mb.output("y");
  auto folded = optimize(mb, createFoldConstantsPass());
  EXPECT_EQ(opCounts(*folded.optimized), (std::map<std::string, int>{{"Add", 1}}));
  expectSameOutputs(folded);
  auto limited = optimize(mb, createFoldConstantsPass(1024));  // 16 KiB result > 1 KiB
  EXPECT_EQ(opCounts(*limited.optimized), (std::map<std::string, int>{{"Add", 1}, {"Mul", 1}}));
}

TEST(FoldConstants, RandomOpsAndRuntimeInputsAreNotFolded) {
  ModelBuilder mb;
  mb.input("x", F, {2, 2});
  auto& random = mb.node("RandomUniform", {}, {"r"}, "rand");
  ModelBuilder::setInts(random, "shape", {2, 2});
  mb.node("Add", {"x", "r"}, {"y"}, "add");
  mb.output("y");
  auto run = optimize(mb, createFoldConstantsPass());
  EXPECT_EQ(opCounts(*run.optimized), (std::map<std::string, int>{{"Add", 1}, {"RandomUniform", 1}}));
}

TEST(EliminateDeadCode, RemovesUnusedChainsOnly) {
  ModelBuilder mb;
  mb.input("x", F, {3});
  mb.node("Identity", {"x"}, {"y"}, "kept");
  mb.node("Identity", {"x"}, {"unused1"}, "dead1");
  mb.node("Identity", {"unused1"}, {"unused2"}, "dead2");
  mb.output("y");
  auto run = optimize(mb, createEliminateDeadCodePass());
  ASSERT_EQ(run.optimized->layers().size(), 1u);
  EXPECT_EQ(run.optimized->layers()[0].name, "kept");
  EXPECT_EQ(run.records[0].changes.size(), 2u);
  EXPECT_EQ(run.optimized->findTensor("unused1"), nullptr);
  expectSameOutputs(run);
}
