// CPU and CUDA engines agree on Conv (1-D, 2-D, 3-D; grouped, depthwise, dilated, strided, uneven
// pads, auto_pad), ConvTranspose (strides, output_padding, output_shape, uneven pads, groups,
// dilations, auto_pad) and the kiln.FusedConv layers the fusion passes make (bias, activations,
// residual before or after), at odd sizes and batch 1, in fp32 (TF32 off), tf32 and fp16.
#include <kiln/shape.h>

#include "common/test_models.h"
#include "gpu/agreement_models.h"
#include "gpu/backend_agreement.h"

#include <gtest/gtest.h>

using namespace kiln;
using kiln::test::ModelBuilder;
using namespace kiln::test::onnx_types;

namespace {

const std::vector<Precision> kPrecisions = {Precision::kFP32, Precision::kTF32, Precision::kFP16};

// One convolution: X and W dims, attributes, whether it has a bias.
struct ConvCase {
  std::string name;
  std::vector<int64_t> x, w;
  std::vector<std::pair<std::string, std::vector<int64_t>>> ints;  // strides, pads, dilations, ...
  int64_t group = 1;
  std::string autoPad;  // "" for NOTSET
  bool bias = true;
};

void setAttributes(onnx::NodeProto& node, const ConvCase& c) {
  for (const auto& [name, values] : c.ints) ModelBuilder::setInts(node, name, values);
  if (c.group != 1) ModelBuilder::setInt(node, "group", c.group);
  if (!c.autoPad.empty()) ModelBuilder::setString(node, "auto_pad", c.autoPad);
}

int64_t outChannels(const ConvCase& c, bool transpose) { return transpose ? c.w[1] * c.group : c.w[0]; }

void expectOnCudnn(const test::Agreement& agreement, const std::string& type, const std::string& tacticPrefix) {
  const LayerSummary* layer = agreement.gpuLayerOfType(type);
  ASSERT_NE(layer, nullptr) << "no " << type << " layer on the CUDA backend";
  // fp16 / bf16 2-D convolutions with 8k output channels run as cuDNN graphs (graph_conv_agreement_test);
  // 2-D depthwise ones on Kiln's kernel where it times faster (depthwise_conv_agreement_test), 1x1
  // ones on cuBLASLt or Kiln's narrow pointwise kernel where they do (gemm_conv_agreement_test),
  // fp16 / bf16 ones of few input channels on Kiln's small-channel kernel where it does
  // (small_channel_conv_agreement_test).
  const bool forward = tacticPrefix == "cudnn.conv.";
  const bool graph = forward && layer->tactic.rfind("cudnn.graph.conv.", 0) == 0;
  const bool depthwise = forward && layer->tactic.rfind("cuda.conv.depthwise.", 0) == 0;
  const bool gemm = forward && (layer->tactic.rfind("cublaslt.conv1x1.", 0) == 0 ||
                                layer->tactic.rfind("kiln.conv1x1.narrow.", 0) == 0);
  const bool smallChannels = forward && layer->tactic.rfind("kiln.conv.smallc.", 0) == 0;
  EXPECT_TRUE(graph || depthwise || gemm || smallChannels || layer->tactic.rfind(tacticPrefix, 0) == 0)
      << layer->tactic;
  test::expectNoFailedTactics(agreement);
}

void checkConv(const ConvCase& c, const char* op, Precision precision) {
  const bool transpose = std::string(op) == "ConvTranspose";
  ModelBuilder mb;
  mb.input("x", kFloat, c.x).output("y");
  mb.initializer("w", test::randomFloats(c.w, 61));
  std::vector<std::string> inputs{"x", "w"};
  if (c.bias) {
    mb.initializer("b", test::randomFloats({outChannels(c, transpose)}, 62));
    inputs.push_back("b");
  }
  setAttributes(mb.node(op, inputs, {"y"}, "conv"), c);
  auto agreement = test::expectBackendsAgree(mb.bytes(), {{"x", test::randomFloats(c.x, 60)}}, precision);
  expectOnCudnn(agreement, op, transpose ? "cudnn.convtranspose." : "cudnn.conv.");
}

const std::vector<ConvCase> kConvCases = {
    {"1-D", {2, 3, 17}, {4, 3, 3}, {{"pads", {1, 1}}}},
    {"1-D strided, uneven pads", {1, 5, 20}, {6, 5, 4}, {{"pads", {2, 1}}, {"strides", {3}}}},
    {"2-D", {1, 3, 9, 11}, {5, 3, 3, 3}, {{"pads", {1, 1, 1, 1}}}},
    {"2-D no bias, no pads", {3, 4, 7, 6}, {2, 4, 2, 3}, {}, 1, "", false},
    {"2-D strided and dilated",
     {2, 3, 13, 12},
     {4, 3, 3, 2},
     {{"strides", {2, 3}}, {"dilations", {2, 1}}, {"pads", {2, 1, 2, 1}}}},
    {"2-D uneven pads", {1, 2, 8, 9}, {3, 2, 3, 3}, {{"pads", {0, 1, 2, 0}}}},
    {"2-D grouped", {2, 6, 8, 7}, {9, 2, 3, 3}, {{"pads", {1, 1, 1, 1}}}, 3},
    {"2-D depthwise", {1, 8, 10, 9}, {8, 1, 3, 3}, {{"pads", {1, 1, 1, 1}}}, 8},
    {"2-D depthwise multiplier 2, strided", {1, 5, 11, 11}, {10, 1, 3, 3}, {{"strides", {2, 2}}}, 5},
    {"2-D 1x1", {1, 16, 7, 5}, {24, 16, 1, 1}, {}},
    {"2-D SAME_UPPER stride 2", {1, 3, 10, 7}, {4, 3, 3, 3}, {{"strides", {2, 2}}}, 1, "SAME_UPPER"},
    {"2-D SAME_LOWER", {1, 3, 6, 6}, {2, 3, 4, 4}, {}, 1, "SAME_LOWER"},
    {"2-D VALID", {1, 3, 9, 8}, {2, 3, 3, 3}, {{"strides", {2, 1}}}, 1, "VALID"},
    {"3-D", {1, 2, 5, 6, 7}, {3, 2, 3, 3, 3}, {{"pads", {1, 1, 1, 1, 1, 1}}}},
    {"3-D strided, uneven pads, grouped",
     {2, 4, 6, 7, 5},
     {6, 2, 2, 3, 3},
     {{"strides", {1, 2, 2}}, {"pads", {0, 1, 0, 1, 0, 2}}},
     2},
};

TEST(ConvAgreement, ForwardShapesAndAttributes) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (const ConvCase& c : kConvCases)
    for (Precision precision : kPrecisions) {
      SCOPED_TRACE("Conv " + c.name + " x " + dimsToString(c.x) + " w " + dimsToString(c.w) + " " +
                   toString(precision));
      checkConv(c, "Conv", precision);
    }
}

