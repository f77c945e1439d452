#include "pass_test_util.h"

using namespace kiln;
using namespace kiln::test;

namespace {
constexpr auto F = onnx::TensorProto::FLOAT;
}

TEST(FuseMatMulEpilogue, MatMulBiasGeluResidual) {
  ModelBuilder mb(20);
  mb.input("x", F, {2, 3, 8});
  mb.input("skip", F, {2, 3, 5});
  mb.initializer("w", randomFloats({8, 5}, 1));
  mb.initializer("bias", randomFloats({5}, 2));
  mb.node("MatMul", {"x", "w"}, {"mm"}, "mm");
  mb.node("Add", {"mm", "bias"}, {"biased"}, "bias_add");
  mb.node("Gelu", {"biased"}, {"act"}, "gelu");
  mb.node("Add", {"skip", "act"}, {"y"}, "res");
  mb.output("y");
  auto run = optimize(mb, createFuseMatMulEpiloguePass());
  EXPECT_EQ(opCounts(*run.optimized), (std::map<std::string, int>{{"kiln.FusedMatMul", 1}}));
  const Layer& fused = onlyLayer(*run.optimized, "kiln.FusedMatMul");
  EXPECT_TRUE(hasOrigins(fused, {"mm", "bias_add", "gelu", "res"}));
  EXPECT_EQ(fused.inputs, (std::vector<std::string>{"x", "w", "bias", "skip"}));
  EXPECT_EQ(fused.attrString("activation"), "Gelu");
  EXPECT_EQ(fused.attrInt("residual_before_activation"), 0);
  expectSameOutputs(run);
}

TEST(FuseMatMulEpilogue, GemmWithoutCTakesTheBiasAsC) {
  ModelBuilder mb;
  mb.input("x", F, {4, 6});
  mb.initializer("w", randomFloats({3, 6}, 3));
  mb.initializer("bias", randomFloats({1, 3}, 4));
  auto& gemm = mb.node("Gemm", {"x", "w"}, {"g"}, "gemm");
  ModelBuilder::setInt(gemm, "transB", 1);
  ModelBuilder::setFloat(gemm, "beta", 0.25f);  // must not scale the bias that came from the Add
  mb.node("Add", {"g", "bias"}, {"biased"}, "bias_add");
  mb.node("Tanh", {"biased"}, {"y"}, "tanh");
  mb.output("y");
  auto run = optimize(mb, createFuseMatMulEpiloguePass());
  EXPECT_EQ(opCounts(*run.optimized), (std::map<std::string, int>{{"kiln.FusedMatMul", 1}}));
  EXPECT_EQ(onlyLayer(*run.optimized, "kiln.FusedMatMul").attrString("base"), "Gemm");
  expectSameOutputs(run);
}

TEST(FuseMatMulEpilogue, GemmWithCAndReluResidualBefore) {
  ModelBuilder mb;
  mb.input("x", F, {4, 6});
  mb.input("skip", F, {4, 3});
  mb.initializer("w", randomFloats({6, 3}, 5));
  mb.initializer("c", randomFloats({3}, 6));
  auto& gemm = mb.node("Gemm", {"x", "w", "c"}, {"g"}, "gemm");
  ModelBuilder::setFloat(gemm, "beta", 0.5f);
  mb.node("Add", {"g", "skip"}, {"sum"}, "res");
  mb.node("Relu", {"sum"}, {"y"}, "relu");
  mb.output("y");
  auto run = optimize(mb, createFuseMatMulEpiloguePass());
  EXPECT_EQ(opCounts(*run.optimized), (std::map<std::string, int>{{"kiln.FusedMatMul", 1}}));
  expectSameOutputs(run);
}

TEST(FuseMatMulEpilogue, GuardsBlockFusion) {
  ModelBuilder mb;
  mb.input("x", F, {4, 6});
  mb.initializer("w", randomFloats({6, 3}, 5));
  mb.node("MatMul", {"x", "w"}, {"mm"}, "mm");
  mb.node("Relu", {"mm"}, {"y"}, "relu");
  mb.node("Neg", {"mm"}, {"z"}, "neg");  // second reader of the MatMul's output
  mb.output("y");
  mb.output("z");
  auto run = optimize(mb, createFuseMatMulEpiloguePass());
  EXPECT_EQ(countOf(*run.optimized, "kiln.FusedMatMul"), 0);

  ModelBuilder shapes;  // a residual that broadcasts is not a residual
  shapes.input("x", F, {4, 6});
  shapes.input("row", F, {1, 3});
  shapes.initializer("w", randomFloats({6, 3}, 5));
  shapes.node("MatMul", {"x", "w"}, {"mm"}, "mm");
  shapes.node("Add", {"mm", "row"}, {"y"}, "add");
  shapes.output("y");
  auto run2 = optimize(shapes, createFuseMatMulEpiloguePass());
  EXPECT_EQ(countOf(*run2.optimized, "kiln.FusedMatMul"), 0);
}
