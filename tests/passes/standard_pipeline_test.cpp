// The standard pipelines on small whole blocks: every pass works on what the previous left.
#include "pass_test_util.h"

#include <cmath>

using namespace kiln;
using namespace kiln::test;

namespace {

constexpr auto F = onnx::TensorProto::FLOAT;

// A pre-norm transformer block as exporters write it (LayerNorm and GELU decomposed), one head.
ModelBuilder transformerBlock() {
  ModelBuilder mb(17);
  mb.input("x", F, {2, 5, 16});
  setScalar(mb, "eps", 1e-5f);
  setScalar(mb, "two", 2.0f);
  setScalar(mb, "one", 1.0f);
  setScalar(mb, "half", 0.5f);
  setScalar(mb, "sqrt2", 1.4142135f);
  setScalar(mb, "sqrt_d", 4.0f);
  mb.initializer("gamma", randomFloats({16}, 1));
  mb.initializer("beta", randomFloats({16}, 2));
  uint32_t seed = 10;
  for (const char* w : {"wq", "wk", "wv", "wo"}) mb.initializer(w, randomFloats({16, 16}, seed++, -0.3f, 0.3f));
  mb.initializer("bo", randomFloats({16}, seed++));
  mb.initializer("w1", randomFloats({16, 32}, seed++, -0.3f, 0.3f));
  mb.initializer("b1", randomFloats({32}, seed++));
  mb.initializer("w2", randomFloats({32, 16}, seed++, -0.3f, 0.3f));
  mb.initializer("b2", randomFloats({16}, seed++));

  ModelBuilder::setInts(mb.node("ReduceMean", {"x"}, {"mean"}, "ln_mean"), "axes", {-1});
  mb.node("Sub", {"x", "mean"}, {"d"}, "ln_sub");
  mb.node("Pow", {"d", "two"}, {"sq"}, "ln_pow");
  ModelBuilder::setInts(mb.node("ReduceMean", {"sq"}, {"var"}, "ln_var"), "axes", {-1});
  mb.node("Add", {"var", "eps"}, {"ve"}, "ln_eps");
  mb.node("Sqrt", {"ve"}, {"std"}, "ln_sqrt");
  mb.node("Div", {"d", "std"}, {"n"}, "ln_div");
  mb.node("Mul", {"n", "gamma"}, {"g"}, "ln_gamma");
  mb.node("Add", {"g", "beta"}, {"ln"}, "ln_beta");

  mb.node("MatMul", {"ln", "wq"}, {"q"}, "q");
  mb.node("MatMul", {"ln", "wk"}, {"k"}, "k");
  mb.node("MatMul", {"ln", "wv"}, {"v"}, "v");
  ModelBuilder::setInts(mb.node("Transpose", {"k"}, {"kt"}, "kt"), "perm", {0, 2, 1});
  mb.node("MatMul", {"q", "kt"}, {"s"}, "qk");
  mb.node("Div", {"s", "sqrt_d"}, {"ss"}, "scale");
  ModelBuilder::setInt(mb.node("Softmax", {"ss"}, {"p"}, "softmax"), "axis", -1);
  mb.node("MatMul", {"p", "v"}, {"attn"}, "pv");
  mb.node("MatMul", {"attn", "wo"}, {"o"}, "o");
  mb.node("Add", {"o", "bo"}, {"ob"}, "o_bias");
  mb.node("Add", {"x", "ob"}, {"h"}, "res1");

  mb.node("MatMul", {"h", "w1"}, {"f1"}, "ffn1");
  mb.node("Add", {"f1", "b1"}, {"f1b"}, "ffn1_bias");
  mb.node("Div", {"f1b", "sqrt2"}, {"gs"}, "gelu_div");
  mb.node("Erf", {"gs"}, {"ge"}, "gelu_erf");
  mb.node("Add", {"ge", "one"}, {"ga"}, "gelu_add");
  mb.node("Mul", {"f1b", "ga"}, {"gm"}, "gelu_mul");
  mb.node("Mul", {"gm", "half"}, {"gelu"}, "gelu_half");
  mb.node("MatMul", {"gelu", "w2"}, {"f2"}, "ffn2");
  mb.node("Add", {"f2", "b2"}, {"f2b"}, "ffn2_bias");
  mb.node("Add", {"f2b", "h"}, {"y"}, "res2");
  mb.output("y");
  return mb;
}

// Conv -> BN -> Relu -> Conv -> BN -> + input -> Relu: a ResNet basic block.
ModelBuilder resnetBlock() {
  ModelBuilder mb;
  mb.input("x", F, {1, 4, 6, 6});
  for (int i = 1; i <= 2; ++i) {
    std::string s = std::to_string(i);
    mb.initializer("w" + s, randomFloats({4, 4, 3, 3}, 30 + i, -0.3f, 0.3f));
    mb.initializer("scale" + s, randomFloats({4}, 40 + i, 0.5f, 1.5f));
    mb.initializer("shift" + s, randomFloats({4}, 50 + i));
    mb.initializer("mean" + s, randomFloats({4}, 60 + i));
    mb.initializer("var" + s, randomFloats({4}, 70 + i, 0.5f, 2.0f));
  }
  auto conv = [&](const std::string& in, const std::string& s) {
    ModelBuilder::setInts(mb.node("Conv", {in, "w" + s}, {"c" + s}, "conv" + s), "pads", {1, 1, 1, 1});
    mb.node("BatchNormalization", {"c" + s, "scale" + s, "shift" + s, "mean" + s, "var" + s}, {"bn" + s}, "bn" + s);
  };
  conv("x", "1");
  mb.node("Relu", {"bn1"}, {"r1"}, "relu1");
  conv("r1", "2");
  mb.node("Add", {"bn2", "x"}, {"sum"}, "add");
  mb.node("Relu", {"sum"}, {"y"}, "relu2");
  mb.output("y");
  return mb;
}

}  // namespace

TEST(StandardPipeline, TransformerBlockAtLevel3) {
  auto run = optimize(transformerBlock(), PassManager::standard(3));
  // Q, K and V's projections of one activation: one wide product and a Split.
  EXPECT_EQ(opCounts(*run.optimized), (std::map<std::string, int>{{"LayerNormalization", 1},
                                                                  {"Split", 1},
                                                                  {"kiln.Attention", 1},
                                                                  {"kiln.FusedMatMul", 4}}));
  expectSameOutputs(run);
}

TEST(StandardPipeline, ResNetBlockAtLevel2) {
  auto run = optimize(resnetBlock(), PassManager::standard(2));
  EXPECT_EQ(opCounts(*run.optimized), (std::map<std::string, int>{{"kiln.FusedConv", 2}}));
  for (const Layer& l : run.optimized->layers()) EXPECT_EQ(l.origins.size(), l.outputs[0] == "y" ? 4u : 3u);
  expectSameOutputs(run);
}

TEST(StandardPipeline, LevelZeroLeavesTheNetworkAlone) {
  auto run = optimize(resnetBlock(), PassManager::standard(0));
  EXPECT_EQ(opCounts(*run.optimized), opCounts(*run.original));
  EXPECT_TRUE(run.records.empty());
}