TEST(ConvAgreement, BFloat16) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (size_t i : {2u, 6u, 7u}) {
    SCOPED_TRACE("Conv " + kConvCases[i].name);
    checkConv(kConvCases[i], "Conv", Precision::kBF16);
  }
}

const std::vector<ConvCase> kTransposeCases = {
    {"1-D", {2, 4, 9}, {4, 3, 3}, {{"pads", {1, 1}}}},
    {"2-D", {1, 4, 5, 6}, {4, 3, 3, 3}, {}},
    {"2-D strided, output_padding",
     {1, 4, 5, 6},
     {4, 3, 3, 3},
     {{"strides", {2, 2}}, {"pads", {1, 1, 1, 1}}, {"output_padding", {1, 1}}}},
    {"2-D uneven pads", {2, 3, 6, 5}, {3, 2, 3, 4}, {{"strides", {2, 1}}, {"pads", {0, 2, 1, 0}}}},
    {"2-D output_shape", {1, 2, 4, 4}, {2, 3, 3, 3}, {{"strides", {2, 2}}, {"output_shape", {10, 8}}}},
    {"2-D grouped, dilated", {1, 6, 5, 7}, {6, 2, 3, 3}, {{"dilations", {2, 1}}, {"pads", {1, 0, 1, 0}}}, 3},
    {"2-D depthwise strided", {1, 4, 6, 6}, {4, 1, 4, 4}, {{"strides", {2, 2}}, {"pads", {1, 1, 1, 1}}}, 4},
    {"2-D SAME_UPPER stride 2", {1, 3, 5, 7}, {3, 2, 3, 3}, {{"strides", {2, 2}}}, 1, "SAME_UPPER"},
    {"2-D output_padding beyond the kernel",
     {1, 2, 3, 3},
     {2, 2, 1, 1},
     {{"strides", {3, 3}}, {"output_padding", {2, 1}}}},
    {"3-D", {1, 2, 3, 4, 5}, {2, 3, 3, 3, 2}, {{"strides", {2, 1, 2}}, {"pads", {1, 0, 1, 1, 0, 0}}}},
};

TEST(ConvTransposeAgreement, ShapesAndAttributes) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (const ConvCase& c : kTransposeCases)
    for (Precision precision : kPrecisions) {
      SCOPED_TRACE("ConvTranspose " + c.name + " x " + dimsToString(c.x) + " w " + dimsToString(c.w) + " " +
                   toString(precision));
      checkConv(c, "ConvTranspose", precision);
    }
}

// ---- kiln.FusedConv ----

enum class Residual { kNone, kBefore, kAfter };

