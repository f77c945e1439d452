// openWakeWord's embedding CNN built INT8: calibrated on the mel features of some sentences
// (espeak-ng, through the melspectrogram model), checked on the features of other sentences: with
// the minmax and percentile calibrators each embedding stays within cosine 0.99 of FP32 (entropy:
// 0.9, see below), and the engine is really quantized (its error > 0, its Conv layers int8). And
// the same CNN as a quantization toolkit exports it (Q/DQ nodes with scales from a min-max
// calibration, in onnxruntime's uint8 style and in pytorch-quantization's symmetric int8 style,
// weights per channel): every pair fused or listed with its reason, as close to FP32. Built FP8
// (e4m3, calibrated alike) and FP4 (NVFP4, emulated) the CNN is really quantized and loses more
// than int8, by the amounts the test prints (its first convolution is the one to keep: see
// embedding_precision_test.cpp).
#include "models/support/embedding_data.h"
#include "models/support/engine_checks.h"
#include "models/support/model_files.h"
#include "models/support/openwakeword.h"
#include "common/qdq_models.h"

#include <kiln/builder.h>
#include <kiln/file_io.h>
#include <kiln/onnx_importer.h>
#include <kiln/reference_executor.h>

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>

using namespace kiln;
using namespace kiln::test;
using kiln::test::QdqStyle;
namespace fs = std::filesystem;

namespace {

constexpr const char* kModel = "embedding_model.onnx";
constexpr const char* kMelModel = "melspectrogram.onnx";

// Batches of 1 to 16 windows, tuned at 8.
OptimizationProfile windowProfile() {
  return {{{"input_1", rangeAlong({1, owkw::kWindowFrames, owkw::kMelBins, 1}, 0, 1, 8, 16)}}};
}

// How many of the report's convolutions were quantized to `precision`.
int quantizedConvs(const BuildReport& report, Precision precision) {
  int count = 0;
  for (const auto& l : report.layers) count += l.type == "kiln.QuantizedConv" && l.precision == toString(precision);
  return count;
}

double cosine(const float* a, const float* b, int64_t n) {
  double dot = 0, na = 0, nb = 0;
  for (int64_t i = 0; i < n; ++i) {
    dot += double(a[i]) * b[i];
    na += double(a[i]) * a[i];
    nb += double(b[i]) * b[i];
  }
  return dot / std::sqrt(na * nb);
}

// The worst per-window cosine and the relative L2 error of `int8` against `fp32` over the windows.
struct HeldOutAgreement {
  double worstCosine = 1, relativeL2 = 0;
  int64_t windows = 0;
};

HeldOutAgreement agreementOn(const std::vector<HostTensor>& clips, ExecutionContext& fp32, ExecutionContext& int8) {
  HeldOutAgreement a;
  double errorSquares = 0, referenceSquares = 0;
  for (const HostTensor& clip : clips)
    for (int64_t first = 0; first < clip.dim(0); first += 16) {
      const HostTensor batch = owkw::rows(clip, first, std::min<int64_t>(16, clip.dim(0) - first));
      const HostTensor expected = runEngine(fp32, {{"input_1", batch}}).at("conv2d_19");
      const HostTensor actual = runEngine(int8, {{"input_1", batch}}).at("conv2d_19");
      for (int64_t w = 0; w < batch.dim(0); ++w, ++a.windows)
        a.worstCosine = std::min(a.worstCosine, cosine(actual.data<float>() + w * owkw::kEmbeddingSize,
                                                       expected.data<float>() + w * owkw::kEmbeddingSize,
                                                       owkw::kEmbeddingSize));
      for (int64_t i = 0; i < expected.elementCount(); ++i) {
        const double e = expected.data<float>()[i], d = actual.data<float>()[i] - e;
        errorSquares += d * d;
        referenceSquares += e * e;
      }
    }
  a.relativeL2 = std::sqrt(errorSquares / referenceSquares);
  return a;
}

// The model with QuantizeLinear -> DequantizeLinear on every Conv's input (ranges: `ranges`), its
// weights as int8 per output channel through DequantizeLinear, its bias as int32, as a quantization
// toolkit writes them.
std::shared_ptr<Network> withQdqNodes(const Network& model, QdqStyle style,
                                      const std::map<std::string, std::pair<float, float>>& ranges,
                                      std::vector<std::string>& qdqNodes) {
  onnx::ModelProto proto;
  const auto bytes = readFileBytes(modelPath(kModel).string());
  EXPECT_TRUE(proto.ParseFromArray(bytes.data(), int(bytes.size())));
  ModelBuilder mb;
  mb.model() = proto;
  QdqWriter q(mb, style);
  q.perChannelWeights(true);  // onnxruntime's and pytorch-quantization's choice for convolutions
  std::map<std::string, std::string> dequantized;  // activation -> its DequantizeLinear's output
  const int nodes = mb.model().graph().node_size();
  for (int i = 0; i < nodes; ++i) {
    const onnx::NodeProto node = mb.model().graph().node(i);
    if (node.op_type() != "Conv") continue;
    const std::string& x = node.input(0);
    if (!dequantized.count(x)) dequantized[x] = q.activation(x, ranges.at(x).first, ranges.at(x).second);
    const std::string w = q.weights(node.input(1), *model.tensor(node.input(1)).constant, 0);
    auto* conv = mb.model().mutable_graph()->mutable_node(i);
    conv->set_input(0, dequantized[x]);
    conv->set_input(1, w);
    if (node.input_size() > 2)
      conv->set_input(2, q.bias(node.input(2), *model.tensor(node.input(2)).constant, dequantized[x], w));
  }
  qdqNodes = q.nodes();
  return OnnxImporter().importBytes(mb.bytes());
}

// The toolkit's calibration: each Conv input's min and max over the calibration windows (FP32).
std::map<std::string, std::pair<float, float>> convInputRanges(const Network& network,
                                                               const std::vector<HostTensor>& calibration) {
  Network observed = network;
  std::set<std::string> convInputs;
  for (const Layer& l : network.layers())
    if (l.opType == "Conv") convInputs.insert(l.inputs[0]);
  for (const auto& t : convInputs) observed.markOutput(t);
  std::map<std::string, std::pair<float, float>> ranges;
  const ReferenceExecutor reference(std::make_shared<Network>(observed));
  for (const HostTensor& windows : calibration) {
    const ValueMap values = reference.run({{"input_1", windows}});
    for (const auto& t : convInputs) {
      const HostTensor& v = values.at(t).tensor;
      auto [lo, hi] = std::minmax_element(v.data<float>(), v.data<float>() + v.elementCount());
      auto [it, fresh] = ranges.emplace(t, std::make_pair(*lo, *hi));
      if (!fresh) it->second = {std::min(it->second.first, *lo), std::max(it->second.second, *hi)};
    }
  }
  return ranges;
}

class EmbeddingInt8 : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kiln_embedding_int8_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

}  // namespace

