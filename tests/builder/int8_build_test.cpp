// INT8 builds through the public Builder: calibration from .npy batches, Conv and Gemm layers
// quantized (really: their error is > 0) yet close to FP32 on inputs not used for calibration,
// with every calibrator; the cache reused without data and refused for another model or
// calibrator; layers that cannot be int8 kept in fp32 with the reason; progress and cancel; the
// test device backend computing what the CPU computes, and refusing int8 layers like a device
// without int8 kernels.
#include <kiln/builder.h>
#include <kiln/error.h>
#include <kiln/npy.h>
#include <kiln/onnx_importer.h>
#include <kiln/reference_executor.h>
#include <kiln/runtime.h>

#include "builder/support/quantized_builds.h"
#include "common/residual_block_model.h"
#include "common/test_models.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <sstream>
#include <cstdlib>
#include <filesystem>

using namespace kiln;
using namespace kiln::test::quantized_builds;
using kiln::test::ModelBuilder;
using namespace kiln::test::onnx_types;
namespace fs = std::filesystem;

namespace {

class RecordingObserver : public BuildObserver {
 public:
  std::vector<std::string> phases;
  std::string cancelAt;
  void progress(const BuildProgress& p) override { phases.push_back(p.phase); }
  bool cancelled() override { return !cancelAt.empty() && !phases.empty() && phases.back() == cancelAt; }
};

// An INT8 build calibrated (max) on one random batch x [2, 8, 6, 6] written under `dir`.
BuilderConfig minMaxConfigWithOneBatch(const TempDir& dir, uint32_t seed) {
  const fs::path data = dir.file("data");
  fs::create_directories(data);
  writeNpyFile(test::randomFloats({2, 8, 6, 6}, seed), (data / "x.npy").string());
  BuilderConfig config;
  config.allowINT8 = true;
  config.calibration.dataPath = data.string();
  config.calibration.calibrator = CalibratorKind::kMinMax;
  return config;
}

}  // namespace

TEST(Int8Build, ConvAndGemmAreQuantizedAndStayCloseToFp32WithEveryCalibrator) {
  TempDir dir;
  auto network = convGemmNetwork();
  const HostTensor heldOut = images(4, 7);  // not among the calibration batches
  const HostTensor expected = ReferenceExecutor(network).run({{"x", heldOut}}).at("y").tensor;
  for (CalibratorKind calibrator : {CalibratorKind::kEntropy, CalibratorKind::kMinMax, CalibratorKind::kPercentile}) {
    SCOPED_TRACE(toString(calibrator));
    const BuildResult built = Builder().build(*network, int8Config(dir.calibration(), calibrator));
    for (const char* name : {"conv1", "conv2", "gemm"}) {
      const LayerSummary& layer = layerNamed(built.report, name);
      EXPECT_EQ(layer.precision, "int8") << name;
      EXPECT_EQ(layer.type, name[0] == 'g' ? "kiln.QuantizedMatMul" : "kiln.QuantizedConv") << name;
      EXPECT_EQ(layer.inputs[1].dtype, "int8") << name;
    }
    EXPECT_EQ(built.report.calibration.source, "data");
    EXPECT_EQ(built.report.calibration.batches, 3);
    EXPECT_EQ(built.report.calibration.scales.size(), 3u);  // x, r1 and f
    const Agreement a = agreement(runPlan(built.plan, heldOut), expected);
    std::cout << "[ measured ] " << toString(calibrator) << ": relative L2 " << a.relativeL2 << ", cosine "
              << a.cosine << "\n";
    EXPECT_GT(a.relativeL2, 1e-4) << "an int8 engine this close to fp32 was not quantized";
    EXPECT_LT(a.relativeL2, 0.05);
    EXPECT_GT(a.cosine, 0.998);
  }
}

