// The builder and the CPU engine end to end on the bundled sample model (TinyResNet).
#include <kiln/builder.h>
#include <kiln/compare.h>
#include <kiln/error.h>
#include <kiln/onnx_importer.h>
#include <kiln/reference_executor.h>
#include <kiln/runners.h>
#include <kiln/runtime.h>

#include "common/test_models.h"

#include <gtest/gtest.h>

#include <filesystem>

using namespace kiln;

namespace {

std::string samplePath() { return std::string(KILN_SOURCE_DIR) + "/resources/models/sample.onnx"; }

BuilderConfig sampleConfig() {
  BuilderConfig config;
  config.profiles.push_back({{{"image", ShapeRange{{1, 3, 64, 64}, {2, 3, 64, 64}, {4, 3, 64, 64}}}}});
  return config;
}

std::map<std::string, HostTensor> sampleInput(int64_t batch, uint32_t seed) {
  return {{"image", test::randomFloats({batch, 3, 64, 64}, seed)}};
}

class Cancelling : public BuildObserver {
 public:
  explicit Cancelling(std::string phase) : phase_(std::move(phase)) {}
  void progress(const BuildProgress& p) override { seen_ = seen_ || p.phase == phase_; }
  bool cancelled() override { return seen_; }

 private:
  std::string phase_;
  bool seen_ = false;
};

}  // namespace

TEST(Engine, OptimisedFp32EngineMatchesTheOnnxModel) {
  auto network = OnnxImporter().importFile(samplePath());
  BuildResult built = Builder().build(*network, sampleConfig());
  // Conv+BN+Relu chains fuse: far fewer engine layers than ONNX nodes, each naming its origins.
  EXPECT_LT(built.report.layers.size(), network->layers().size() / 2);
  bool sawFusion = false;
  for (const auto& l : built.report.layers) sawFusion = sawFusion || l.origins.size() >= 3;
  EXPECT_TRUE(sawFusion);
  EXPECT_LT(built.report.peakActivationBytes, built.report.naiveActivationBytes);

  auto engine = Runtime().load(built.plan);
  auto inputs = sampleInput(3, 11);
  auto report = compareRunners(makeReferenceRunner(network), makeEngineRunner(engine), inputs, {1e-5, 1e-4}, false);
  ASSERT_EQ(report.outputs.size(), 1u);
  EXPECT_TRUE(report.pass) << report.toJson();
  EXPECT_GT(report.outputs[0].cosineSimilarity, 0.99999);
}

TEST(Engine, Fp16StorageLosesALittleAccuracyAndHalvesWeights) {
  auto network = OnnxImporter().importFile(samplePath());
  BuilderConfig fp32 = sampleConfig();
  BuilderConfig fp16 = sampleConfig();
  fp16.allowFP16 = true;
  BuildResult wide = Builder().build(*network, fp32);
  BuildResult narrow = Builder().build(*network, fp16);
  EXPECT_LT(narrow.report.weightBytes, wide.report.weightBytes * 6 / 10);
  int fp16Layers = 0;
  for (const auto& l : narrow.report.layers) fp16Layers += l.precision == "fp16";
  EXPECT_GT(fp16Layers, 0);
  auto engine = Runtime().load(narrow.plan);
  auto report = compareRunners(makeReferenceRunner(network), makeEngineRunner(engine), sampleInput(2, 5),
                               {1e-2, 1e-2}, true);
  ASSERT_EQ(report.outputs.size(), 1u);
  EXPECT_GT(report.outputs[0].maxAbsError, 0.0);  // fp16 rounding is visible...
  EXPECT_TRUE(report.pass) << report.toJson();    // ...but small
  EXPECT_FALSE(report.layers.empty());            // per-layer errors were measured
}

TEST(Engine, CancellingTheBuildStopsItWithoutOutput) {
  auto network = OnnxImporter().importFile(samplePath());
  auto dir = std::filesystem::temp_directory_path() / "kiln_cancel_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  BuilderConfig config = sampleConfig();
  config.timingCachePath = (dir / "cache.json").string();
  for (const char* phase : {"passes", "tactics", "memory", "serialize"}) {
    Cancelling observer(phase);
    try {
      Builder().build(*network, config, &observer);
      FAIL() << "the build should stop at " << phase;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kCancelled);
    }
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir));
  std::filesystem::remove_all(dir);
}

TEST(Engine, ProfileErrorsNameTheInputAndDimension) {
  auto network = OnnxImporter().importFile(samplePath());
  auto expectError = [&](BuilderConfig config, const std::string& fragment) {
    try {
      Builder().build(*network, config);
      FAIL() << "expected an error mentioning " << fragment;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  expectError(BuilderConfig{}, "dynamic shape");  // N is dynamic and no profile is given
  BuilderConfig reversed = sampleConfig();
  reversed.profiles[0].inputs["image"] = {{4, 3, 64, 64}, {2, 3, 64, 64}, {1, 3, 64, 64}};
  expectError(reversed, "min <= opt <= max");
  BuilderConfig wrongRank = sampleConfig();
  wrongRank.profiles[0].inputs["image"] = {{1, 3, 64}, {1, 3, 64}, {1, 3, 64}};
  expectError(wrongRank, "rank");
  BuilderConfig fixedDim = sampleConfig();
  fixedDim.profiles[0].inputs["image"] = {{1, 3, 32, 64}, {1, 3, 64, 64}, {1, 3, 64, 64}};
  expectError(fixedDim, "dimension 2 is fixed at 64");
  BuilderConfig unknown = sampleConfig();
  unknown.profiles[0].inputs["nope"] = {{1}, {1}, {1}};
  expectError(unknown, "'nope'");
}

TEST(Engine, ShapesOutsideTheProfileAreRefusedAtRunTime) {
  auto network = OnnxImporter().importFile(samplePath());
  auto engine = Runtime().load(Builder().build(*network, sampleConfig()).plan);
  auto context = engine->createExecutionContext();
  EXPECT_NO_THROW(context->run(sampleInput(4, 1)));
  try {
    context->run(sampleInput(5, 1));
    FAIL() << "batch 5 is outside the profile";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("'image' dimension 0 is 5"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[1, 4]"), std::string::npos) << msg;
  }
}