TEST_F(EmbeddingInt8, HeldOutEmbeddingsStayCloseToFp32WithEveryCalibrator) {
  KILN_REQUIRE_MODEL(kModel);
  KILN_REQUIRE_MODEL(kMelModel);
  auto mel = owkw::referenceModel(OnnxImporter().importFile(modelPath(kMelModel).string()));
  // Calibration batches of 8 windows from three sentences; held-out windows from two others, one
  // spoken faster.
  const int batches = owkw::writeCalibrationWindows(mel, dir_);
  if (batches == 0) GTEST_SKIP() << "SKIPPED: " << owkw::whyNoSpeech();
  const std::vector<HostTensor> heldOut = owkw::heldOutWindows(mel);
  ASSERT_EQ(heldOut.size(), 2u);

  auto network = OnnxImporter().importFile(modelPath(kModel).string());
  const OptimizationProfile profile = windowProfile();
  auto fp32 = buildEngine(*network, false, {profile})->createExecutionContext();
  for (CalibratorKind calibrator : {CalibratorKind::kEntropy, CalibratorKind::kMinMax, CalibratorKind::kPercentile}) {
    SCOPED_TRACE(toString(calibrator));
    BuilderConfig config;
    config.allowINT8 = true;
    config.allowTF32 = false;
    config.backend = testBackend();
    config.calibration.dataPath = dir_.string();
    config.calibration.calibrator = calibrator;
    config.profiles = {profile};
    const BuildResult built = Builder().build(*network, config);
    EXPECT_EQ(quantizedConvs(built.report, Precision::kINT8), 20) << "the CNN's 20 convolutions";
    EXPECT_EQ(built.report.calibration.batches, batches);
    auto int8 = Runtime().load(built.plan)->createExecutionContext();
    const HeldOutAgreement a = agreementOn(heldOut, *fp32, *int8);
    std::cout << "[ measured ] " << toString(calibrator) << ": " << a.windows << " held-out windows, worst cosine "
              << a.worstCosine << ", relative L2 " << a.relativeL2 << "\n";
    // Entropy calibration clips each activation at about a third of its largest value here; the
    // CNN's five MaxPools pass on exactly those largest values, so it loses more (measured: worst
    // cosine 0.92, relative L2 0.22) than minmax and percentile, which keep them.
    EXPECT_GE(a.worstCosine, calibrator == CalibratorKind::kEntropy ? 0.9 : 0.99);
    EXPECT_GT(a.relativeL2, 1e-4) << "int8 this close to fp32: the layers were not quantized";
  }
}

