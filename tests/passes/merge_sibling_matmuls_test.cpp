#include "pass_test_util.h"

using namespace kiln;
using namespace kiln::test;

namespace {

constexpr auto F = onnx::TensorProto::FLOAT;

// x [2, 5, 16] read by three projections (Q, K, V of a transformer: two with a bias, one without,
// of different widths) and by a fourth one that ends in a Relu.
ModelBuilder projections() {
  ModelBuilder mb;
  mb.input("x", F, {2, 5, 16});
  const std::vector<std::pair<std::string, int64_t>> heads = {{"q", 8}, {"k", 12}, {"v", 8}, {"act", 6}};
  uint32_t seed = 10;
  for (const auto& [name, width] : heads) {
    mb.initializer(name + "_w", randomFloats({16, width}, seed++));
    mb.node("MatMul", {"x", name + "_w"}, {name + "_mm"}, name + "_proj");
    std::string out = name + "_mm";
    if (name != "v") {
      mb.initializer(name + "_b", randomFloats({width}, seed++));
      mb.node("Add", {out, name + "_b"}, {name + "_biased"}, name + "_bias");
      out = name + "_biased";
    }
    if (name == "act") {
      mb.node("Relu", {out}, {"act_relu"}, "act_relu");
      out = "act_relu";
    }
    mb.node("Identity", {out}, {name}, name + "_out");
    mb.output(name);
  }
  return mb;
}

PassManager epilogueThenMerge() {
  PassManager manager;
  manager.add(createFuseMatMulEpiloguePass());
  manager.add(createMergeSiblingMatMulsPass());
  return manager;
}

}  // namespace

TEST(MergeSiblingMatMuls, ProjectionsOfOneActivationBecomeOneProductAndASplit) {
  auto run = optimize(projections(), epilogueThenMerge());
  EXPECT_EQ(opCounts(*run.optimized),
            (std::map<std::string, int>{{"kiln.FusedMatMul", 2}, {"Split", 1}, {"Identity", 4}}));
  const Layer& split = onlyLayer(*run.optimized, "Split");
  EXPECT_EQ(split.outputs, (std::vector<std::string>{"q_biased", "k_biased", "v_mm"}));
  const Tensor* sizes = run.optimized->findTensor(split.inputs[1]);
  ASSERT_TRUE(sizes && sizes->isConstant());
  EXPECT_EQ(sizes->constant->toDoubleVector(), (std::vector<double>{8, 12, 8}));
  EXPECT_TRUE(hasOrigins(split, {"q_proj", "q_bias", "k_proj", "k_bias", "v_proj"}));
  expectSameOutputs(run);
}

TEST(MergeSiblingMatMuls, ALoneProjectionStays) {
  ModelBuilder mb;
  mb.input("x", F, {3, 16});
  mb.initializer("w", randomFloats({16, 4}, 1));
  mb.initializer("w2", randomFloats({4, 4}, 2));
  mb.node("MatMul", {"x", "w"}, {"h"}, "first");
  mb.node("MatMul", {"h", "w2"}, {"y"}, "second");  // reads another activation: no sibling
  mb.output("y");
  auto run = optimize(mb, epilogueThenMerge());
  EXPECT_EQ(countOf(*run.optimized, "Split"), 0);
  EXPECT_EQ(countOf(*run.optimized, "MatMul"), 2);
}