// Conv (+ per-channel bias Add) + activation, with a residual Add before or after it.
void checkFusedConv(const char* op, const std::string& activation, Residual residual, bool addBias,
                    Precision precision) {
  const bool transpose = std::string(op) == "ConvTranspose";
  const std::vector<int64_t> x = {2, 4, 7, 9};
  const std::vector<int64_t> w = transpose ? std::vector<int64_t>{4, 6, 3, 3} : std::vector<int64_t>{6, 4, 3, 3};
  const std::vector<int64_t> out = transpose ? std::vector<int64_t>{2, 6, 9, 11} : std::vector<int64_t>{2, 6, 7, 9};
  ModelBuilder mb;
  mb.input("x", kFloat, x).output("y");
  if (residual != Residual::kNone) mb.input("r", kFloat, out);
  mb.initializer("w", test::randomFloats(w, 71)).initializer("b", test::randomFloats({6}, 72));
  auto& conv = mb.node(op, {"x", "w", "b"}, {"c"}, "conv");
  if (!transpose) ModelBuilder::setInts(conv, "pads", {1, 1, 1, 1});
  std::string t = "c";
  int step = 0;
  auto next = [&](bool last) { return last ? std::string("y") : "t" + std::to_string(step++); };
  std::vector<std::string> steps;
  if (addBias) steps.push_back("bias");
  if (residual == Residual::kBefore) steps.push_back("residual");
  if (!activation.empty()) steps.push_back("activation");
  if (residual == Residual::kAfter) steps.push_back("residual");
  for (size_t i = 0; i < steps.size(); ++i) {
    const std::string o = next(i + 1 == steps.size());
    if (steps[i] == "bias") {
      mb.initializer("bias", test::randomFloats({1, 6, 1, 1}, 73));
      mb.node("Add", {t, "bias"}, {o}, "bias_add");
    } else if (steps[i] == "residual") {
      mb.node("Add", {t, "r"}, {o}, "residual_add");
    } else {
      test::appendActivation(mb, activation, t, o);
    }
    t = o;
  }
  std::map<std::string, HostTensor> inputs{{"x", test::randomFloats(x, 70)}};
  if (residual != Residual::kNone) inputs["r"] = test::randomFloats(out, 74);
  auto agreement = test::expectBackendsAgree(mb.bytes(), inputs, precision);
  expectOnCudnn(agreement, "kiln.FusedConv", transpose ? "cudnn.convtranspose." : "cudnn.conv.");
}

TEST(FusedConvAgreement, ActivationsAndResiduals) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (const char* op : {"Conv", "ConvTranspose"})
    for (const std::string& activation : {"", "Relu", "LeakyRelu", "Clip", "HardSwish", "SiLU", "Sigmoid", "Tanh"})
      for (Residual residual : {Residual::kNone, Residual::kBefore, Residual::kAfter})
        for (Precision precision : kPrecisions) {
          if (activation.empty() && residual != Residual::kBefore) continue;  // nothing to fuse, or the same
          SCOPED_TRACE(std::string(op) + " + " + (activation.empty() ? "nothing" : activation) + ", residual " +
                       (residual == Residual::kNone     ? "none"
                        : residual == Residual::kBefore ? "before"
                                                        : "after") +
                       " " + toString(precision));
          checkFusedConv(op, activation, residual, residual == Residual::kNone, precision);
        }
}

// Conv + BatchNormalization (folded into the weights) + Relu: the ResNet block's pattern.
TEST(FusedConvAgreement, FoldedBatchNormAndRelu) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (Precision precision : kPrecisions) {
    SCOPED_TRACE(toString(precision));
    ModelBuilder mb;
    mb.input("x", kFloat, {1, 3, 12, 10}).output("y");
    mb.initializer("w", test::randomFloats({8, 3, 3, 3}, 81));
    mb.initializer("scale", test::randomFloats({8}, 82, 0.5f, 1.5f)).initializer("shift", test::randomFloats({8}, 83));
    mb.initializer("mean", test::randomFloats({8}, 84)).initializer("var", test::randomFloats({8}, 85, 0.5f, 2.0f));
    auto& conv = mb.node("Conv", {"x", "w"}, {"c"}, "conv");
    ModelBuilder::setInts(conv, "pads", {1, 1, 1, 1});
    ModelBuilder::setInts(conv, "strides", {2, 2});
    mb.node("BatchNormalization", {"c", "scale", "shift", "mean", "var"}, {"bn"}, "bn");
    mb.node("Relu", {"bn"}, {"y"}, "relu");
    auto agreement = test::expectBackendsAgree(mb.bytes(), {{"x", test::randomFloats({1, 3, 12, 10}, 80)}}, precision);
    expectOnCudnn(agreement, "kiln.FusedConv", "cudnn.conv.");
  }
}

}  // namespace
