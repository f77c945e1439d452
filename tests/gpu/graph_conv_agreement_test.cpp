// CPU and CUDA engines agree on fp16 / bf16 (and TF32) convolutions run as cuDNN graphs (cuda_graph_conv.cpp):
// every epilogue (bias, residual before / after, activations fused by cuDNN or left to Kiln's
// kernels), channel counts that need padding, strides, dilations and uneven pads, linear inputs
// and outputs re-laid out inside the step; and a ResNet-like chain that the engine keeps
// channels-last from the stem to the global pool, with no re-layout layer.
#include <kiln/shape.h>

#include "common/test_models.h"
#include "gpu/agreement_models.h"
#include "gpu/backend_agreement.h"

#include <gtest/gtest.h>

using namespace kiln;
using kiln::test::ModelBuilder;
using namespace kiln::test::onnx_types;

namespace {

void expectGraphTactic(const test::Agreement& agreement, const std::string& type) {
  const LayerSummary* layer = agreement.gpuLayerOfType(type);
  ASSERT_NE(layer, nullptr) << "no " << type << " layer on the CUDA backend";
  EXPECT_EQ(layer->tactic.rfind("cudnn.graph.conv.", 0), 0u) << layer->tactic;
  test::expectNoFailedTactics(agreement);
}

std::string graphTactic(Precision precision) { return std::string("cudnn.graph.conv.") + toString(precision) + ".c0"; }

struct GraphCase {
  std::string name;
  std::vector<int64_t> x, w;
  std::vector<std::pair<std::string, std::vector<int64_t>>> ints;
};

// Output dims of a case (pads / strides / dilations as given, NOTSET auto_pad).
std::vector<int64_t> outputDims(const GraphCase& c) {
  std::vector<int64_t> pads(4, 0), strides(2, 1), dilations(2, 1);
  for (const auto& [name, v] : c.ints) {
    if (name == "pads") pads = v;
    if (name == "strides") strides = v;
    if (name == "dilations") dilations = v;
  }
  std::vector<int64_t> y{c.x[0], c.w[0]};
  for (size_t i = 0; i < 2; ++i) {
    const int64_t span = (c.w[2 + i] - 1) * dilations[i] + 1;
    y.push_back((c.x[2 + i] + pads[i] + pads[2 + i] - span) / strides[i] + 1);
  }
  return y;
}

enum class Residual { kNone, kBefore, kAfter };

// Conv + bias + [residual] + activation [+ residual], fused into one kiln.FusedConv.
void checkGraphConv(const GraphCase& c, const std::string& activation, Residual residual, Precision precision) {
  const std::vector<int64_t> out = outputDims(c);
  ModelBuilder mb;
  mb.input("x", kFloat, c.x).output("y");
  if (residual != Residual::kNone) mb.input("r", kFloat, out);
  mb.initializer("w", test::randomFloats(c.w, 91, -0.5f, 0.5f)).initializer("b", test::randomFloats({c.w[0]}, 92));
  auto& conv = mb.node("Conv", {"x", "w", "b"}, {"c"}, "conv");
  for (const auto& [name, values] : c.ints) ModelBuilder::setInts(conv, name, values);
  std::vector<std::string> steps;
  if (residual == Residual::kBefore) steps.push_back("residual");
  if (!activation.empty()) steps.push_back("activation");
  if (residual == Residual::kAfter) steps.push_back("residual");
  std::string t = "c";
  for (size_t i = 0; i < steps.size(); ++i) {
    const std::string o = i + 1 == steps.size() ? "y" : "t" + std::to_string(i);
    if (steps[i] == "residual") {
      mb.node("Add", {t, "r"}, {o}, "residual_add");
    } else {
      test::appendActivation(mb, activation, t, o);
    }
    t = o;
  }
  if (steps.empty()) mb.node("Identity", {"c"}, {"y"}, "out");
  std::map<std::string, HostTensor> inputs{{"x", test::randomFloats(c.x, 90)}};
  if (residual != Residual::kNone) inputs["r"] = test::randomFloats(out, 93);
  // The convolution API's tactic competes in the build; the graph's first config is what is tested here.
  test::AgreementOptions options;
  options.precision = precision;
  options.forcedTactics = {{"conv", graphTactic(precision)}};
  auto agreement = test::expectBackendsAgree(mb.bytes(), inputs, options);
  expectGraphTactic(agreement, steps.empty() ? "Conv" : "kiln.FusedConv");
}

const GraphCase kSmall = {"3x3", {2, 8, 9, 7}, {16, 8, 3, 3}, {{"pads", {1, 1, 1, 1}}}};

TEST(GraphConvAgreement, Epilogues) {
  KILN_REQUIRE_CUDA_BACKEND();
  // HardSwish has no cuDNN pointwise op: the graph takes conv + bias + residual, Kiln the rest.
  for (const std::string& activation : {"", "Relu", "LeakyRelu", "Clip", "SiLU", "Sigmoid", "Tanh", "HardSwish"})
    for (Residual residual : {Residual::kNone, Residual::kBefore, Residual::kAfter}) {
      if (activation.empty() && residual == Residual::kAfter) continue;  // the same as before
      SCOPED_TRACE((activation.empty() ? std::string("no activation") : activation) + ", residual " +
                   (residual == Residual::kNone ? "none" : residual == Residual::kBefore ? "before" : "after"));
      checkGraphConv(kSmall, activation, residual, Precision::kFP16);
    }
}

const std::vector<GraphCase> kShapes = {
    {"RGB stem 7x7 stride 2 (channels padded 3 -> 8)", {2, 3, 33, 31}, {8, 3, 7, 7}, {{"pads", {3, 3, 3, 3}}, {"strides", {2, 2}}}},
    {"5 channels, uneven pads, strides 2x1", {1, 5, 13, 11}, {16, 5, 3, 3}, {{"pads", {0, 1, 2, 1}}, {"strides", {2, 1}}}},
    {"1x1, 24 outputs", {3, 16, 7, 9}, {24, 16, 1, 1}, {}},
    {"1x1 stride 2 (ResNet downsample)", {2, 32, 15, 15}, {64, 32, 1, 1}, {{"strides", {2, 2}}}},
    {"dilated 3x3", {1, 16, 12, 10}, {8, 16, 3, 3}, {{"pads", {2, 2, 2, 2}}, {"dilations", {2, 2}}}},
    {"batch 1, 1x1 image", {1, 64, 1, 1}, {32, 64, 1, 1}, {}},
};

TEST(GraphConvAgreement, ShapesFp16Bf16AndTf32) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (const GraphCase& c : kShapes)
    for (Precision precision : {Precision::kFP16, Precision::kBF16, Precision::kTF32}) {
      SCOPED_TRACE(c.name + " x " + dimsToString(c.x) + " w " + dimsToString(c.w) + " " + toString(precision));
      checkGraphConv(c, "Relu", Residual::kBefore, precision);
    }
}