TEST(Int8Build, TheCacheIsReusedWithoutDataAndRefusedForAnotherModelOrCalibrator) {
  TempDir dir;
  auto network = convGemmNetwork();
  BuilderConfig config = int8Config(dir.calibration());
  config.calibration.cachePath = dir.file("model.cache");
  const BuildResult first = Builder().build(*network, config);
  ASSERT_TRUE(fs::exists(config.calibration.cachePath));

  BuilderConfig fromCache = config;
  fromCache.calibration.dataPath.clear();
  const BuildResult second = Builder().build(*network, fromCache);
  EXPECT_EQ(second.report.calibration.source, "cache");
  EXPECT_EQ(second.report.calibration.scales, first.report.calibration.scales);
  const HostTensor x = images(2, 9);
  const HostTensor a = runPlan(first.plan, x), b = runPlan(second.plan, x);
  EXPECT_EQ(std::memcmp(a.rawData(), b.rawData(), a.byteSize()), 0);

  try {
    Builder().build(*convGemmNetwork(50), fromCache);
    ADD_FAILURE() << "a cache of another model was used";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("was made for another model"), std::string::npos) << e.what();
  }
  fromCache.calibration.calibrator = CalibratorKind::kMinMax;
  try {
    Builder().build(*network, fromCache);
    ADD_FAILURE() << "an entropy cache was used for minmax";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("holds entropy scales but the minmax calibrator"), std::string::npos)
        << e.what();
  }
}

TEST(Int8Build, WithoutDataOrCacheTheBuildSaysWhatToGive) {
  try {
    Builder().build(*convGemmNetwork(), int8Config(""));
    ADD_FAILURE() << "built without calibration";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--calib-data"), std::string::npos) << e.what();
  }
}

// conv1's weights are a graph input, gemm is held to fp32, the MatMul of two activations becomes int8.
TEST(Int8Build, LayersThatCannotBeInt8StayFp32WithTheReason) {
  ModelBuilder mb;
  mb.input("x", kFloat, {2, 3, 6, 6}).input("w", kFloat, {4, 3, 1, 1}).input("v", kFloat, {3, 4})
      .initializer("wg", test::randomFloats({4, 4}, 3))
      .output("y").output("z");
  mb.node("Conv", {"x", "w"}, {"c"}, "conv1");
  mb.node("Reshape", {"c", "shape"}, {"m"}, "reshape");
  mb.initializer("shape", HostTensor::fromVector<int64_t>({3}, {2, 4, 36}));
  ModelBuilder::setInts(mb.node("Transpose", {"m"}, {"mt"}, "transpose"), "perm", {0, 2, 1});
  mb.node("MatMul", {"m", "mt"}, {"y"}, "attention_like");  // [2, 4, 36] x [2, 36, 4]
  mb.node("Gemm", {"v", "wg"}, {"z"}, "gemm");
  auto network = OnnxImporter().importBytes(mb.bytes());
  TempDir dir;
  const fs::path data = dir.file("data");
  fs::create_directories(data);
  writeNpyFile(test::randomFloats({2, 3, 6, 6}, 1), (data / "x.npy").string());
  writeNpyFile(test::randomFloats({4, 3, 1, 1}, 2), (data / "w.npy").string());
  writeNpyFile(test::randomFloats({3, 4}, 4), (data / "v.npy").string());
  BuilderConfig config;
  config.allowINT8 = true;
  config.calibration.dataPath = data.string();
  config.layerPrecisions["gemm"] = Precision::kFP32;
  const BuildResult built = Builder().build(*network, config);
  EXPECT_EQ(layerNamed(built.report, "conv1").precision, "fp32");
  EXPECT_EQ(layerNamed(built.report, "conv1").precisionReason, "its weights are not a float32 constant");
  EXPECT_EQ(layerNamed(built.report, "gemm").precisionReason, "--layer-precision asks for fp32");
  EXPECT_EQ(layerNamed(built.report, "attention_like").precision, "int8");
  EXPECT_EQ(layerNamed(built.report, "attention_like").type, "kiln.QuantizedMatMul");
  bool warned = false;
  for (const auto& w : built.report.warnings) warned |= w.find("2 Conv/MatMul/Gemm layer(s) stay") != std::string::npos;
  EXPECT_TRUE(warned);
  // The report survives the plan (kiln inspect reads it from there).
  auto engine = Runtime().load(built.plan);
  EXPECT_EQ(layerNamed(engine->report(), "conv1").precisionReason, "its weights are not a float32 constant");
  EXPECT_EQ(engine->report().calibration.batches, 1);
}

TEST(Int8Build, CalibrationReportsProgressAndCancels) {
  TempDir dir;
  auto network = convGemmNetwork();
  RecordingObserver watcher;
  Builder().build(*network, int8Config(dir.calibration()), &watcher);
  EXPECT_NE(std::find(watcher.phases.begin(), watcher.phases.end(), "calibration"), watcher.phases.end());
  RecordingObserver canceller;
  canceller.cancelAt = "calibration";
  try {
    Builder().build(*network, int8Config(dir.calibration()), &canceller);
    ADD_FAILURE() << "not cancelled";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kCancelled);
  }
}

