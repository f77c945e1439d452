#include "pass_test_util.h"

using namespace kiln;
using namespace kiln::test;

namespace {

constexpr auto F = onnx::TensorProto::FLOAT;

// x [1,3,6,6] -> Conv(4 filters 3x3, pad 1) -> "conv"; weights and bias random.
ModelBuilder convModel(int64_t opset = 17, bool withBias = true) {
  ModelBuilder mb(opset);
  mb.input("x", F, {1, 3, 6, 6});
  mb.input("skip", F, {1, 4, 6, 6});
  mb.initializer("w", randomFloats({4, 3, 3, 3}, 11));
  std::vector<std::string> inputs{"x", "w"};
  if (withBias) {
    mb.initializer("b", randomFloats({4}, 12));
    inputs.push_back("b");
  }
  auto& conv = mb.node("Conv", inputs, {"conv"}, "c1");
  ModelBuilder::setInts(conv, "pads", {1, 1, 1, 1});
  return mb;
}

// Conv -> [activation layers] -> "act"; returns the builder with "y" = act + skip.
void addActivation(ModelBuilder& mb, const std::string& activation) {
  if (activation == "SiLU") {
    mb.node("Sigmoid", {"conv"}, {"sig"}, "sig");
    mb.node("Mul", {"conv", "sig"}, {"act"}, "mul");
  } else if (activation == "Relu6") {
    setScalar(mb, "lo", 0.0f);
    setScalar(mb, "hi", 6.0f);
    mb.node("Clip", {"conv", "lo", "hi"}, {"act"}, "act");
  } else {
    auto& n = mb.node(activation, {"conv"}, {"act"}, "act");
    if (activation == "LeakyRelu") ModelBuilder::setFloat(n, "alpha", 0.2f);
    if (activation == "HardSigmoid") ModelBuilder::setFloat(n, "alpha", 0.3f);
  }
}

}  // namespace

class ConvActivation : public ::testing::TestWithParam<std::string> {};

TEST_P(ConvActivation, FusesWithResidualAfterAndMatches) {
  ModelBuilder mb = convModel(20);
  addActivation(mb, GetParam());
  mb.node("Add", {"act", "skip"}, {"y"}, "res");
  mb.output("y");
  auto run = optimize(mb, createFuseConvEpiloguePass());
  EXPECT_EQ(opCounts(*run.optimized), (std::map<std::string, int>{{"kiln.FusedConv", 1}}));
  const Layer& fused = onlyLayer(*run.optimized, "kiln.FusedConv");
  EXPECT_EQ(fused.attrInt("residual_before_activation"), 0);
  EXPECT_EQ(fused.inputs.back(), "skip");
  EXPECT_EQ(fused.outputs, std::vector<std::string>{"y"});
  ASSERT_EQ(run.records[0].changes.size(), 1u);
  EXPECT_NE(run.records[0].changes[0].find("Conv 'c1'"), std::string::npos) << run.records[0].changes[0];
  expectSameOutputs(run);
}

INSTANTIATE_TEST_SUITE_P(Activations, ConvActivation,
                         ::testing::Values("Relu", "Relu6", "Sigmoid", "HardSigmoid", "HardSwish", "SiLU", "Gelu",
                                           "LeakyRelu", "Tanh"));

TEST(FuseConvEpilogue, ConvBatchNormReluAddBecomesOneLayer) {
  ModelBuilder mb = convModel();
  mb.initializer("scale", randomFloats({4}, 21, 0.5f, 1.5f));
  mb.initializer("shift", randomFloats({4}, 22));
  mb.initializer("mean", randomFloats({4}, 23));
  mb.initializer("var", randomFloats({4}, 24, 0.5f, 2.0f));
  mb.node("BatchNormalization", {"conv", "scale", "shift", "mean", "var"}, {"bn"}, "bn1");
  mb.node("Add", {"bn", "skip"}, {"sum"}, "add1");
  mb.node("Relu", {"sum"}, {"y"}, "relu1");
  mb.output("y");
  auto run = optimize(mb, PassManager::standard(2));
  EXPECT_EQ(opCounts(*run.optimized), (std::map<std::string, int>{{"kiln.FusedConv", 1}}));
  const Layer& fused = onlyLayer(*run.optimized, "kiln.FusedConv");
  EXPECT_TRUE(hasOrigins(fused, {"c1", "bn1", "add1", "relu1"}));
  EXPECT_EQ(fused.attrString("activation"), "Relu");
  EXPECT_EQ(fused.attrInt("residual_before_activation"), 1);
  expectSameOutputs(run);
}

