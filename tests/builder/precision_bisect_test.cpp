// kiln::bisectPrecision on small models with one layer made precision-sensitive: the fp16
// overflow and the int8 outlier reader are found (bisection, then refinement; the bisection's
// prefix alone without it), the constraints they give make an independent build pass, a build
// that passes as it is holds nothing back, a model that fails even in FP32 is reported as such,
// the FP32-engine reference agrees with the model reference, and progress, cancel and bad options
// behave.
#include <kiln/builder.h>
#include <kiln/error.h>
#include <kiln/onnx_importer.h>
#include <kiln/precision_bisect.h>

#include "common/precision_models.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <iostream>

using namespace kiln;
namespace fs = std::filesystem;

namespace {

std::shared_ptr<Network> imported(const test::ModelBuilder& mb) { return OnnxImporter().importBytes(mb.bytes()); }

// A folder of calibration batches for int8OutlierModel, removed afterwards.
class CalibrationFolder {
 public:
  CalibrationFolder()
      : path_(fs::temp_directory_path() / ("kiln_bisect_calib_" + std::to_string(::getpid()) + "_" +
                                           ::testing::UnitTest::GetInstance()->current_test_info()->name())) {
    test::writeOutlierBatches(path_.string());
  }
  ~CalibrationFolder() { fs::remove_all(path_); }
  std::string path() const { return path_.string(); }

 private:
  fs::path path_;
};

AccuracyScore buildAndScore(const Network& network, const PrecisionDebugOptions& o, const LayerPrecisions& constraints) {
  return test::scoreBuild(network, o.config, constraints, o.inputs, o.criterion);
}

std::vector<std::string> phasesOf(const PrecisionBisectResult& r) {
  std::vector<std::string> phases;
  for (const auto& t : r.trials) phases.push_back(t.phase);
  return phases;
}

// Counts trials and progress calls; cancels after `cancelAfter` trials, or once progress names
// `cancelWhen`.
class CountingObserver : public PrecisionDebugObserver {
 public:
  int trials = 0, progressCalls = 0, cancelAfter = -1;
  std::string cancelWhen;
  void trial(const PrecisionTrial&) override { ++trials; }
  void progress(const std::string& what, double) override {
    ++progressCalls;
    cancelNow_ = cancelNow_ || (!cancelWhen.empty() && what.find(cancelWhen) != std::string::npos);
  }
  bool cancelled() override { return cancelNow_ || (cancelAfter >= 0 && trials >= cancelAfter); }

 private:
  bool cancelNow_ = false;
};

}  // namespace

TEST(PrecisionBisect, FindsTheLayerThatOverflowsFp16AndItsConstraintMakesTheBuildPass) {
  auto network = imported(test::fp16OverflowModel());
  const PrecisionDebugOptions o = test::fp16OverflowOptions();
  CountingObserver observer;
  const PrecisionBisectResult r = bisectPrecision(*network, o, {}, &observer);
  EXPECT_EQ(r.candidates, (std::vector<std::string>{"mm1", "mm2", "amplify", "shrink"}));
  EXPECT_FALSE(r.reducedPasses);
  EXPECT_TRUE(std::isinf(r.reducedScore.error)) << "fp16 overflowed to inf, then inf - inf";
  EXPECT_TRUE(r.allKeptPasses);
  EXPECT_EQ(r.keep, std::vector<std::string>{"amplify"});
  EXPECT_TRUE(r.finalScore.pass);
  EXPECT_GT(r.finalScore.error, 0.0) << "the other layers still run in fp16";
  std::cout << "[ measured ] fp16 with 'amplify' in fp32: 1 - cosine " << r.finalScore.error << "\n";
  // reduced, all kept, bisect (2 of 4 fails, 3 of 4 passes), refine (release mm1, release mm2).
  EXPECT_EQ(phasesOf(r), (std::vector<std::string>{"reduced", "all kept", "bisect", "bisect", "refine", "refine"}));
  EXPECT_EQ(observer.trials, int(r.trials.size()));
  EXPECT_GT(observer.progressCalls, observer.trials);

  const LayerPrecisions constraints = r.constraints(o.config);
  EXPECT_EQ(constraints, (LayerPrecisions{{"amplify", Precision::kFP32}}));
  EXPECT_TRUE(buildAndScore(*network, o, constraints).pass);
  EXPECT_FALSE(buildAndScore(*network, o, {}).pass);
  EXPECT_FALSE(buildAndScore(*network, o, {{"mm1", Precision::kFP32}, {"mm2", Precision::kFP32}}).pass);
}

TEST(PrecisionBisect, WithoutRefinementItReportsTheBisectionsPrefixAsPolygraphyDoes) {
  auto network = imported(test::fp16OverflowModel());
  PrecisionBisectOptions bisect;
  bisect.refine = false;
  const PrecisionBisectResult r = bisectPrecision(*network, test::fp16OverflowOptions(), bisect);
  EXPECT_EQ(r.keep, (std::vector<std::string>{"mm1", "mm2", "amplify"}));
  EXPECT_EQ(phasesOf(r), (std::vector<std::string>{"reduced", "all kept", "bisect", "bisect"}));
}

TEST(PrecisionBisect, FindsTheLayerThatReadsAnOutlierChannelInInt8) {
  CalibrationFolder calibration;
  auto network = imported(test::int8OutlierModel());
  const PrecisionDebugOptions o = test::int8OutlierOptions(calibration.path());
  const PrecisionBisectResult r = bisectPrecision(*network, o);
  EXPECT_EQ(r.candidates, (std::vector<std::string>{"mm1", "mixer", "head"}));
  EXPECT_FALSE(r.reducedPasses);
  EXPECT_EQ(r.keep, std::vector<std::string>{"mixer"});
  std::cout << "[ measured ] int8: worst cosine " << r.reducedScore.worstCosine << " with every layer int8, "
            << r.finalScore.worstCosine << " with 'mixer' in fp32\n";
  EXPECT_LT(r.reducedScore.worstCosine, 0.99);
  EXPECT_LT(r.finalScore.worstCosine, 1.0) << "mm1 and head are still quantized";
  EXPECT_TRUE(buildAndScore(*network, o, r.constraints(o.config)).pass);
}

