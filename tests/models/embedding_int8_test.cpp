// openWakeWord's embedding CNN built INT8: calibrated on the mel features of some sentences
// (espeak-ng, through the melspectrogram model), checked on the features of other sentences: with
// the minmax and percentile calibrators each embedding stays within cosine 0.99 of FP32 (entropy:
// 0.9, see below), and the engine is really quantized (its error > 0, its Conv layers int8).
#include "models/support/embedding_data.h"
#include "models/support/engine_checks.h"
#include "models/support/model_files.h"
#include "models/support/openwakeword.h"

#include <kiln/builder.h>
#include <kiln/onnx_importer.h>

#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>

using namespace kiln;
using namespace kiln::test;
namespace fs = std::filesystem;

namespace {

constexpr const char* kModel = "embedding_model.onnx";
constexpr const char* kMelModel = "melspectrogram.onnx";

double cosine(const float* a, const float* b, int64_t n) {
  double dot = 0, na = 0, nb = 0;
  for (int64_t i = 0; i < n; ++i) {
    dot += double(a[i]) * b[i];
    na += double(a[i]) * a[i];
    nb += double(b[i]) * b[i];
  }
  return dot / std::sqrt(na * nb);
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
  const OptimizationProfile profile = {{{"input_1", rangeAlong({1, owkw::kWindowFrames, owkw::kMelBins, 1}, 0, 1, 8, 16)}}};
  auto fp32 = buildEngine(*network, false, {profile})->createExecutionContext();
  for (CalibratorKind calibrator : {CalibratorKind::kEntropy, CalibratorKind::kMinMax, CalibratorKind::kPercentile}) {
    SCOPED_TRACE(toString(calibrator));
    BuilderConfig config;
    config.allowINT8 = true;
    config.allowTF32 = false;
    if (const char* backend = std::getenv("KILN_TEST_BACKEND"))
      if (auto kind = parseBackendKind(backend)) config.backend = *kind;
    config.calibration.dataPath = dir_.string();
    config.calibration.calibrator = calibrator;
    config.profiles = {profile};
    const BuildResult built = Builder().build(*network, config);
    int int8Convs = 0;
    for (const auto& l : built.report.layers) int8Convs += l.type == "kiln.QuantizedConv" && l.precision == "int8";
    EXPECT_EQ(int8Convs, 20) << "the CNN's 20 convolutions";
    EXPECT_EQ(built.report.calibration.batches, batches);
    auto int8 = Runtime().load(built.plan)->createExecutionContext();

    double worstCosine = 1, errorSquares = 0, referenceSquares = 0;
    int64_t windows = 0;
    for (const HostTensor& clip : heldOut) {
      for (int64_t first = 0; first < clip.dim(0); first += 16) {
        const HostTensor batch = owkw::rows(clip, first, std::min<int64_t>(16, clip.dim(0) - first));
        const HostTensor expected = runEngine(*fp32, {{"input_1", batch}}).at("conv2d_19");
        const HostTensor actual = runEngine(*int8, {{"input_1", batch}}).at("conv2d_19");
        for (int64_t w = 0; w < batch.dim(0); ++w, ++windows)
          worstCosine = std::min(worstCosine, cosine(actual.data<float>() + w * owkw::kEmbeddingSize,
                                                     expected.data<float>() + w * owkw::kEmbeddingSize,
                                                     owkw::kEmbeddingSize));
        for (int64_t i = 0; i < expected.elementCount(); ++i) {
          const double e = expected.data<float>()[i], d = actual.data<float>()[i] - e;
          errorSquares += d * d;
          referenceSquares += e * e;
        }
      }
    }
    const double relativeL2 = std::sqrt(errorSquares / referenceSquares);
    std::cout << "[ measured ] " << toString(calibrator) << ": " << windows << " held-out windows, worst cosine "
              << worstCosine << ", relative L2 " << relativeL2 << "\n";
    // Entropy calibration clips each activation at about a third of its largest value here; the
    // CNN's five MaxPools pass on exactly those largest values, so it loses more (measured: worst
    // cosine 0.92, relative L2 0.22) than minmax and percentile, which keep them.
    EXPECT_GE(worstCosine, calibrator == CalibratorKind::kEntropy ? 0.9 : 0.99);
    EXPECT_GT(relativeL2, 1e-4) << "int8 this close to fp32: the layers were not quantized";
  }
}
