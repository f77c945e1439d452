#include "pass_test_util.h"

using namespace kiln;
using namespace kiln::test;

namespace {
constexpr auto F = onnx::TensorProto::FLOAT;
}

TEST(RemoveNoops, IdentityDropoutCastTransposeAndSameShapeReshape) {
  ModelBuilder mb;
  mb.input("x", F, {2, 3, 4});
  setInts(mb, "same", {2, 3, 4});
  mb.node("Relu", {"x"}, {"r"}, "relu");
  mb.node("Identity", {"r"}, {"i"}, "id");
  mb.node("Dropout", {"i"}, {"d"}, "drop");
  auto& cast = mb.node("Cast", {"d"}, {"c"}, "cast");
  ModelBuilder::setInt(cast, "to", onnx::TensorProto::FLOAT);
  auto& transpose = mb.node("Transpose", {"c"}, {"t"}, "transpose");
  ModelBuilder::setInts(transpose, "perm", {0, 1, 2});
  mb.node("Reshape", {"t", "same"}, {"y"}, "reshape");
  mb.output("y");
  auto run = optimize(mb, createRemoveNoopsPass());
  EXPECT_EQ(opCounts(*run.optimized), (std::map<std::string, int>{{"Relu", 1}}));
  // The graph output keeps its name: the Relu now writes it.
  EXPECT_EQ(onlyLayer(*run.optimized, "Relu").outputs, std::vector<std::string>{"y"});
  EXPECT_EQ(run.records[0].changes.size(), 5u);
  expectSameOutputs(run);
}

// GPT-2's export concatenates each layer's keys and values onto an empty cache: a Concat of one input.
TEST(RemoveNoops, ConcatOfOneInputGoesAndOfTwoStays) {
  ModelBuilder mb;
  mb.input("x", F, {2, 3});
  ModelBuilder::setInt(mb.node("Concat", {"x"}, {"c"}, "cache"), "axis", 1);
  mb.node("Relu", {"c"}, {"r"}, "relu");
  ModelBuilder::setInt(mb.node("Concat", {"r", "x"}, {"y"}, "joined"), "axis", 1);
  mb.output("y");
  auto run = optimize(mb, createRemoveNoopsPass());
  EXPECT_EQ(opCounts(*run.optimized), (std::map<std::string, int>{{"Concat", 1}, {"Relu", 1}}));
  EXPECT_EQ(onlyLayer(*run.optimized, "Relu").inputs[0], "x");
  expectSameOutputs(run);
}

TEST(RemoveNoops, UnsqueezeSqueezePairCancels) {
  ModelBuilder mb;
  mb.input("x", F, {3, 4});
  setInts(mb, "axes", {0});
  mb.node("Unsqueeze", {"x", "axes"}, {"u"}, "unsq");
  mb.node("Squeeze", {"u", "axes"}, {"s"}, "sq");
  mb.node("Sigmoid", {"s"}, {"y"}, "sig");
  mb.output("y");
  auto run = optimize(mb, PassManager::standard(1));
  EXPECT_EQ(opCounts(*run.optimized), (std::map<std::string, int>{{"Sigmoid", 1}}));
  EXPECT_EQ(onlyLayer(*run.optimized, "Sigmoid").inputs[0], "x");
  expectSameOutputs(run);
}

TEST(RemoveNoops, KeepsLayersThatChangeSomething) {
  ModelBuilder mb;
  mb.input("x", F, {2, 3});
  setInts(mb, "flat", {6});
  auto& transpose = mb.node("Transpose", {"x"}, {"t"}, "transpose");
  ModelBuilder::setInts(transpose, "perm", {1, 0});
  auto& cast = mb.node("Cast", {"t"}, {"c"}, "cast");
  ModelBuilder::setInt(cast, "to", onnx::TensorProto::DOUBLE);
  mb.node("Reshape", {"c", "flat"}, {"y"}, "reshape");
  mb.node("Dropout", {"x"}, {"d", "mask"}, "drop");  // its mask is a graph output
  mb.output("y");
  mb.output("d");
  mb.output("mask");
  auto run = optimize(mb, createRemoveNoopsPass());
  EXPECT_EQ(opCounts(*run.optimized),
            (std::map<std::string, int>{{"Cast", 1}, {"Dropout", 1}, {"Reshape", 1}, {"Transpose", 1}}));
}

TEST(RemoveNoops, IdentityBetweenInputAndOutputStays) {
  ModelBuilder mb;
  mb.input("x", onnx::TensorProto::FLOAT, {2});
  mb.node("Identity", {"x"}, {"y"}, "id");
  mb.output("y");
  auto run = optimize(mb, createRemoveNoopsPass());
  EXPECT_EQ(run.optimized->layers().size(), 1u);  // both names are the model's interface
}