// The test device backend runs the CPU's int8 kernels on guarded memory: the same values; and
// where it refuses the quantized op (as a backend without int8 kernels does), the layer stays in
// float on that backend with its reason.
TEST(Int8Build, ADeviceBackendComputesTheSameOrKeepsTheLayersItCannotRunInFloat) {
  TempDir dir;
  auto network = convGemmNetwork();
  const HostTensor x = images(3, 5);
  // One cache for both: calibration runs a timed FP32 engine, whose tactics may differ from build to
  // build in the last bits of the activations.
  BuilderConfig cpu = int8Config(dir.calibration());
  cpu.calibration.cachePath = dir.file("shared.cache");
  const HostTensor onCpu = runPlan(Builder().build(*network, cpu).plan, x);
  BuilderConfig device = cpu;
  device.backend = BackendKind::kTestDevice;
  const BuildResult built = Builder().build(*network, device);
  EXPECT_EQ(layerNamed(built.report, "conv2").backend, "cpu-device");
  EXPECT_EQ(layerNamed(built.report, "conv2").precision, "int8");
  const HostTensor onDevice = runPlan(built.plan, x);
  EXPECT_EQ(std::memcmp(onCpu.rawData(), onDevice.rawData(), onCpu.byteSize()), 0);

  ::setenv("KILN_TEST_DEVICE_REFUSE", "QuantizedConv", 1);
  const BuildResult refused = Builder().build(*network, device);
  ::unsetenv("KILN_TEST_DEVICE_REFUSE");
  const LayerSummary& conv = layerNamed(refused.report, "conv2");
  EXPECT_EQ(conv.precision, "tf32");  // a device backend's fp32 layers may use TF32
  EXPECT_EQ(conv.backend, "cpu-device");
  EXPECT_EQ(conv.precisionReason, "QuantizedConv is refused by KILN_TEST_DEVICE_REFUSE");
  EXPECT_EQ(layerNamed(refused.report, "gemm").precision, "int8");
}

// A cache without one of the tensors (made with other build options, or edited): that layer stays
// fp32 and says which scale it lacks; the others are int8.
TEST(Int8Build, ALayerWhoseScaleTheCacheLacksStaysFp32) {
  TempDir dir;
  auto network = convGemmNetwork();
  BuilderConfig config = int8Config(dir.calibration());
  config.calibration.cachePath = dir.file("model.cache");
  Builder().build(*network, config);
  std::string text;
  {
    const auto bytes = readFileBytes(config.calibration.cachePath);
    std::istringstream lines(std::string(bytes.begin(), bytes.end()));
    for (std::string line; std::getline(lines, line);)
      if (line.rfind("f: ", 0) != 0) text += line + "\n";  // drop the Gemm's input
  }
  writeFileAtomically(config.calibration.cachePath, text);
  config.calibration.dataPath.clear();
  const BuildResult built = Builder().build(*network, config);
  EXPECT_EQ(layerNamed(built.report, "conv2").precision, "int8");
  EXPECT_EQ(layerNamed(built.report, "gemm").precision, "fp32");
  EXPECT_EQ(layerNamed(built.report, "gemm").precisionReason.rfind("no calibration scale for its input 'f'", 0), 0u)
      << layerNamed(built.report, "gemm").precisionReason;
}