TEST(PrecisionBisect, TheConfigsOwnConstraintsHoldAndAreNotCandidates) {
  CalibrationFolder calibration;
  auto network = imported(test::int8OutlierModel());
  PrecisionDebugOptions o = test::int8OutlierOptions(calibration.path());
  o.config.layerPrecisions["head"] = Precision::kFP32;
  const PrecisionBisectResult r = bisectPrecision(*network, o);
  EXPECT_EQ(r.candidates, (std::vector<std::string>{"mm1", "mixer"}));
  EXPECT_EQ(r.keep, std::vector<std::string>{"mixer"});
  EXPECT_EQ(r.constraints(o.config), (LayerPrecisions{{"head", Precision::kFP32}, {"mixer", Precision::kFP32}}));
}

TEST(PrecisionBisect, ABuildThatPassesAsItIsHoldsNothingBack) {
  // bf16 has fp32's range: 'amplify' does not overflow, and 8 bits of mantissa keep cosine 0.999.
  auto network = imported(test::fp16OverflowModel());
  PrecisionDebugOptions o = test::fp16OverflowOptions();
  o.config.allowFP16 = false;
  o.config.allowBF16 = true;
  o.criterion.minCosine = 0.999;
  const PrecisionBisectResult r = bisectPrecision(*network, o);
  EXPECT_TRUE(r.reducedPasses);
  EXPECT_TRUE(r.keep.empty());
  EXPECT_LT(r.reducedScore.worstCosine, 1.0) << "bf16 really ran";
  EXPECT_EQ(phasesOf(r), std::vector<std::string>{"reduced"});
}

TEST(PrecisionBisect, AModelThatFailsEvenInFp32IsReportedAsSuch) {
  auto network = imported(test::unseededRandomModel());
  const PrecisionBisectResult r = bisectPrecision(*network, test::fp16OverflowOptions());
  EXPECT_FALSE(r.reducedPasses);
  EXPECT_FALSE(r.allKeptPasses);
  EXPECT_TRUE(r.keep.empty());
  EXPECT_FALSE(r.finalScore.pass);
  EXPECT_EQ(phasesOf(r), (std::vector<std::string>{"reduced", "all kept"}));
}

TEST(PrecisionBisect, AnFp32EngineReferenceFindsTheSameLayer) {
  auto network = imported(test::fp16OverflowModel());
  PrecisionDebugOptions o = test::fp16OverflowOptions();
  o.reference = ReferenceKind::kFp32Engine;
  EXPECT_EQ(bisectPrecision(*network, o).keep, std::vector<std::string>{"amplify"});
}

TEST(PrecisionBisect, ToleranceCriterionScoresByTheWorstToleranceRatio) {
  auto network = imported(test::fp16OverflowModel());
  PrecisionDebugOptions o = test::fp16OverflowOptions();
  o.criterion.metric = AccuracyCriterion::Metric::kTolerance;
  o.criterion.tolerance = {0.5, 2e-2};  // y is ~1e2: fp16 storage of the tanh outputs costs ~1e-3 relative
  const PrecisionBisectResult r = bisectPrecision(*network, o);
  EXPECT_EQ(r.keep, std::vector<std::string>{"amplify"});
  EXPECT_GT(r.finalScore.error, 0.0);
  EXPECT_LE(r.finalScore.error, 1.0);
}

TEST(PrecisionBisect, CancelStopsBetweenAndInsideBuilds) {
  auto network = imported(test::fp16OverflowModel());
  auto cancelledWith = [&](CountingObserver& observer) {
    try {
      bisectPrecision(*network, test::fp16OverflowOptions(), {}, &observer);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kCancelled) << e.what();
      return std::string(e.what());
    }
    ADD_FAILURE() << "not cancelled";
    return std::string();
  };
  CountingObserver between;
  between.cancelAfter = 2;
  EXPECT_NE(cancelledWith(between).find("precision trials were cancelled"), std::string::npos);
  EXPECT_EQ(between.trials, 2);
  CountingObserver inside;
  inside.cancelWhen = "trial 2 (all kept): tactics";
  EXPECT_NE(cancelledWith(inside).find("build was cancelled during tactics"), std::string::npos);
  EXPECT_EQ(inside.trials, 1);
}

TEST(PrecisionBisect, OptionsItCannotUseAreRefusedWithTheReason) {
  auto network = imported(test::fp16OverflowModel());
  auto refused = [&](PrecisionDebugOptions o, const std::string& fragment) {
    try {
      bisectPrecision(*network, o);
      ADD_FAILURE() << "accepted; expected: " << fragment;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  PrecisionDebugOptions o = test::fp16OverflowOptions();
  o.inputs.clear();
  refused(o, "at least one set of inputs");
  o = test::fp16OverflowOptions();
  o.config.allowFP16 = false;
  refused(o, "allows no reduced precision");
  o = test::fp16OverflowOptions();
  o.keepPrecision = Precision::kINT8;
  refused(o, "cannot be held back in int8");
  o = test::fp16OverflowOptions();
  o.keepPrecision = Precision::kFP16;  // the fp16 build runs nothing below fp16
  refused(o, "runs no layer below fp16");
  o = test::fp16OverflowOptions();
  o.config.layerPrecisions["nope"] = Precision::kFP32;
  refused(o, "names no layer");
}
