// CPU and CUDA engines agree on depthwise convolutions run by Kiln's channels-last kernel
// (cuda_depthwise_conv.cpp): an inverted-residual block as MobileNetV3 and EfficientNet write it
// (1x1 expansion, depthwise 3x3 or 5x5 with stride, HardSwish / SiLU, a squeeze-and-excitation
// scale, 1x1 projection and a residual), every precision, the depthwise tactic forced; in fp16 and
// bf16 the chain between the graph convolutions stays channels-last with no re-layout layer.
#include "common/test_models.h"
#include "gpu/backend_agreement.h"

#include <gtest/gtest.h>

using namespace kiln;
using kiln::test::ModelBuilder;
using namespace kiln::test::onnx_types;

namespace {

struct Block {
  std::string name;
  std::vector<int64_t> x;  // [N, C, H, W]
  int64_t expanded, kernel, stride;
  const char* activation;  // "HardSwish" or "Sigmoid" (SiLU as x * sigmoid(x))
  bool residual;
  int64_t squeezed = 8;     // the squeeze-and-excitation reduction's channels (6: off the graphs' multiple of 8)
  bool scaleFirst = false;  // scale * x, as torchvision's SqueezeExcitation writes it
};

ModelBuilder invertedResidual(const Block& b) {
  ModelBuilder mb;
  mb.input("x", kFloat, b.x).output("y");
  uint32_t seed = 200;
  auto conv = [&](const std::string& in, const std::string& out, std::vector<int64_t> w, int64_t group,
                  int64_t stride, int64_t pad) {
    mb.initializer(out + "_w", test::randomFloats(w, seed++, -0.4f, 0.4f));
    mb.initializer(out + "_b", test::randomFloats({w[0]}, seed++));
    auto& node = mb.node("Conv", {in, out + "_w", out + "_b"}, {out}, out);
    ModelBuilder::setInt(node, "group", group);
    ModelBuilder::setInts(node, "strides", {stride, stride});
    ModelBuilder::setInts(node, "pads", {pad, pad, pad, pad});
  };
  auto act = [&](const std::string& in, const std::string& out) {
    if (std::string(b.activation) == "HardSwish") {
      mb.node("HardSwish", {in}, {out}, out);
    } else {
      mb.node("Sigmoid", {in}, {out + "_sig"}, out + "_sig");
      mb.node("Mul", {in, out + "_sig"}, {out}, out);
    }
  };
  const int64_t c = b.x[1];
  conv("x", "expand", {b.expanded, c, 1, 1}, 1, 1, 0);
  act("expand", "expand_act");
  conv("expand_act", "dw", {b.expanded, 1, b.kernel, b.kernel}, b.expanded, b.stride, b.kernel / 2);
  act("dw", "dw_act");
  // Squeeze and excitation: pool, reduce, Relu, expand, HardSigmoid, scale.
  mb.node("GlobalAveragePool", {"dw_act"}, {"se_pool"}, "se_pool");
  conv("se_pool", "se_reduce", {b.squeezed, b.expanded, 1, 1}, 1, 1, 0);
  mb.node("Relu", {"se_reduce"}, {"se_relu"}, "se_relu");
  conv("se_relu", "se_expand", {b.expanded, b.squeezed, 1, 1}, 1, 1, 0);
  mb.node("HardSigmoid", {"se_expand"}, {"se_scale"}, "se_scale");
  if (b.scaleFirst)
    mb.node("Mul", {"se_scale", "dw_act"}, {"scaled"}, "se_mul");
  else
    mb.node("Mul", {"dw_act", "se_scale"}, {"scaled"}, "se_mul");
  conv("scaled", "project", {c, b.expanded, 1, 1}, 1, 1, 0);
  if (b.residual)
    mb.node("Add", {"project", "x"}, {"y"}, "residual");
  else
    mb.node("Identity", {"project"}, {"y"}, "out");
  return mb;
}

const std::vector<Block> kBlocks{
    {"MobileNetV3 3x3 HardSwish, residual", {2, 16, 14, 14}, 64, 3, 1, "HardSwish", true},
    {"EfficientNet 5x5 stride 2 SiLU", {1, 24, 17, 17}, 72, 5, 2, "Sigmoid", false},
    {"EfficientNet scale first, 6 squeezed channels", {3, 16, 15, 15}, 96, 3, 1, "Sigmoid", true, 6, true},
    {"odd channels 3x3 stride 2", {2, 5, 9, 11}, 21, 3, 2, "HardSwish", false},
};

}  // namespace

