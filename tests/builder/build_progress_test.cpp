// The builder on the CPU backend as a front end sees it: optimisation levels change how many
// tactic candidates are timed (and the report says which and why), progress names the layer and
// the tactic being timed, and a cancel during tactic timing stops the build with nothing written.
#include <kiln/builder.h>
#include <kiln/error.h>
#include <kiln/onnx_importer.h>

#include "common/test_models.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

using namespace kiln;

namespace {

// Three 3x3 convolutions with Relus, each of other channel counts: several CPU tactics each.
std::shared_ptr<Network> convChain() { return OnnxImporter().importBytes(test::convReluStack(3, 16, 20).bytes()); }

// Candidates with a time: measured now, or (a layer the same as an earlier one) from the cache.
size_t timedCandidates(const BuildReport& report) {
  size_t timed = 0;
  for (const auto& layer : report.layers)
    for (const auto& c : layer.tacticCandidates) timed += c.status == "timed" || c.status == "cached";
  return timed;
}

// Records what the builder reports; cancels at the first tactic timed when asked to.
class RecordingObserver : public BuildObserver {
 public:
  explicit RecordingObserver(bool cancelAtFirstTactic = false) : cancelAtFirstTactic_(cancelAtFirstTactic) {}
  void progress(const BuildProgress& p) override {
    if (p.phase == "tactics" && !p.tactic.empty()) tactics[p.layer].insert(p.tactic);
    if (p.phase == "tactics" && p.layer.empty()) ++tacticReportsWithoutLayer;
    fractions.push_back(p.fraction);
  }
  bool cancelled() override { return cancelAtFirstTactic_ && !tactics.empty(); }

  std::map<std::string, std::set<std::string>> tactics;  // layer -> tactics heard while it was timed
  int tacticReportsWithoutLayer = 0;
  std::vector<double> fractions;

 private:
  bool cancelAtFirstTactic_;
};

}  // namespace

TEST(BuildProgress, OptimizationLevelsChangeHowManyCandidatesAreTimed) {
  auto network = convChain();
  std::map<int, size_t> timed;
  for (int level = 0; level <= 5; ++level) {
    BuilderConfig config;
    config.optimizationLevel = level;
    const BuildReport report = Builder().build(*network, config).report;
    timed[level] = timedCandidates(report);
    for (const auto& layer : report.layers) {
      if (layer.tacticCandidates.size() < 2) continue;
      // Every candidate is in the report, the choice among them, untimed ones with the reason.
      bool chosenListed = false;
      for (const auto& c : layer.tacticCandidates) {
        chosenListed = chosenListed || c.tactic == layer.tactic;
        if (level <= 1 && c.tactic != layer.tactic)
          EXPECT_EQ(c.status, "not timed: optimization level " + std::to_string(level) + " takes the first candidate");
        if (c.status == "timed" || c.status == "cached") EXPECT_GT(c.milliseconds, 0) << layer.name << " " << c.tactic;
      }
      EXPECT_TRUE(chosenListed) << layer.name;
      if (level <= 1) EXPECT_EQ(layer.tactic, layer.tacticCandidates.front().tactic) << layer.name;
    }
  }
  EXPECT_EQ(timed[0], 0u);
  EXPECT_EQ(timed[1], 0u);
  EXPECT_GT(timed[2], 0u);
  EXPECT_GT(timed[3], timed[2]);  // level 2 times two candidates a layer, level 3 every one
  // The CPU's tactic lists are fixed: levels 4 and 5 time what 3 does (library backends list more).
  EXPECT_EQ(timed[4], timed[3]);
  EXPECT_EQ(timed[5], timed[3]);
}

TEST(BuildProgress, ProgressNamesTheLayerAndEachTacticBeingTimed) {
  RecordingObserver observer;
  const BuildReport report = Builder().build(*convChain(), BuilderConfig{}, &observer).report;
  EXPECT_EQ(observer.tacticReportsWithoutLayer, 0);
  size_t layersTimed = 0;
  for (const auto& layer : report.layers) {
    std::set<std::string> timed;
    for (const auto& c : layer.tacticCandidates)  // a tactic that failed its warm-up was tried too
      if (c.status == "timed" || c.status.rfind("failed", 0) == 0) timed.insert(c.tactic);
    if (timed.empty()) continue;
    ++layersTimed;
    EXPECT_EQ(observer.tactics[layer.name], timed) << layer.name;  // every candidate tried, nothing else
  }
  EXPECT_GE(layersTimed, 3u);  // the three convolutions (with their Relus)
  EXPECT_EQ(observer.tactics.size(), layersTimed);  // no tactic reported for a layer that timed none
  EXPECT_TRUE(std::is_sorted(observer.fractions.begin(), observer.fractions.end()));
  EXPECT_EQ(observer.fractions.back(), 1.0);
}

TEST(BuildProgress, CancelDuringTacticTimingStopsTheBuildAndWritesNoTimingCache) {
  const auto dir = std::filesystem::temp_directory_path() / ("kiln_cancel_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  BuilderConfig config;
  config.timingCachePath = (dir / "timing.cache").string();
  config.tacticLockPath = (dir / "tactics.lock").string();
  RecordingObserver observer(/*cancelAtFirstTactic=*/true);
  try {
    Builder().build(*convChain(), config, &observer);
    ADD_FAILURE() << "the build should have been cancelled";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kCancelled);
    const std::string message = e.what();
    ASSERT_EQ(observer.tactics.size(), 1u);
    EXPECT_NE(message.find("during tactics at layer '" + observer.tactics.begin()->first + "'"), std::string::npos)
        << message;
  }
  EXPECT_FALSE(std::filesystem::exists(config.timingCachePath));
  EXPECT_FALSE(std::filesystem::exists(config.tacticLockPath));
  std::filesystem::remove_all(dir);
}
