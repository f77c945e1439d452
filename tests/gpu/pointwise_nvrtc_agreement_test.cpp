// CPU and CUDA engines agree on kiln.Pointwise run as one NVRTC kernel (the nvrtc.pointwise
// tactic, forced): deep chains (x * sigmoid(x) + y, GELU's tanh form, HardSwish), dense, scalar
// and general broadcasts (bool intermediates: pointwise_agreement_test.cpp), at odd sizes (1, 7, 1023, 33x17x5x3) in
// fp32, fp16 and bf16; a squeeze-and-excitation scale read channels-last between cuDNN graph convolutions (packed
// per-channel kernel at 16 channels, the general one at 12); and a model built without forcing, whose plan carries the
// cubin (saved, loaded from the file, run).
#include <kiln/builder.h>
#include <kiln/onnx_importer.h>
#include <kiln/runtime.h>
#include <kiln/shape.h>

#include "common/test_models.h"
#include "gpu/backend_agreement.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>

using namespace kiln;
using kiln::test::ModelBuilder;
using namespace kiln::test::onnx_types;

namespace {

constexpr Precision kPrecisions[] = {Precision::kFP32, Precision::kFP16, Precision::kBF16};
const std::vector<std::vector<int64_t>> kSizes = {{1}, {7}, {1023}, {33, 17, 5, 3}};

std::string nvrtcTactic(Precision precision) { return std::string("nvrtc.pointwise.") + toString(precision); }

const LayerSummary* gpuLayerNamed(const test::Agreement& agreement, const std::string& name) {
  for (const LayerSummary& l : agreement.gpuLayers)
    if (l.name == name) return &l;
  return nullptr;
}

// Builds `model` with the fused layer named `root` forced onto the NVRTC tactic and checks it
// ran that way and agrees with the CPU.
test::Agreement expectNvrtcAgrees(const std::string& model, const std::map<std::string, HostTensor>& inputs,
                                  const std::string& root, Precision precision) {
  test::AgreementOptions options;
  options.precision = precision;
  options.forcedTactics = {{root, nvrtcTactic(precision)}};
  test::Agreement agreement = test::expectBackendsAgree(model, inputs, options);
  const LayerSummary* fused = gpuLayerNamed(agreement, root);
  EXPECT_TRUE(fused && fused->type == "kiln.Pointwise") << "the chain ending in '" << root << "' was not fused";
  if (fused) EXPECT_EQ(fused->tactic, nvrtcTactic(precision));
  test::expectNoFailedTactics(agreement);
  return agreement;
}

// A model of one chain over inputs of the given dims, written by `body`.
struct Chain {
  std::string name;
  std::function<void(ModelBuilder&, const std::vector<int64_t>&)> body;  // ends in node "root" writing "y"
  std::vector<std::string> inputs;                                       // each of the size's dims
};

const std::vector<Chain>& chains() {
  static const std::vector<Chain> list = {
      {"swish_plus_y",
       [](ModelBuilder& mb, const std::vector<int64_t>&) {
         mb.node("Sigmoid", {"x"}, {"s"}, "sigmoid");
         mb.node("Mul", {"x", "s"}, {"swish"}, "swish");
         mb.node("Add", {"swish", "y_in"}, {"y"}, "root");
       },
       {"x", "y_in"}},
      {"gelu_tanh_then_hardswish",
       [](ModelBuilder& mb, const std::vector<int64_t>&) {
         mb.initializer("k", HostTensor::scalar<float>(0.75f));
         ModelBuilder::setString(mb.node("Gelu", {"x"}, {"g"}, "gelu"), "approximate", "tanh");
         mb.node("Mul", {"g", "k"}, {"gk"}, "scale");
         mb.node("HardSwish", {"gk"}, {"y"}, "root");
       },
       {"x"}},
      {"activations",
       [](ModelBuilder& mb, const std::vector<int64_t>&) {
         mb.initializer("one", HostTensor::scalar<float>(1.0f));
         mb.initializer("lo", HostTensor::scalar<float>(-0.6f)).initializer("hi", HostTensor::scalar<float>(0.9f));
         mb.node("Abs", {"x"}, {"a"}, "abs");
         mb.node("Add", {"a", "one"}, {"a1"}, "plus_one");
         mb.node("Log", {"a1"}, {"l"}, "log");
         mb.node("Sqrt", {"a1"}, {"q"}, "sqrt");
         mb.node("Sub", {"l", "q"}, {"d"}, "sub");
         ModelBuilder::setFloat(mb.node("LeakyRelu", {"d"}, {"lr"}, "leaky"), "alpha", 0.2f);
         mb.node("Elu", {"lr"}, {"el"}, "elu");
         mb.node("Softplus", {"el"}, {"sp"}, "softplus");
         mb.node("Erf", {"sp"}, {"er"}, "erf");
         mb.node("Neg", {"er"}, {"ng"}, "neg");
         mb.node("Tanh", {"ng"}, {"t"}, "tanh");
         mb.node("Clip", {"t", "lo", "hi"}, {"y"}, "root");
       },
       {"x"}},
  };
  return list;
}

TEST(PointwiseNvrtcAgreement, DeepChainsAtOddSizes) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (const Chain& chain : chains())
    for (const std::vector<int64_t>& dims : kSizes)
      for (Precision precision : kPrecisions) {
        SCOPED_TRACE(chain.name + " " + dimsToString(dims) + " " + toString(precision));
        ModelBuilder mb(20);
        std::map<std::string, HostTensor> inputs;
        uint32_t seed = 300;
        for (const std::string& in : chain.inputs) {
          mb.input(in, kFloat, dims);
          inputs[in] = test::randomFloats(dims, seed++, -2.0f, 2.0f);
        }
        mb.output("y");
        chain.body(mb, dims);
        expectNvrtcAgrees(mb.bytes(), inputs, "root", precision);
      }
}

