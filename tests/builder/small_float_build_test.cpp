// FP8 and FP4 builds through the public Builder, calibrated as INT8 builds are: Conv and Gemm
// layers in fp8 e4m3 (weights float8e4m3 per channel) or NVFP4 (e2m1 codes with e4m3 block
// scales), really quantized (error > 0) and close to FP32 on inputs not used for calibration; the
// narrowest allowed precision per layer, --layer-precision choosing another; FP4's notice; one
// calibration cache shared by INT8 and FP8 builds; the report and precisions surviving the plan.
#include <kiln/builder.h>
#include <kiln/error.h>
#include <kiln/reference_executor.h>
#include <kiln/runtime.h>

#include "builder/support/quantized_builds.h"
#include "common/test_models.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <map>

using namespace kiln;
using namespace kiln::test::quantized_builds;

namespace {

BuilderConfig quantizedConfig(const std::string& data, Precision precision,
                              CalibratorKind calibrator = CalibratorKind::kMinMax) {
  BuilderConfig config = int8Config(data, calibrator);
  config.allowINT8 = precision == Precision::kINT8;
  config.allowFP8 = precision == Precision::kFP8;
  config.allowFP4 = precision == Precision::kFP4;
  return config;
}

}  // namespace

TEST(SmallFloatBuild, Fp8AndFp4LayersAreQuantizedAndStayCloseToFp32) {
  TempDir dir;
  auto network = convGemmNetwork();
  const HostTensor heldOut = images(4, 7);  // not among the calibration batches
  const HostTensor expected = ReferenceExecutor(network).run({{"x", heldOut}}).at("y").tensor;
  std::map<Precision, Agreement> measured;
  for (Precision precision : {Precision::kINT8, Precision::kFP8, Precision::kFP4}) {
    SCOPED_TRACE(toString(precision));
    const BuildResult built = Builder().build(*network, quantizedConfig(dir.calibration(), precision));
    const std::string weightType = precision == Precision::kFP8   ? "float8e4m3"
                                   : precision == Precision::kFP4 ? "uint8"
                                                                  : "int8";
    for (const char* name : {"conv1", "conv2", "gemm"}) {
      const LayerSummary& layer = layerNamed(built.report, name);
      EXPECT_EQ(layer.precision, toString(precision)) << name;
      EXPECT_EQ(layer.type, name[0] == 'g' ? "kiln.QuantizedMatMul" : "kiln.QuantizedConv") << name;
      EXPECT_EQ(layer.inputs[1].dtype, weightType) << name;
      if (precision == Precision::kFP4) EXPECT_EQ(layer.inputs.back().dtype, "float8e4m3") << "block scales";
    }
    bool notice = false;
    for (const auto& w : built.report.warnings) notice |= w.find("Blackwell GPUs only") != std::string::npos;
    EXPECT_EQ(notice, precision == Precision::kFP4);
    const Agreement a = agreement(runPlan(built.plan, heldOut), expected);
    measured[precision] = a;
    std::cout << "[ measured ] " << toString(precision) << " (minmax): relative L2 " << a.relativeL2 << ", cosine "
              << a.cosine << "\n";
    EXPECT_GT(a.relativeL2, 1e-4) << "an engine this close to fp32 was not quantized";
  }
  // Measured (relative L2, cosine): int8 0.017, 0.99986; fp8 0.056, 0.9985 (3 mantissa bits: on
  // these evenly spread random values int8's 255 even steps do better); fp4 0.22, 0.978.
  EXPECT_GT(measured[Precision::kFP8].cosine, 0.995);
  EXPECT_LT(measured[Precision::kFP8].relativeL2, 0.1);
  EXPECT_GT(measured[Precision::kFP4].cosine, 0.95);
  EXPECT_LT(measured[Precision::kFP4].relativeL2, 0.4);
  EXPECT_GT(measured[Precision::kFP4].relativeL2, measured[Precision::kFP8].relativeL2) << "fp4 loses more than fp8";
}

// With int8, fp8 and fp4 allowed each layer takes the narrowest; --layer-precision picks another
// one (or a float one) for a layer; the scales of one calibration serve every precision.
TEST(SmallFloatBuild, EachLayerTakesTheNarrowestAllowedPrecisionUnlessALayerPrecisionSaysOtherwise) {
  TempDir dir;
  auto network = convGemmNetwork();
  BuilderConfig config = quantizedConfig(dir.calibration(), Precision::kINT8);
  config.allowFP8 = true;
  config.calibration.cachePath = dir.file("shared.cache");
  config.layerPrecisions["conv2"] = Precision::kINT8;
  config.layerPrecisions["gemm"] = Precision::kFP32;
  const BuildResult built = Builder().build(*network, config);
  EXPECT_EQ(layerNamed(built.report, "conv1").precision, "fp8");
  EXPECT_EQ(layerNamed(built.report, "conv2").precision, "int8");
  EXPECT_EQ(layerNamed(built.report, "gemm").precision, "fp32");
  EXPECT_EQ(layerNamed(built.report, "gemm").precisionReason, "--layer-precision asks for fp32");

  BuilderConfig fp4Only = config;  // the cache the int8 + fp8 build wrote (x and r1), no data
  fp4Only.calibration.dataPath.clear();
  fp4Only.allowINT8 = fp4Only.allowFP8 = false;
  fp4Only.layerPrecisions = {{"conv1", Precision::kFP4}, {"conv2", Precision::kFP8}};
  const BuildResult fromCache = Builder().build(*network, fp4Only);
  EXPECT_EQ(fromCache.report.calibration.source, "cache");
  EXPECT_EQ(layerNamed(fromCache.report, "conv1").precision, "fp4");
  EXPECT_EQ(layerNamed(fromCache.report, "conv2").precision, "fp8");
  EXPECT_EQ(layerNamed(fromCache.report, "gemm").precision, "fp32") << "nothing asks for it to be quantized";
  EXPECT_EQ(layerNamed(fromCache.report, "gemm").precisionReason, "");
  // The plan keeps each layer's precision, and runs.
  auto engine = Runtime().load(fromCache.plan);
  EXPECT_EQ(layerNamed(engine->report(), "conv1").precision, "fp4");
  const HostTensor y = runPlan(fromCache.plan, images(2, 3));
  EXPECT_EQ(y.dims(), (std::vector<int64_t>{2, 5}));
}

// A device backend that refuses the quantized op (as the CUDA backend, without fp8 kernels, does)
// keeps those layers float there with its reason.
TEST(SmallFloatBuild, ALayerTheBackendRefusesStaysFloatWithTheReason) {
  TempDir dir;
  auto network = convGemmNetwork();
  BuilderConfig device = quantizedConfig(dir.calibration(), Precision::kFP8);
  device.backend = BackendKind::kTestDevice;
  ::setenv("KILN_TEST_DEVICE_REFUSE", "QuantizedConv", 1);
  const BuildResult refused = Builder().build(*network, device);
  ::unsetenv("KILN_TEST_DEVICE_REFUSE");
  EXPECT_EQ(layerNamed(refused.report, "conv2").precisionReason, "QuantizedConv is refused by KILN_TEST_DEVICE_REFUSE");
  EXPECT_EQ(layerNamed(refused.report, "gemm").precision, "fp8");
}
