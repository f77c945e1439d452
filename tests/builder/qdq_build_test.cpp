// Q/DQ models through the public Builder: int8 layers with the model's own scales and no
// calibration, every QuantizeLinear / DequantizeLinear node accounted for in the report (and the
// plan's copy of it), the engine computing what Kiln's reference executor computes on the unfused
// Q/DQ graph; --strongly-typed keeping the float layers fp32, --layer-precision and a backend
// without int8 kernels keeping their pairs float with the reason.
#include <kiln/builder.h>
#include <kiln/onnx_importer.h>
#include <kiln/reference_executor.h>
#include <kiln/runtime.h>

#include "common/qdq_models.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <iostream>

using namespace kiln;
using kiln::test::ModelBuilder;
using kiln::test::QdqStyle;

namespace {

const LayerSummary& layerNamed(const BuildReport& report, const std::string& name) {
  for (const auto& l : report.layers)
    if (l.name == name) return l;
  throw std::runtime_error("no layer " + name);
}

const QdqNodeSummary& nodeNamed(const BuildReport& report, const std::string& name) {
  for (const auto& n : report.qdq)
    if (n.node == name) return n;
  throw std::runtime_error("no Q/DQ node " + name);
}

// The CNN with a Softmax after the Gemm: a float layer the precision planner decides.
std::shared_ptr<Network> cnnWithSoftmax(QdqStyle style) {
  ModelBuilder mb = test::qdqCnn(style);
  auto* graph = mb.model().mutable_graph();
  graph->mutable_output(0)->set_name("z");
  mb.node("Softmax", {"y"}, {"z"}, "softmax");
  return OnnxImporter().importBytes(mb.bytes());
}

// Largest |engine - reference| over the largest |reference|, on the unfused Q/DQ graph.
double differenceFromReference(const Network& network, const std::vector<uint8_t>& plan, const std::string& output,
                               uint32_t seed) {
  const HostTensor x = test::randomFloats({2, 3, 10, 10}, seed);
  const HostTensor expected =
      ReferenceExecutor(std::make_shared<Network>(network)).run({{"x", x}}).at(output).tensor;
  const HostTensor actual = Runtime().load(plan)->createExecutionContext()->run({{"x", x}}).at(output);
  double worst = 0, largest = 0;
  for (int64_t i = 0; i < expected.elementCount(); ++i) {
    worst = std::max(worst, double(std::fabs(actual.data<float>()[i] - expected.data<float>()[i])));
    largest = std::max(largest, double(std::fabs(expected.data<float>()[i])));
  }
  return worst / largest;
}

}  // namespace

TEST(QdqBuild, BothStylesBuildInt8LayersWithEveryNodeAccountedFor) {
  for (QdqStyle style : {QdqStyle::kOnnxRuntime, QdqStyle::kSymmetricInt8}) {
    SCOPED_TRACE(style == QdqStyle::kOnnxRuntime ? "onnxruntime" : "symmetric int8");
    std::vector<std::string> nodes;
    auto network = OnnxImporter().importBytes(test::qdqCnn(style, &nodes).bytes());
    const BuildResult built = Builder().build(*network, BuilderConfig{});
    for (const char* name : {"conv1", "conv2", "gemm"}) {
      const LayerSummary& l = layerNamed(built.report, name);
      EXPECT_EQ(l.precision, "int8") << name;
      EXPECT_EQ(l.type, name[0] == 'g' ? "kiln.QuantizedMatMul" : "kiln.QuantizedConv") << name;
      EXPECT_EQ(l.inputs[1].dtype, "int8") << name;
    }
    EXPECT_TRUE(built.report.calibration.calibrator.empty()) << "the model's scales need no calibration";
    ASSERT_EQ(built.report.qdq.size(), nodes.size());
    const QdqTally tally = tallyQdq(built.report.qdq);
    EXPECT_EQ(tally.unfused, 0);
    EXPECT_EQ(tally.int8Layers, 3);
    EXPECT_EQ(tally.fused + tally.removed, int64_t(nodes.size()));
    std::cout << "[ measured ] " << nodes.size() << " Q/DQ nodes: " << tally.fused << " fused into "
              << tally.int8Layers << " int8 layers, " << tally.removed << " dropped, " << tally.unfused << " unfused; "
              << built.report.layers.size() << " engine layers\n";
    EXPECT_EQ(built.report.layers.size(), 5u);  // 2 QuantizedConv, MaxPool, Flatten, QuantizedMatMul
    EXPECT_EQ(nodeNamed(built.report, "w2_DequantizeLinear").fusedInto, std::vector<std::string>{"conv2"});
    EXPECT_EQ(nodeNamed(built.report, "x_QuantizeLinear").fusedInto, std::vector<std::string>{"conv1"});
    EXPECT_NE(nodeNamed(built.report, "p1_QuantizeLinear").removed.find("identity"), std::string::npos);
    EXPECT_EQ(Runtime().load(built.plan)->report().qdq.size(), nodes.size()) << "the plan keeps the report";
    const double difference = differenceFromReference(*network, built.plan, "y", 5);
    std::cout << "[ measured ] engine vs the Q/DQ graph on the reference executor: " << difference << "\n";
    EXPECT_LT(difference, 1e-5);
  }
}