TEST_F(EmbeddingInt8, AQdqModelFromACalibrationFusesEveryPairAndStaysCloseToFp32) {
  KILN_REQUIRE_MODEL(kModel);
  KILN_REQUIRE_MODEL(kMelModel);
  auto mel = owkw::referenceModel(OnnxImporter().importFile(modelPath(kMelModel).string()));
  const std::vector<HostTensor> calibration = owkw::calibrationWindows(mel);
  if (calibration.empty()) GTEST_SKIP() << "SKIPPED: " << owkw::whyNoSpeech();
  const std::vector<HostTensor> heldOut = owkw::heldOutWindows(mel);
  ASSERT_EQ(heldOut.size(), 2u);
  auto network = OnnxImporter().importFile(modelPath(kModel).string());

  const auto ranges = convInputRanges(*network, calibration);

  const OptimizationProfile profile = windowProfile();
  auto fp32 = buildEngine(*network, false, {profile})->createExecutionContext();
  for (QdqStyle style : {QdqStyle::kOnnxRuntime, QdqStyle::kSymmetricInt8}) {
    const char* styleName = style == QdqStyle::kOnnxRuntime ? "onnxruntime uint8" : "symmetric int8";
    SCOPED_TRACE(styleName);
    std::vector<std::string> nodes;
    auto qdq = withQdqNodes(*network, style, ranges, nodes);
    BuilderConfig config;
    config.allowTF32 = false;
    config.backend = testBackend();
    config.profiles = {profile};
    const BuildResult built = Builder().build(*qdq, config);
    EXPECT_EQ(quantizedConvs(built.report, Precision::kINT8), 20) << "the CNN's 20 convolutions";
    ASSERT_EQ(built.report.qdq.size(), nodes.size());
    for (const auto& n : built.report.qdq)
      EXPECT_TRUE(n.fused() || !n.unfused.empty() || !n.removed.empty()) << n.node << " is neither fused nor listed";
    const QdqTally tally = tallyQdq(built.report.qdq);
    auto int8 = Runtime().load(built.plan)->createExecutionContext();
    const HeldOutAgreement a = agreementOn(heldOut, *fp32, *int8);
    std::cout << "[ measured ] Q/DQ " << styleName << ": " << nodes.size() << " nodes, " << tally.fused
              << " fused into " << tally.int8Layers << " layers, " << tally.removed << " dropped, " << tally.unfused
              << " unfused; " << a.windows << " held-out windows, worst cosine " << a.worstCosine
              << ", relative L2 " << a.relativeL2 << "\n";
    for (const auto& n : built.report.qdq)
      if (!n.unfused.empty()) std::cout << "  unfused " << n.node << ": " << n.unfused << "\n";
    // The fused engine computes what the Q/DQ graph computes, up to float rounding: the graph sums
    // dequantized products in float, the engine exact integers, and where the two land on either
    // side of a rounding boundary of the next layer's quantization the value moves one step (a few
    // hundred values a layer here). Which values flip follows the reference's float summation
    // order, which differs between CPUs (oneDNN / OpenBLAS pick kernels by instruction set):
    // measured 0.0023 / 0.0029 on one machine, 0.0070 / 0.0029 on another and 0.0116 / 0.0222 on
    // the H200 machine's CPU (the same for its CPU and CUDA engines, whose int8 sums are equal),
    // against 0.066 / 0.086 from FP32: the bound is 0.3 of the quantization error.
    const HostTensor batch = owkw::rows(heldOut[0], 0, 8);
    const HostTensor unfused = ReferenceExecutor(qdq).run({{"input_1", batch}}).at("conv2d_19").tensor;
    const double fromGraph = relativeL2(runEngine(*int8, {{"input_1", batch}}).at("conv2d_19"), unfused);
    std::cout << "[ measured ] fused engine vs the Q/DQ graph on the reference executor: relative L2 " << fromGraph
              << "\n";
    EXPECT_LT(fromGraph, 0.3 * a.relativeL2);
    EXPECT_EQ(tally.unfused, 0);
    EXPECT_GE(a.worstCosine, 0.99);
    EXPECT_GT(a.relativeL2, 1e-4) << "int8 this close to fp32: the layers were not quantized";
  }
}

