// The precision tools on openWakeWord's embedding CNN built INT8 (calibrated on the features of
// three sentences) and judged on the features of two other sentences: with the minmax calibrator
// the bisection keeps one or two convolutions in FP32 and the advisor ranks the one it keeps worst
// and suggests the same; with entropy calibration, whose clipping spreads the error over every
// layer, the bisection keeps a larger set. Independent builds with the constraints meet the
// criterion.
#include "models/support/embedding_data.h"
#include "models/support/engine_checks.h"
#include "models/support/model_files.h"
#include "common/precision_models.h"

#include <kiln/onnx_importer.h>
#include <kiln/precision_bisect.h>
#include <kiln/quantization_advisor.h>

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>

using namespace kiln;
using namespace kiln::test;
namespace fs = std::filesystem;

namespace {

constexpr const char* kModel = "embedding_model.onnx";
constexpr const char* kMelModel = "melspectrogram.onnx";

std::string joined(const std::vector<std::string>& layers) {
  std::string text;
  for (const auto& l : layers) text += (text.empty() ? "" : " ") + l;
  return text;
}

class EmbeddingPrecision : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!whyModelMissing(kModel).empty() || !whyModelMissing(kMelModel).empty()) return;
    dir_ = fs::temp_directory_path() / ("kiln_embedding_precision_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    auto mel = owkw::referenceModel(OnnxImporter().importFile(modelPath(kMelModel).string()));
    calibrationBatches_ = owkw::writeCalibrationWindows(mel, dir_);
    // The held-out windows in batches of 16.
    for (const HostTensor& clip : owkw::heldOutWindows(mel))
      for (int64_t first = 0; first < clip.dim(0); first += 16)
        options_.inputs.push_back({{"input_1", owkw::rows(clip, first, std::min<int64_t>(16, clip.dim(0) - first))}});
    options_.config.allowINT8 = true;
    options_.config.backend = testBackend();
    options_.config.allowTF32 = false;
    options_.config.calibration.dataPath = dir_.string();
    options_.config.calibration.calibrator = CalibratorKind::kEntropy;
    // The trials' scales, reused by the independent builds: a fresh calibration may differ in the
    // last bits (its FP32 engine's tactics are timed).
    options_.config.calibration.cachePath = (dir_ / "int8.cache").string();
    options_.config.profiles = {
        {{{"input_1", rangeAlong({1, owkw::kWindowFrames, owkw::kMelBins, 1}, 0, 1, 16, 16)}}}};
    options_.criterion.metric = AccuracyCriterion::Metric::kCosine;
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // The held-out score of an engine built with `constraints`.
  AccuracyScore scoreWith(const Network& network, const LayerPrecisions& constraints) const {
    return scoreBuild(network, options_.config, constraints, options_.inputs, options_.criterion);
  }

  fs::path dir_;
  int calibrationBatches_ = 0;
  PrecisionDebugOptions options_;
};

}  // namespace

TEST_F(EmbeddingPrecision, BisectionAndAdvisorAgreeOnTheOneConvolutionToKeepWithMinmax) {
  KILN_REQUIRE_MODEL(kModel);
  KILN_REQUIRE_MODEL(kMelModel);
  if (calibrationBatches_ == 0) GTEST_SKIP() << "SKIPPED: " << owkw::whyNoSpeech();
  auto network = OnnxImporter().importFile(modelPath(kModel).string());
  options_.config.calibration.calibrator = CalibratorKind::kMinMax;
  options_.criterion.minCosine = 0.9975;
  const PrecisionBisectResult r = bisectPrecision(*network, options_);
  std::cout << "[ measured ] minmax: " << r.trials.size() << " builds; worst cosine " << r.reducedScore.worstCosine
            << " all int8, " << r.finalScore.worstCosine << " keeping " << joined(r.keep) << "\n";
  EXPECT_EQ(r.candidates.size(), 20u) << "the CNN's 20 convolutions";
  EXPECT_FALSE(r.reducedPasses);
  ASSERT_FALSE(r.keep.empty());
  EXPECT_LE(r.keep.size(), 2u) << "one or two convolutions, not a block of the network";
  const AccuracyScore fixed = scoreWith(*network, r.constraints(options_.config));
  std::cout << "[ measured ] independent build with the constraints: worst cosine " << fixed.worstCosine << "\n";
  EXPECT_TRUE(fixed.pass);
  EXPECT_LT(fixed.worstCosine, 1 - 1e-4) << "the other convolutions are still int8";

  QuantizationAdvisorOptions advisor;
  advisor.profileIterations = 3;
  const QuantizationAdvice advice = adviseQuantization(*network, options_, advisor);
  ASSERT_EQ(advice.layers.size(), 20u);
  for (const auto& l : advice.layers)
    std::cout << "[ measured ] " << l.name << ": 1 - cosine alone " << l.alone.error << (l.keep ? " (keep)" : "") << "\n";
  EXPECT_EQ(advice.layers.front().name, r.keep.front()) << "the advisor ranks the bisection's layer worst";
  EXPECT_GT(advice.layers.front().alone.error, 2 * advice.layers[1].alone.error) << "by a clear margin";
  EXPECT_EQ(advice.keep, r.keep);
  EXPECT_TRUE(advice.suggestedScore.pass);
}