// A Conv whose result only another int8 Conv reads writes it as int8 (ChainInt8Activations): the
// reader takes it as given, and the engine's output is the one of the same model where a graph
// output also reads that result in float (so it stays float), bit for bit.
TEST(Int8Build, AResultOnlyInt8LayersReadCrossesAsInt8WithTheSameOutputs) {
  auto model = [](bool exposeHidden) {
    ModelBuilder mb;
    mb.input("x", kFloat, {2, 8, 6, 6}).output("y");
    mb.initializer("w1", test::randomFloats({16, 8, 3, 3}, 11)).initializer("b1", test::randomFloats({16}, 12));
    mb.initializer("w2", test::randomFloats({16, 16, 1, 1}, 13));
    ModelBuilder::setInts(mb.node("Conv", {"x", "w1", "b1"}, {"c1"}, "conv1"), "pads", {1, 1, 1, 1});
    mb.node("Relu", {"c1"}, {"r1"}, "relu1");
    mb.node("Conv", {"r1", "w2"}, {"y"}, "conv2");
    if (exposeHidden) mb.output("r1");
    return OnnxImporter().importBytes(mb.bytes());
  };
  TempDir dir;
  const BuilderConfig config = minMaxConfigWithOneBatch(dir, 14);
  const BuildResult chained = Builder().build(*model(false), config);
  const BuildResult unchained = Builder().build(*model(true), config);
  EXPECT_EQ(layerNamed(chained.report, "conv1").outputs.at(0).dtype, "int8");
  EXPECT_EQ(layerNamed(unchained.report, "conv1").outputs.at(0).dtype, "float32");
  EXPECT_EQ(layerNamed(chained.report, "conv2").inputs.at(0).dtype, "int8");
  EXPECT_EQ(chained.report.calibration.scales, unchained.report.calibration.scales);
  const HostTensor x = test::randomFloats({2, 8, 6, 6}, 15);
  const HostTensor a = Runtime().load(chained.plan)->createExecutionContext()->run({{"x", x}}).at("y");
  const HostTensor b = Runtime().load(unchained.plan)->createExecutionContext()->run({{"x", x}}).at("y");
  ASSERT_EQ(a.elementCount(), b.elementCount());
  EXPECT_EQ(std::memcmp(a.rawData(), b.rawData(), a.byteSize()), 0) << "the int8 chain changed the outputs";
}

// A ResNet bottleneck: the block's input b (conv0's result) is read by its first 1x1 convolution as
// its activation and by its last one as the residual it adds before the Relu. ChainInt8Activations
// has conv0 write b as int8 at conv1's scale and the last convolution add float(b_q) * scale (input
// 11). A float reader of b (a Sigmoid) keeps it float. Both engines stay close to fp32.
TEST(Int8Build, ABlockInputReadAsActivationAndAsResidualCrossesAsInt8) {
  auto model = [](bool floatReader) {
    return OnnxImporter().importBytes(test::residualBlockModel({2, 8, 6, 6}, 16, floatReader));
  };
  TempDir dir;
  BuilderConfig config = minMaxConfigWithOneBatch(dir, 27);
  config.int8Residuals = true;
  const BuildResult chained = Builder().build(*model(false), config);
  const BuildResult floatRead = Builder().build(*model(true), config);
  // The layer that reads b as its residual: the last convolution with the Add fused in.
  auto residualReader = [](const BuildReport& report) -> const LayerSummary& {
    for (const LayerSummary& l : report.layers)
      if (l.inputs.size() > 3 && l.inputs[3].name == "b") return l;
    throw std::runtime_error("no layer reads 'b' as its residual");
  };
  EXPECT_EQ(layerNamed(chained.report, "conv0").outputs.at(0).dtype, "int8");
  EXPECT_EQ(layerNamed(chained.report, "conv1").inputs.at(0).dtype, "int8");
  const LayerSummary& conv3 = residualReader(chained.report);
  EXPECT_EQ(conv3.precision, "int8");
  EXPECT_EQ(conv3.inputs.at(3).dtype, "int8");
  ASSERT_GT(conv3.inputs.size(), 11u);
  EXPECT_EQ(conv3.inputs.at(11).dtype, "float32");
  EXPECT_EQ(layerNamed(floatRead.report, "conv0").outputs.at(0).dtype, "float32");
  EXPECT_EQ(residualReader(floatRead.report).inputs.at(3).dtype, "float32");
  bool noted = false;
  for (const PassRecord& record : chained.report.passes)
    if (record.name == "ChainInt8Activations")
      for (const std::string& note : record.changes) noted = noted || note.find("int8 residual") != std::string::npos;
  EXPECT_TRUE(noted) << "the pass's note names the residual reader";

  const HostTensor x = test::randomFloats({2, 8, 6, 6}, 28);
  const HostTensor expected = ReferenceExecutor(model(false)).run({{"x", x}}).at("y").tensor;
  const HostTensor a = Runtime().load(chained.plan)->createExecutionContext()->run({{"x", x}}).at("y");
  const HostTensor b = Runtime().load(floatRead.plan)->createExecutionContext()->run({{"x", x}}).at("y");
  EXPECT_GT(agreement(a, expected).cosine, 0.995);
  EXPECT_GT(agreement(b, expected).cosine, 0.995);
}