TEST_F(EmbeddingInt8, Fp8AndFp4EnginesOfTheHeldOutEmbeddings) {
  KILN_REQUIRE_MODEL(kModel);
  KILN_REQUIRE_MODEL(kMelModel);
  auto mel = owkw::referenceModel(OnnxImporter().importFile(modelPath(kMelModel).string()));
  if (owkw::writeCalibrationWindows(mel, dir_) == 0) GTEST_SKIP() << "SKIPPED: " << owkw::whyNoSpeech();
  const std::vector<HostTensor> heldOut = owkw::heldOutWindows(mel);
  auto network = OnnxImporter().importFile(modelPath(kModel).string());
  const OptimizationProfile profile = windowProfile();
  auto fp32 = buildEngine(*network, false, {profile})->createExecutionContext();
  fs::create_directories(dir_ / "caches");
  std::map<std::pair<Precision, CalibratorKind>, HeldOutAgreement> measured;
  for (Precision precision : {Precision::kFP8, Precision::kFP4})
    for (CalibratorKind calibrator : {CalibratorKind::kEntropy, CalibratorKind::kMinMax, CalibratorKind::kPercentile}) {
      SCOPED_TRACE(std::string(toString(precision)) + " " + toString(calibrator));
      // NVFP4 runs on Blackwell's tensor cores only: the CUDA backend refuses it on this GPU
      // and the CPU backend emulates it (the CPU run of this test measures it).
      if (precision == Precision::kFP4 && testBackend() == BackendKind::kCuda) continue;
      BuilderConfig config;
      config.allowFP8 = precision == Precision::kFP8;
      config.allowFP4 = precision == Precision::kFP4;
      config.allowTF32 = false;
      config.backend = testBackend();
      config.calibration.dataPath = dir_.string();
      config.calibration.calibrator = calibrator;
      // fp4 reuses fp8's calibration (the same thresholds).
      config.calibration.cachePath = (dir_ / "caches" / (std::string(toString(calibrator)) + ".cache")).string();
      config.profiles = {profile};
      const BuildResult built = Builder().build(*network, config);
      EXPECT_EQ(quantizedConvs(built.report, precision), 20) << "the CNN's 20 convolutions";
      auto engine = Runtime().load(built.plan)->createExecutionContext();
      const HeldOutAgreement a = agreementOn(heldOut, *fp32, *engine);
      measured[{precision, calibrator}] = a;
      std::cout << "[ measured ] " << toString(precision) << " " << toString(calibrator) << ": " << a.windows
                << " held-out windows, worst cosine " << a.worstCosine << ", relative L2 " << a.relativeL2 << "\n";
      EXPECT_GT(a.relativeL2, 1e-4) << "this close to fp32: the layers were not quantized";
    }
  // FP8 keeps 3 mantissa bits at every magnitude: steps of 1/16 to 1/8 of a value, where int8 minmax
  // has even steps of 1/127 of the largest. The CNN's first convolution reads mel features in
  // [3.4, 12.3] and takes differences of neighbours, which that relative rounding swamps: all-fp8
  // worst cosine 0.905 (minmax) / 0.908 (percentile), relative L2 0.29, against int8's 0.994; with
  // that one convolution kept out of fp8, 0.99 (embedding_precision_test.cpp bisects for it).
  for (CalibratorKind c : {CalibratorKind::kMinMax, CalibratorKind::kPercentile})
    EXPECT_GE((measured[{Precision::kFP8, c}].worstCosine), 0.85) << toString(c);
  // FP4: 16-value blocks with one e4m3 scale and values 0..6 (measured: worst cosine 0.81 minmax,
  // 0.78 percentile, relative L2 0.48).
  if (testBackend() == BackendKind::kCuda) return;
  for (CalibratorKind c : {CalibratorKind::kMinMax, CalibratorKind::kPercentile})
    EXPECT_GE((measured[{Precision::kFP4, c}].worstCosine), 0.7) << toString(c);
  EXPECT_GT((measured[{Precision::kFP4, CalibratorKind::kMinMax}].relativeL2),
            (measured[{Precision::kFP8, CalibratorKind::kMinMax}].relativeL2))
      << "fp4 loses more than fp8";
}