TEST_F(EmbeddingPrecision, WithEntropyCalibrationTheBisectionKeepsASetThatMeetsTheCriterion) {
  KILN_REQUIRE_MODEL(kModel);
  KILN_REQUIRE_MODEL(kMelModel);
  if (calibrationBatches_ == 0) GTEST_SKIP() << "SKIPPED: " << owkw::whyNoSpeech();
  auto network = OnnxImporter().importFile(modelPath(kModel).string());
  options_.criterion.minCosine = 0.99;  // entropy clips every activation: the error is spread out
  const PrecisionBisectResult r = bisectPrecision(*network, options_);
  std::cout << "[ measured ] entropy: " << r.trials.size() << " builds; worst cosine " << r.reducedScore.worstCosine
            << " all int8, " << r.finalScore.worstCosine << " keeping " << r.keep.size() << ": " << joined(r.keep)
            << "\n";
  EXPECT_FALSE(r.reducedPasses);
  ASSERT_FALSE(r.keep.empty());
  EXPECT_LT(r.keep.size(), r.candidates.size());
  const AccuracyScore fixed = scoreWith(*network, r.constraints(options_.config));
  EXPECT_TRUE(fixed.pass) << fixed.worstCosine;
  EXPECT_FALSE(scoreWith(*network, {}).pass);
}

// FP8 (e4m3, minmax): all-fp8 misses cosine 0.99 because the first convolution, which reads the
// raw mel features ([3.4, 12.3], differences of neighbours), loses to e4m3's relative rounding;
// the bisection keeps it (and at most a few more), and the engine with those constraints meets
// 0.99 while its other convolutions are still fp8.
TEST_F(EmbeddingPrecision, WithFp8TheBisectionKeepsTheFirstConvolutionAndMeets099) {
  KILN_REQUIRE_MODEL(kModel);
  KILN_REQUIRE_MODEL(kMelModel);
  if (calibrationBatches_ == 0) GTEST_SKIP() << "SKIPPED: " << owkw::whyNoSpeech();
  auto network = OnnxImporter().importFile(modelPath(kModel).string());
  options_.config.allowINT8 = false;
  options_.config.allowFP8 = true;
  options_.config.calibration.calibrator = CalibratorKind::kMinMax;
  options_.config.calibration.cachePath = (dir_ / "fp8.cache").string();
  options_.criterion.minCosine = 0.99;
  const PrecisionBisectResult r = bisectPrecision(*network, options_);
  std::cout << "[ measured ] fp8 minmax: " << r.trials.size() << " builds; worst cosine " << r.reducedScore.worstCosine
            << " all fp8, " << r.finalScore.worstCosine << " keeping " << joined(r.keep) << "\n";
  EXPECT_EQ(r.candidates.size(), 20u) << "the CNN's 20 convolutions";
  EXPECT_FALSE(r.reducedPasses);
  ASSERT_FALSE(r.keep.empty());
  EXPECT_EQ(r.keep.front(), r.candidates.front()) << "the convolution that reads the mel features";
  EXPECT_LE(r.keep.size(), 3u);
  const AccuracyScore fixed = scoreWith(*network, r.constraints(options_.config));
  std::cout << "[ measured ] independent fp8 build with the constraints: worst cosine " << fixed.worstCosine << "\n";
  EXPECT_TRUE(fixed.pass);
  EXPECT_GE(fixed.worstCosine, 0.99);
  EXPECT_LT(fixed.worstCosine, 1 - 1e-4) << "the other convolutions are still fp8";
}