// Broadcasts: a [1] input as a scalar, a per-last-axis bias, a general [3,1,6] x [1,5,1].
TEST(PointwiseNvrtcAgreement, Broadcasts) {
  KILN_REQUIRE_CUDA_BACKEND();
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> shapes = {{{1023}, {1}},
                                                                                     {{33, 17, 5, 3}, {1}},
                                                                                     {{33, 17, 5, 3}, {3}},
                                                                                     {{33, 17, 5, 3}, {17, 1, 1}},
                                                                                     {{3, 1, 6}, {1, 5, 1}},
                                                                                     {{2, 8, 4, 16}, {16}},
                                                                                     {{1}, {1}}};
  for (const auto& [a, b] : shapes)
    for (Precision precision : kPrecisions) {
      SCOPED_TRACE(dimsToString(a) + " " + dimsToString(b) + " " + toString(precision));
      ModelBuilder mb(20);
      mb.input("a", kFloat, a).input("b", kFloat, b).output("y");
      mb.initializer("half", HostTensor::scalar<float>(0.5f));
      mb.initializer("exponent", HostTensor::scalar<float>(2.0f));
      mb.node("Sub", {"a", "b"}, {"d"}, "sub");
      mb.node("Pow", {"d", "exponent"}, {"p"}, "pow");
      mb.node("Mul", {"p", "half"}, {"m"}, "mul");
      mb.node("Tanh", {"b"}, {"tb"}, "tanh");
      mb.node("Add", {"m", "tb"}, {"y"}, "root");
      expectNvrtcAgrees(mb.bytes(), {{"a", test::randomFloats(a, 401)}, {"b", test::randomFloats(b, 402)}}, "root",
                        precision);
    }
}

// Squeeze-and-excitation between cuDNN graph convolutions: the feature map and the chain's output
// stay channels-last, the [N, C, 1, 1] scale broadcast per channel (the packed kernel); with a
// spatial map [1, 1, H, W] multiplied in as well, the general kernel over [N, H, W, C].
TEST(PointwiseNvrtcAgreement, SqueezeExcitationChannelsLast) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (bool spatial : {false, true})
    for (Precision precision : {Precision::kFP16, Precision::kBF16}) {
      const int64_t channels = spatial ? 24 : 16;
      SCOPED_TRACE(std::string(spatial ? "with" : "without") + " a spatial map, " + toString(precision));
      ModelBuilder mb;
      const std::vector<int64_t> x = {2, 3, 11, 9};
      mb.input("x", kFloat, x).output("y");
      if (spatial) mb.input("map", kFloat, {1, 1, 11, 9});
      mb.initializer("stem_w", test::randomFloats({channels, 3, 3, 3}, 501, -0.4f, 0.4f));
      mb.initializer("out_w", test::randomFloats({8, channels, 3, 3}, 502, -0.3f, 0.3f));
      mb.initializer("shift", HostTensor::scalar<float>(0.25f));
      ModelBuilder::setInts(mb.node("Conv", {"x", "stem_w"}, {"f"}, "stem"), "pads", {1, 1, 1, 1});
      mb.node("GlobalAveragePool", {"f"}, {"p"}, "squeeze");
      mb.node("Add", {"p", "shift"}, {"ps"}, "shift");
      mb.node("Sigmoid", {"ps"}, {"g"}, "gate");
      mb.node("Mul", {"f", "g"}, {"scaled"}, "excite");
      if (spatial) mb.node("Mul", {"scaled", "map"}, {"mapped"}, "spatial");
      mb.node("Relu", {spatial ? "mapped" : "scaled"}, {"z"}, "root");
      ModelBuilder::setInts(mb.node("Conv", {"z", "out_w"}, {"y"}, "out"), "pads", {1, 1, 1, 1});
      test::AgreementOptions options;
      options.precision = precision;
      const std::string graph = std::string("cudnn.graph.conv.") + toString(precision) + ".c0";
      options.forcedTactics = {{"stem", graph}, {"out", graph}, {"root", nvrtcTactic(precision)}};
      std::map<std::string, HostTensor> inputs = {{"x", test::randomFloats(x, 500)}};
      if (spatial) inputs["map"] = test::randomFloats({1, 1, 11, 9}, 503, 0.5f, 1.5f);
      const auto agreement = test::expectBackendsAgree(mb.bytes(), inputs, options);
      test::expectNoFailedTactics(agreement);
      const LayerSummary* fused = gpuLayerNamed(agreement, "root");
      ASSERT_NE(fused, nullptr) << "no kiln.Pointwise layer ran on the GPU";
      EXPECT_EQ(fused->tactic, nvrtcTactic(precision));
      // Informative: the chain between the graph convolutions is meant to stay channels-last.
      for (const TensorSummary& t : fused->inputs)
        if (t.name == "f") EXPECT_EQ(t.format, "nhwc") << "the feature map reaches the chain re-laid out";
      EXPECT_EQ(fused->outputs.at(0).format, "nhwc");
    }
}