// The CNN as an FP8 toolkit exports it (float8e4m3fn Q/DQ, opset 19, scales from the same min-max
// calibration): all 60 nodes fuse into the 20 Conv layers, fp8 with fp8 weights (a node that stayed
// would name MaxPool, which has no fp8 kernel). The engine computes the Q/DQ graph up to fp32
// summation order (measured 0.027 and, on the H200 machine's CPU, 0.034 against 0.287 from FP32:
// fp8 steps are coarse, so a sum that lands on the other side of one moves further; the H200's fp8
// tensor cores, which keep fewer bits in their running sums, 0.069), and is as close to FP32 as
// the calibrated fp8 build (worst cosine 0.905).
TEST_F(EmbeddingInt8, AnFp8QdqModelFusesIntoFp8Layers) {
  KILN_REQUIRE_MODEL(kModel);
  KILN_REQUIRE_MODEL(kMelModel);
  auto mel = owkw::referenceModel(OnnxImporter().importFile(modelPath(kMelModel).string()));
  const std::vector<HostTensor> calibration = owkw::calibrationWindows(mel);
  if (calibration.empty()) GTEST_SKIP() << "SKIPPED: " << owkw::whyNoSpeech();
  const std::vector<HostTensor> heldOut = owkw::heldOutWindows(mel);
  auto network = OnnxImporter().importFile(modelPath(kModel).string());
  std::vector<std::string> nodes;
  auto qdq = withQdqNodes(*network, QdqStyle::kFloat8, convInputRanges(*network, calibration), nodes);
  const OptimizationProfile profile = windowProfile();
  BuilderConfig config;
  config.allowTF32 = false;
  config.backend = testBackend();
  config.profiles = {profile};
  const BuildResult built = Builder().build(*qdq, config);
  EXPECT_EQ(quantizedConvs(built.report, Precision::kFP8), 20) << "the CNN's 20 convolutions";
  const QdqTally tally = tallyQdq(built.report.qdq);
  for (const auto& n : built.report.qdq)
    if (!n.unfused.empty()) EXPECT_NE(n.unfused.find("has no fp8 kernel"), std::string::npos) << n.node << ": " << n.unfused;
  auto fp32 = buildEngine(*network, false, {profile})->createExecutionContext();
  auto fp8 = Runtime().load(built.plan)->createExecutionContext();
  const HeldOutAgreement a = agreementOn(heldOut, *fp32, *fp8);
  const HostTensor batch = owkw::rows(heldOut[0], 0, 8);
  const HostTensor unfused = ReferenceExecutor(qdq).run({{"input_1", batch}}).at("conv2d_19").tensor;
  const double fromGraph = relativeL2(runEngine(*fp8, {{"input_1", batch}}).at("conv2d_19"), unfused);
  std::cout << "[ measured ] Q/DQ fp8: " << nodes.size() << " nodes, " << tally.fused << " fused into "
            << tally.int8Layers << " layers, " << tally.removed << " dropped, " << tally.unfused << " unfused; worst cosine "
            << a.worstCosine << ", relative L2 " << a.relativeL2 << "; fused engine vs the Q/DQ graph " << fromGraph
            << "\n";
  EXPECT_LT(fromGraph, 0.3 * a.relativeL2);
  EXPECT_GT(a.relativeL2, 1e-4) << "fp8 this close to fp32: the layers were not quantized";
  EXPECT_GE(a.worstCosine, 0.85);  // as the calibrated fp8 build (see Fp8AndFp4EnginesOfTheHeldOutEmbeddings)
}
