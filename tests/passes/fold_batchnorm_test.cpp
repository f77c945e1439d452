#include "pass_test_util.h"

using namespace kiln;
using namespace kiln::test;

namespace {

constexpr auto F = onnx::TensorProto::FLOAT;

void addBatchNorm(ModelBuilder& mb, const std::string& input, int64_t channels, const std::string& output) {
  mb.initializer("scale", randomFloats({channels}, 21, 0.5f, 1.5f));
  mb.initializer("shift", randomFloats({channels}, 22));
  mb.initializer("mean", randomFloats({channels}, 23));
  mb.initializer("var", randomFloats({channels}, 24, 0.5f, 2.0f));
  auto& bn = mb.node("BatchNormalization", {input, "scale", "shift", "mean", "var"}, {output}, "bn");
  ModelBuilder::setFloat(bn, "epsilon", 1e-3f);
}

}  // namespace

TEST(FoldBatchNorm, IntoConvWithAndWithoutBias) {
  for (bool bias : {false, true}) {
    ModelBuilder mb;
    mb.input("x", F, {2, 3, 5, 5});
    mb.initializer("w", randomFloats({6, 3, 3, 3}, 1));
    mb.initializer("b", randomFloats({6}, 2));
    std::vector<std::string> in{"x", "w"};
    if (bias) in.push_back("b");
    mb.node("Conv", in, {"conv"}, "c1");
    addBatchNorm(mb, "conv", 6, "y");
    mb.output("y");
    auto run = optimize(mb, createFoldBatchNormPass());
    EXPECT_EQ(opCounts(*run.optimized), (std::map<std::string, int>{{"Conv", 1}}));
    const Layer& conv = onlyLayer(*run.optimized, "Conv");
    EXPECT_TRUE(hasOrigins(conv, {"c1", "bn"}));
    EXPECT_EQ(conv.outputs, std::vector<std::string>{"y"});
    EXPECT_EQ(run.records[0].changes.size(), 1u);
    expectSameOutputs(run);
  }
}

TEST(FoldBatchNorm, IntoGroupedConvTranspose) {
  ModelBuilder mb;
  mb.input("x", F, {1, 4, 4, 4});
  mb.initializer("w", randomFloats({4, 3, 2, 2}, 5));  // group 2: 6 output channels
  auto& deconv = mb.node("ConvTranspose", {"x", "w"}, {"conv"}, "dc");
  ModelBuilder::setInt(deconv, "group", 2);
  addBatchNorm(mb, "conv", 6, "y");
  mb.output("y");
  auto run = optimize(mb, createFoldBatchNormPass());
  EXPECT_EQ(opCounts(*run.optimized), (std::map<std::string, int>{{"ConvTranspose", 1}}));
  expectSameOutputs(run);
}

TEST(FoldBatchNorm, IntoGemmWithTransposedWeightsAndBeta) {
  ModelBuilder mb;
  mb.input("x", F, {3, 5});
  mb.initializer("w", randomFloats({4, 5}, 7));
  mb.initializer("c", randomFloats({4}, 8));
  auto& gemm = mb.node("Gemm", {"x", "w", "c"}, {"g"}, "gemm");
  ModelBuilder::setInt(gemm, "transB", 1);
  ModelBuilder::setFloat(gemm, "alpha", 0.7f);
  ModelBuilder::setFloat(gemm, "beta", 1.3f);
  addBatchNorm(mb, "g", 4, "y");
  mb.output("y");
  auto run = optimize(mb, createFoldBatchNormPass());
  EXPECT_EQ(opCounts(*run.optimized), (std::map<std::string, int>{{"Gemm", 1}}));
  expectSameOutputs(run);
}

TEST(FoldBatchNorm, GuardsKeepTheBatchNorm) {
  // The convolution's output is also a graph output: folding would change it.
  ModelBuilder mb;
  mb.input("x", F, {1, 3, 4, 4});
  mb.initializer("w", randomFloats({2, 3, 1, 1}, 1));
  mb.node("Conv", {"x", "w"}, {"conv"}, "c1");
  addBatchNorm(mb, "conv", 2, "y");
  mb.output("y");
  mb.output("conv");
  auto run = optimize(mb, createFoldBatchNormPass());
  EXPECT_EQ(opCounts(*run.optimized), (std::map<std::string, int>{{"BatchNormalization", 1}, {"Conv", 1}}));

  // Weights fed at run time are not constants.
  ModelBuilder dynamic;
  dynamic.input("x", F, {1, 3, 4, 4});
  dynamic.input("w", F, {2, 3, 1, 1});
  dynamic.node("Conv", {"x", "w"}, {"conv"}, "c1");
  addBatchNorm(dynamic, "conv", 2, "y");
  dynamic.output("y");
  auto run2 = optimize(dynamic, createFoldBatchNormPass());
  EXPECT_EQ(countOf(*run2.optimized, "BatchNormalization"), 1);
}