TEST(FuseConvEpilogue, BiasAddFoldsIntoTheConvolutionBias) {
  for (bool convHasBias : {false, true}) {
    ModelBuilder mb = convModel(17, convHasBias);
    mb.initializer("extra", randomFloats({4, 1, 1}, 31));
    mb.node("Add", {"conv", "extra"}, {"biased"}, "bias_add");
    mb.node("Relu", {"biased"}, {"y"}, "relu");
    mb.output("y");
    auto run = optimize(mb, createFuseConvEpiloguePass());
    EXPECT_EQ(opCounts(*run.optimized), (std::map<std::string, int>{{"kiln.FusedConv", 1}}));
    const Layer& fused = onlyLayer(*run.optimized, "kiln.FusedConv");
    EXPECT_EQ(fused.inputs.size(), 3u);
    EXPECT_TRUE(hasOrigins(fused, {"c1", "bias_add", "relu"}));
    expectSameOutputs(run);
  }
}

TEST(FuseConvEpilogue, ConvTransposeWithResidualBeforeActivation) {
  ModelBuilder mb;
  mb.input("x", F, {1, 4, 5, 5});
  mb.input("skip", F, {1, 2, 11, 11});
  mb.initializer("w", randomFloats({4, 2, 3, 3}, 41));
  auto& deconv = mb.node("ConvTranspose", {"x", "w"}, {"conv"}, "dc");
  ModelBuilder::setInts(deconv, "strides", {2, 2});
  mb.node("Add", {"skip", "conv"}, {"sum"}, "add");
  mb.node("Sigmoid", {"sum"}, {"y"}, "sig");
  mb.output("y");
  auto run = optimize(mb, createFuseConvEpiloguePass());
  const Layer& fused = onlyLayer(*run.optimized, "kiln.FusedConv");
  EXPECT_EQ(fused.attrString("base"), "ConvTranspose");
  expectSameOutputs(run);
}

TEST(FuseConvEpilogue, SecondConsumerOfTheConvOutputBlocksFusion) {
  ModelBuilder mb = convModel();
  mb.node("Relu", {"conv"}, {"y"}, "relu");
  mb.node("Sigmoid", {"conv"}, {"z"}, "other");
  mb.output("y");
  mb.output("z");
  auto run = optimize(mb, createFuseConvEpiloguePass());
  EXPECT_EQ(countOf(*run.optimized, "Conv"), 1);
  EXPECT_EQ(countOf(*run.optimized, "kiln.FusedConv"), 0);
  EXPECT_TRUE(run.records[0].changes.empty());
}

TEST(FuseConvEpilogue, GraphOutputIntermediateStopsTheChainThere) {
  ModelBuilder mb = convModel();
  mb.node("Relu", {"conv"}, {"act"}, "relu");
  mb.node("Add", {"act", "skip"}, {"y"}, "res");
  mb.output("act");  // the activation's output is needed by the caller
  mb.output("y");
  auto run = optimize(mb, createFuseConvEpiloguePass());
  EXPECT_EQ(opCounts(*run.optimized), (std::map<std::string, int>{{"Add", 1}, {"kiln.FusedConv", 1}}));
  EXPECT_EQ(onlyLayer(*run.optimized, "kiln.FusedConv").outputs, std::vector<std::string>{"act"});
  expectSameOutputs(run);
}

TEST(FuseConvEpilogue, UnsupportedFusedLayerIsNotCreated) {
  ModelBuilder mb = convModel();
  mb.node("Relu", {"conv"}, {"y"}, "relu");
  mb.output("y");
  PassContext context;
  context.backendSupports = [](const Layer& l) { return l.domain != "kiln"; };
  auto run = optimize(mb, createFuseConvEpiloguePass(), context);
  EXPECT_EQ(opCounts(*run.optimized), (std::map<std::string, int>{{"Conv", 1}, {"Relu", 1}}));
}

TEST(FusedConvKernel, UnknownActivationNamesTheLayer) {
  auto net = importModel([] {
    ModelBuilder mb = convModel();
    mb.node("Relu", {"conv"}, {"y"}, "relu");
    mb.output("y");
    return mb;
  }());
  PassContext context;
  createFuseConvEpiloguePass()->run(*net, context);
  net->layers().at(0).attributes["activation"] = std::string("Swish2");
  try {
    ReferenceExecutor(net).run(randomInputs(*net, 3));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Swish2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'c1'"), std::string::npos) << e.what();
  }
}