TEST(DepthwiseConvAgreement, InvertedResidualBlocksEveryPrecision) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (const Block& b : kBlocks)
    for (Precision precision : {Precision::kFP32, Precision::kFP16, Precision::kBF16}) {
      SCOPED_TRACE(b.name + " " + toString(precision));
      test::AgreementOptions options;
      options.precision = precision;
      options.forcedTactics["dw"] = std::string("cuda.conv.depthwise.") + toString(precision);
      const bool graphs = precision != Precision::kFP32;
      if (graphs && b.squeezed % 8 != 0)  // a graph with padded output channels, not the legacy API
        options.forcedTactics["se_reduce"] = std::string("cudnn.graph.conv.") + toString(precision) + ".c0";
      const auto agreement =
          test::expectBackendsAgree(invertedResidual(b).bytes(), {{"x", test::randomFloats(b.x, 7)}}, options);
      test::expectNoFailedTactics(agreement);
      bool ran = false;
      for (const LayerSummary& l : agreement.gpuLayers) {
        ran |= l.tactic.rfind("cuda.conv.depthwise.", 0) == 0;
        if (!graphs || b.x[1] % 8 != 0) continue;
        EXPECT_NE(l.role, "reformat") << l.name << " re-lays out " << l.inputs.at(0).name;
        // The scale reads the feature map channels-last whichever side it is on.
        if (l.name == "se_mul")
          for (const TensorSummary& in : l.inputs) EXPECT_EQ(in.format, "nhwc") << "se_mul reads " << in.name;
      }
      EXPECT_TRUE(ran) << "the depthwise tactic did not run";
    }
}

// Arithmetic between channels-last depthwise convolutions, whichever input is the feature map: a
// [N, C, 1, 1] scale on the left (read in place), a linear graph input on either side (re-laid out
// by the step) and a graph output (the step writes it linear from a channels-last input).
TEST(DepthwiseConvAgreement, ArithmeticReadsEitherInputChannelsLast) {
  KILN_REQUIRE_CUDA_BACKEND();
  const std::vector<int64_t> x{2, 16, 9, 7}, scale{2, 16, 1, 1};
  ModelBuilder mb;
  mb.input("x", kFloat, x).input("s", kFloat, scale).input("z", kFloat, x).output("y").output("w");
  uint32_t seed = 300;
  auto depthwise = [&](const std::string& in, const std::string& out) {
    mb.initializer(out + "_w", test::randomFloats({x[1], 1, 3, 3}, seed++, -0.4f, 0.4f));
    auto& node = mb.node("Conv", {in, out + "_w"}, {out}, out);
    ModelBuilder::setInt(node, "group", x[1]);
    ModelBuilder::setInts(node, "pads", {1, 1, 1, 1});
  };
  depthwise("x", "dw1");
  mb.node("Mul", {"s", "dw1"}, {"scaled"}, "scale_first");  // the feature map second
  depthwise("scaled", "dw2");
  mb.node("Add", {"z", "dw2"}, {"summed"}, "linear_first");  // a linear input first
  depthwise("summed", "dw3");
  mb.node("Sub", {"dw3", "z"}, {"y"}, "to_output");  // written linear (a graph output)
  mb.node("Mul", {"s", "dw1"}, {"w"}, "second_to_output");
  for (Precision precision : {Precision::kFP32, Precision::kFP16}) {
    SCOPED_TRACE(toString(precision));
    test::AgreementOptions options;
    options.precision = precision;
    for (const char* dw : {"dw1", "dw2", "dw3"})
      options.forcedTactics[dw] = std::string("cuda.conv.depthwise.") + toString(precision);
    const auto agreement = test::expectBackendsAgree(
        mb.bytes(),
        {{"x", test::randomFloats(x, 8)}, {"s", test::randomFloats(scale, 9)}, {"z", test::randomFloats(x, 10)}},
        options);
    test::expectNoFailedTactics(agreement);
    // The feature map is read in place (the output shares the linear scale's layout: a graph input).
    for (const LayerSummary& l : agreement.gpuLayers)
      if (l.name == "scale_first") EXPECT_EQ(l.inputs.at(1).format, "nhwc");
  }
}