// --strongly-typed keeps the model's types: the Q/DQ layers are int8 as the model states, the
// float Softmax stays fp32 though fp16 is allowed (which without it makes the Softmax fp16).
TEST(QdqBuild, StronglyTypedKeepsTheFloatLayersFp32AndTheQdqLayersInt8) {
  auto network = cnnWithSoftmax(QdqStyle::kOnnxRuntime);
  BuilderConfig config;
  config.allowFP16 = true;
  EXPECT_EQ(layerNamed(Builder().build(*network, config).report, "softmax").precision, "fp16");
  config.strongTyping = true;
  const BuildResult built = Builder().build(*network, config);
  EXPECT_EQ(layerNamed(built.report, "softmax").precision, "fp32");
  EXPECT_EQ(layerNamed(built.report, "conv1").precision, "int8");
  EXPECT_EQ(layerNamed(built.report, "gemm").precision, "int8");
  EXPECT_EQ(tallyQdq(built.report.qdq).unfused, 0);
  EXPECT_LT(differenceFromReference(*network, built.plan, "z", 6), 1e-5);
}

// --layer-precision conv2:fp16 wins over the model's quantization: conv2 runs in fp16 on its
// dequantized input and weights, whose DequantizeLinear layers stay with the reason.
TEST(QdqBuild, LayerPrecisionWinsOverTheModelsQuantization) {
  auto network = OnnxImporter().importBytes(test::qdqCnn(QdqStyle::kOnnxRuntime).bytes());
  BuilderConfig config;
  config.layerPrecisions["conv2"] = Precision::kFP16;
  const BuildResult built = Builder().build(*network, config);
  const LayerSummary& conv2 = layerNamed(built.report, "conv2");
  EXPECT_EQ(conv2.precision, "fp16");
  EXPECT_EQ(conv2.type, "Conv");
  EXPECT_EQ(conv2.precisionReason, "--layer-precision asks for fp16");
  EXPECT_EQ(layerNamed(built.report, "conv1").precision, "int8");
  for (const char* node : {"w2_DequantizeLinear", "b2_DequantizeLinear"})
    EXPECT_EQ(nodeNamed(built.report, node).unfused, "Conv 'conv2' stays float: --layer-precision asks for fp16")
        << node;
  EXPECT_LT(differenceFromReference(*network, built.plan, "y", 7), 1e-2);  // fp16 arithmetic in conv2
}

// A backend that refuses the quantized convolution (as one without int8 kernels does): the Conv
// pairs stay float on it with the backend's reason, the Gemm's fuse, and the engine still
// computes the Q/DQ graph.
TEST(QdqBuild, ABackendWithoutInt8ConvolutionsKeepsThosePairsFloat) {
  auto network = OnnxImporter().importBytes(test::qdqCnn(QdqStyle::kSymmetricInt8).bytes());
  BuilderConfig config;
  config.backend = BackendKind::kTestDevice;
  ::setenv("KILN_TEST_DEVICE_REFUSE", "QuantizedConv", 1);
  const BuildResult built = Builder().build(*network, config);
  ::unsetenv("KILN_TEST_DEVICE_REFUSE");
  EXPECT_EQ(layerNamed(built.report, "conv1").precisionReason, "QuantizedConv is refused by KILN_TEST_DEVICE_REFUSE");
  EXPECT_EQ(layerNamed(built.report, "gemm").precision, "int8");
  EXPECT_EQ(nodeNamed(built.report, "w1_DequantizeLinear").unfused,
            "Conv 'conv1' stays float: QuantizedConv is refused by KILN_TEST_DEVICE_REFUSE");
  bool warned = false;
  for (const auto& w : built.report.warnings) warned |= w.find("Q/DQ nodes stay float") != std::string::npos;
  EXPECT_TRUE(warned);
  EXPECT_LT(differenceFromReference(*network, built.plan, "y", 8), 1e-5);
}