// A ResNet stage's first block: the Add takes a 1x1 convolution of the block input (the shortcut),
// so one of the two convolutions' results is read only as the other's residual. The calibration
// covers that residual, and ChainInt8Activations gives it its own scale: it crosses as int8.
TEST(Int8Build, AResultOnlyAResidualReadsCrossesAsInt8AtItsCalibratedScale) {
  const auto network = OnnxImporter().importBytes(test::residualBlockModel({2, 8, 6, 6}, 16, false, true));
  TempDir dir;
  BuilderConfig config = minMaxConfigWithOneBatch(dir, 29);
  config.int8Residuals = true;
  const BuildResult built = Builder().build(*network, config);
  const LayerSummary* reader = nullptr;
  for (const LayerSummary& l : built.report.layers)
    if (l.inputs.size() > 3 && (l.inputs[3].name == "d" || l.inputs[3].name == "c3")) reader = &l;
  ASSERT_NE(reader, nullptr) << "the Add is fused into one of the two convolutions";
  EXPECT_EQ(reader->precision, "int8");
  EXPECT_EQ(reader->inputs[3].dtype, "int8");
  EXPECT_EQ(built.report.calibration.scales.count(reader->inputs[3].name), 1u);
  const HostTensor x = test::randomFloats({2, 8, 6, 6}, 30);
  const HostTensor expected = ReferenceExecutor(network).run({{"x", x}}).at("y").tensor;
  EXPECT_GT(agreement(runPlan(built.plan, x), expected).cosine, 0.995);

  // Without int8Residuals (the default) the residual stays float.
  config.int8Residuals = false;
  const BuildResult floatResidual = Builder().build(*network, config);
  for (const LayerSummary& l : floatResidual.report.layers)
    if (l.inputs.size() > 3 && l.inputs[3].name == reader->inputs[3].name) EXPECT_NE(l.inputs[3].dtype, "int8");
}

// --quantize-where-faster: every candidate is either quantized or kept fp32 with both times in its
// reason, the fp32 one not slower; a layer pinned to int8 is not questioned; an untimed build
// (optimisation level 1) cannot compare and quantizes every candidate.
TEST(Int8Build, QuantizeWhereFasterKeepsALayerFloatOnlyWhereItTimedFaster) {
  TempDir dir;
  auto network = convGemmNetwork();
  BuilderConfig config = int8Config(dir.calibration());
  config.quantizeWhereFaster = true;
  config.layerPrecisions["conv1"] = Precision::kINT8;
  const BuildResult built = Builder().build(*network, config);
  EXPECT_EQ(layerNamed(built.report, "conv1").precision, "int8");
  for (const char* name : {"conv2", "gemm"}) {
    const LayerSummary& layer = layerNamed(built.report, name);
    std::cout << "[ measured ] " << name << ": " << layer.precision << " " << layer.precisionReason << "\n";
    if (layer.precision == "int8") continue;
    EXPECT_EQ(layer.precision, "fp32") << name;
    const size_t at = layer.precisionReason.find("faster in fp32 (");
    ASSERT_NE(at, std::string::npos) << layer.precisionReason;
    double asFloat = 0, asInt8 = 0;
    ASSERT_EQ(std::sscanf(layer.precisionReason.c_str() + at, "faster in fp32 (%lf ms against int8 %lf ms", &asFloat,
                          &asInt8),
              2)
        << layer.precisionReason;
    EXPECT_LE(asFloat, asInt8) << name;
  }
  const HostTensor heldOut = images(4, 7);
  const HostTensor expected = ReferenceExecutor(network).run({{"x", heldOut}}).at("y").tensor;
  EXPECT_GT(agreement(runPlan(built.plan, heldOut), expected).cosine, 0.998);

  // The timing reports its progress and cancels.
  RecordingObserver observer;
  observer.cancelAt = "precision timing";
  try {
    Builder().build(*network, config, &observer);
    ADD_FAILURE() << "the build was not cancelled";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kCancelled) << e.what();
  }

  config.optimizationLevel = 1;
  config.layerPrecisions.clear();
  const BuildResult untimed = Builder().build(*network, config);
  for (const char* name : {"conv1", "conv2", "gemm"}) EXPECT_EQ(layerNamed(untimed.report, name).precision, "int8");
}