// Stem conv + relu, max pool, a bottleneck block with a downsample branch, global average pool:
// every activation between the stem and the pool stays NHWC, and no reformat layer is inserted.
TEST(GraphConvAgreement, ChannelsLastChain) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (Precision precision : {Precision::kFP16, Precision::kBF16, Precision::kTF32}) {
    SCOPED_TRACE(toString(precision));
    ModelBuilder mb;
    const std::vector<int64_t> x = {2, 3, 40, 36};
    mb.input("x", kFloat, x).output("y");
    uint32_t seed = 100;
    auto conv = [&](const std::string& in, const std::string& out, std::vector<int64_t> w,
                    std::vector<std::pair<std::string, std::vector<int64_t>>> ints) {
      mb.initializer(out + "_w", test::randomFloats(w, seed++, -0.3f, 0.3f));
      mb.initializer(out + "_b", test::randomFloats({w[0]}, seed++));
      auto& node = mb.node("Conv", {in, out + "_w", out + "_b"}, {out}, out);
      for (const auto& [name, values] : ints) ModelBuilder::setInts(node, name, values);
    };
    conv("x", "stem", {16, 3, 7, 7}, {{"pads", {3, 3, 3, 3}}, {"strides", {2, 2}}});
    mb.node("Relu", {"stem"}, {"stem_relu"}, "stem_act");
    auto& pool = mb.node("MaxPool", {"stem_relu"}, {"pooled"}, "pool");
    ModelBuilder::setInts(pool, "kernel_shape", {3, 3});
    ModelBuilder::setInts(pool, "strides", {2, 2});
    ModelBuilder::setInts(pool, "pads", {1, 1, 1, 1});
    conv("pooled", "a", {8, 16, 1, 1}, {});
    mb.node("Relu", {"a"}, {"a_relu"}, "a_act");
    conv("a_relu", "b", {8, 8, 3, 3}, {{"pads", {1, 1, 1, 1}}});
    mb.node("Relu", {"b"}, {"b_relu"}, "b_act");
    conv("b_relu", "c", {32, 8, 1, 1}, {});
    conv("pooled", "down", {32, 16, 1, 1}, {});
    mb.node("Add", {"c", "down"}, {"sum"}, "residual");
    mb.node("Relu", {"sum"}, {"block"}, "block_act");
    mb.node("GlobalAveragePool", {"block"}, {"y"}, "gap");
    test::AgreementOptions options;
    options.precision = precision;
    for (const char* conv : {"a", "b", "c", "down"}) options.forcedTactics[conv] = graphTactic(precision);
    // fp16 / bf16 builds fuse the stem with its pool (kiln.FusedConvPool, the small-channel kernel);
    // a TF32 build keeps them apart, the stem on the graph too.
    const bool stemPooled = precision != Precision::kTF32;
    options.forcedTactics["stem"] =
        stemPooled ? std::string("kiln.conv.smallc.") + toString(precision) : graphTactic(precision);
    auto agreement = test::expectBackendsAgree(mb.bytes(), {{"x", test::randomFloats(x, 99)}}, options);
    test::expectNoFailedTactics(agreement);
    int graphConvs = 0, channelsLastOutputs = 0;
    for (const LayerSummary& l : agreement.gpuLayers) {
      EXPECT_NE(l.role, "reformat") << l.name << " re-lays out " << l.inputs.at(0).name;
      if (l.tactic.rfind("cudnn.graph.conv.", 0) == 0) ++graphConvs;
      for (const TensorSummary& t : l.outputs) channelsLastOutputs += t.format == "nhwc";
    }
    EXPECT_EQ(graphConvs, stemPooled ? 4 : 5);
    // stem, pool (one output when fused), a, b and the block's sum; c's (or down's) output feeds the
    // residual of the other.
    EXPECT_GE(channelsLastOutputs, stemPooled ? 4 : 5);
  }
}

}  // namespace