// --int8 on a Q/DQ model: the model's scales, no calibration data asked for. Optimisation level 0
// fuses nothing and says so for every node.
TEST(QdqBuild, Int8FlagSkipsCalibrationAndLevelZeroKeepsEveryNode) {
  auto network = OnnxImporter().importBytes(test::qdqCnn(QdqStyle::kOnnxRuntime).bytes());
  BuilderConfig config;
  config.allowINT8 = true;
  const BuildResult built = Builder().build(*network, config);
  EXPECT_EQ(layerNamed(built.report, "conv1").precision, "int8");
  bool warned = false;
  for (const auto& w : built.report.warnings) warned |= w.find("calibration is skipped") != std::string::npos;
  EXPECT_TRUE(warned);

  BuilderConfig levelZero;
  levelZero.optimizationLevel = 0;
  const BuildResult plain = Builder().build(*network, levelZero);
  EXPECT_EQ(tallyQdq(plain.report.qdq).unfused, 16);
  EXPECT_EQ(nodeNamed(plain.report, "x_QuantizeLinear").unfused,
            "optimisation level 0 runs no graph passes: Q/DQ stay float layers");
  EXPECT_EQ(differenceFromReference(*network, plain.plan, "y", 9), 0.0);
}

// An FP8 Q/DQ model (opset 19, float8e4m3fn with zero point 0, float biases): its Conv and Gemm
// pairs fuse into fp8 layers with fp8 weights; MaxPool has no fp8 kernel, so the DequantizeLinear
// before it stays (with that reason) and conv1 quantizes its output to fp8 itself. The engine
// computes the Q/DQ graph up to fp32 summation order; at level 0 every node runs unfused with the
// ONNX semantics, exactly the reference executor's.
TEST(QdqBuild, AnFp8ModelBuildsFp8LayersWithEveryNodeAccountedFor) {
  std::vector<std::string> nodes;
  auto network = OnnxImporter().importBytes(test::qdqCnn(QdqStyle::kFloat8, &nodes).bytes());
  const BuildResult built = Builder().build(*network, BuilderConfig{});
  for (const char* name : {"conv1", "conv2", "gemm"}) {
    const LayerSummary& l = layerNamed(built.report, name);
    EXPECT_EQ(l.precision, "fp8") << name;
    EXPECT_EQ(l.type, name[0] == 'g' ? "kiln.QuantizedMatMul" : "kiln.QuantizedConv") << name;
    EXPECT_EQ(l.inputs[1].dtype, "float8e4m3") << name;
  }
  EXPECT_EQ(layerNamed(built.report, "conv1").outputs[0].dtype, "float8e4m3") << "its QuantizeLinear fused";
  ASSERT_EQ(built.report.qdq.size(), nodes.size());
  const QdqTally tally = tallyQdq(built.report.qdq);
  std::cout << "[ measured ] fp8: " << nodes.size() << " Q/DQ nodes: " << tally.fused << " fused into "
            << tally.int8Layers << " layers, " << tally.removed << " dropped, " << tally.unfused << " unfused\n";
  EXPECT_EQ(tally.int8Layers, 3);
  EXPECT_EQ(tally.unfused, 1);
  EXPECT_EQ(nodeNamed(built.report, "r1_DequantizeLinear").unfused, "MaxPool 'pool' has no fp8 kernel");
  const double difference = differenceFromReference(*network, built.plan, "y", 5);
  std::cout << "[ measured ] fp8 engine vs the Q/DQ graph on the reference executor: " << difference << "\n";
  EXPECT_LT(difference, 1e-5);  // measured 1.9e-7: fp32 sums in another order, no fp8 step crossed

  BuilderConfig levelZero;
  levelZero.optimizationLevel = 0;
  const BuildResult plain = Builder().build(*network, levelZero);
  EXPECT_EQ(tallyQdq(plain.report.qdq).unfused, int64_t(nodes.size()));
  EXPECT_EQ(differenceFromReference(*network, plain.plan, "y", 9), 0.0);
}