// Not forced: the builder lists (and at the default level times) the NVRTC tactic; the plan
// carries its cubin, so the engine loaded from the saved file runs it without NVRTC.
TEST(PointwiseNvrtcAgreement, ModelPlanCarriesTheCubin) {
  KILN_REQUIRE_CUDA_BACKEND();
  ModelBuilder mb(20);
  const std::vector<int64_t> dims = {4, 24, 7, 5};
  mb.input("x", kFloat, dims).input("s", kFloat, {4, 24, 1, 1}).output("y");
  mb.node("Sigmoid", {"s"}, {"g"}, "gate");
  mb.node("Mul", {"x", "g"}, {"m"}, "excite");
  mb.node("HardSwish", {"m"}, {"y"}, "root");
  const std::map<std::string, HostTensor> inputs = {{"x", test::randomFloats(dims, 601)},
                                                    {"s", test::randomFloats({4, 24, 1, 1}, 602)}};
  auto network = OnnxImporter().importBytes(mb.bytes());
  BuilderConfig config;
  config.backend = BackendKind::kCuda;
  config.allowFP16 = true;
  const BuildResult build = Builder().build(*network, config);
  const LayerSummary* fused = nullptr;
  for (const LayerSummary& l : build.report.layers)
    if (l.type == "kiln.Pointwise") fused = &l;
  ASSERT_NE(fused, nullptr);
  const auto offered =
      std::find_if(fused->tacticCandidates.begin(), fused->tacticCandidates.end(),
                   [](const TacticCandidate& c) { return c.tactic.rfind("nvrtc.pointwise.", 0) == 0; });
  ASSERT_NE(offered, fused->tacticCandidates.end()) << "the build offered no nvrtc.pointwise tactic";
  EXPECT_NE(offered->status.rfind("failed", 0), 0u) << offered->status;
  std::cout << "chosen: " << fused->tactic << "; nvrtc candidate " << offered->status << " " << offered->milliseconds
            << " ms\n";
  if (fused->tactic.rfind("nvrtc.pointwise.", 0) == 0) {
    const std::string magic = "KPWC";
    EXPECT_NE(std::search(build.plan.begin(), build.plan.end(), magic.begin(), magic.end()), build.plan.end())
        << "the plan holds no NVRTC payload";
  }
  const std::string path = testing::TempDir() + "kiln_pointwise_nvrtc.plan";
  {
    std::ofstream file(path, std::ios::binary);
    file.write(reinterpret_cast<const char*>(build.plan.data()), std::streamsize(build.plan.size()));
  }
  const auto gpu = Runtime().loadFile(path)->createExecutionContext()->run(inputs);
  std::remove(path.c_str());
  const auto cpu =
      Runtime().load(Builder().build(*network, BuilderConfig()).plan)->createExecutionContext()->run(inputs);
  const std::vector<double> got = gpu.at("y").toDoubleVector(), want = cpu.at("y").toDoubleVector();
  ASSERT_EQ(got.size(), want.size());
  double error = 0, norm = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    error += (got[i] - want[i]) * (got[i] - want[i]);
    norm += want[i] * want[i];
  }
  EXPECT_LE(error / norm, test::nmseTolerance(Precision::kFP16));
}

}  // namespace
