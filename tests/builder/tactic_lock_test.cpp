// Tactic locks and tactic sources: a lock written by one build and replayed by later ones gives
// the same choices and byte-identical plans without timing anything; an edited lock wins over timing; a lock made for
// another backend, a malformed one, or one missing a layer is refused naming the file; switching a
// source off removes its tactics and names the layer when nothing is left.
#include <kiln/builder.h>
#include <kiln/error.h>
#include <kiln/file_io.h>
#include <kiln/onnx_importer.h>

#include "common/test_models.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

using namespace kiln;
using kiln::test::ModelBuilder;

namespace {

using namespace kiln::test::onnx_types;

std::shared_ptr<Network> convNetwork(int64_t channels = 8) {
  ModelBuilder mb;
  mb.input("x", kFloat, {1, channels, 12, 10})
      .initializer("w1", test::randomFloats({16, channels, 3, 3}, 11))
      .initializer("w2", test::randomFloats({16, 16, 1, 1}, 12))
      .output("y");
  ModelBuilder::setInts(mb.node("Conv", {"x", "w1"}, {"c1"}, "conv3x3"), "pads", {1, 1, 1, 1});
  mb.node("Relu", {"c1"}, {"r1"}, "relu");
  mb.node("Conv", {"r1", "w2"}, {"y"}, "conv1x1");
  return OnnxImporter().importBytes(mb.bytes());
}

std::string tempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("kiln_lock_" + std::to_string(::getpid()) + "_" + name)).string();
}

std::string readText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

const LayerSummary& layerNamed(const BuildReport& report, const std::string& name) {
  for (const auto& l : report.layers)
    if (l.name == name) return l;
  throw std::runtime_error("no layer " + name);
}

}  // namespace

TEST(TacticLock, ReplayedBuildsGiveTheSamePlanWithoutTiming) {
  const std::string lock = tempPath("replay.lock");
  std::filesystem::remove(lock);
  BuilderConfig config;
  config.tacticLockPath = lock;
  const BuildResult first = Builder().build(*convNetwork(), config);
  ASSERT_TRUE(std::filesystem::exists(lock));
  const std::string text = readText(lock);
  EXPECT_NE(text.find("conv3x3\t" + layerNamed(first.report, "conv3x3").tactic + "\t"), std::string::npos) << text;
  const BuildResult second = Builder().build(*convNetwork(), config), third = Builder().build(*convNetwork(), config);
  EXPECT_EQ(second.plan, third.plan);
  for (const char* layer : {"conv3x3", "conv1x1"})
    EXPECT_EQ(layerNamed(second.report, layer).tactic, layerNamed(first.report, layer).tactic) << layer;
  for (const auto& c : layerNamed(second.report, "conv3x3").tacticCandidates) EXPECT_NE(c.status, "timed") << c.tactic;
  EXPECT_EQ(readText(lock), text);  // replaying does not rewrite it
  std::filesystem::remove(lock);
}

TEST(TacticLock, AnEditedChoiceWins) {
  const std::string lock = tempPath("edited.lock");
  std::filesystem::remove(lock);
  BuilderConfig config;
  config.tacticLockPath = lock;
  const BuildResult first = Builder().build(*convNetwork(), config);
  const LayerSummary& conv = layerNamed(first.report, "conv3x3");
  std::string other;
  for (const auto& c : conv.tacticCandidates)
    if (c.tactic != conv.tactic && c.status.rfind("failed", 0) != 0 && c.status.rfind("skipped", 0) != 0) other = c.tactic;
  ASSERT_FALSE(other.empty()) << "conv3x3 has one usable CPU tactic only";
  std::string text = readText(lock);
  const std::string from = "conv3x3\t" + conv.tactic + "\t";
  text.replace(text.find(from), from.size(), "conv3x3\t" + other + "\t");
  writeFileAtomically(lock, text);
  const BuildResult second = Builder().build(*convNetwork(), config);
  EXPECT_EQ(layerNamed(second.report, "conv3x3").tactic, other);
  std::filesystem::remove(lock);
}

TEST(TacticLock, RefusesForeignMalformedOrIncompleteLocks) {
  const std::string lock = tempPath("bad.lock");
  BuilderConfig config;
  config.tacticLockPath = lock;
  auto expectRefused = [&](const std::string& content, const std::string& why) {
    writeFileAtomically(lock, content);
    try {
      Builder().build(*convNetwork(), config);
      ADD_FAILURE() << "built with a lock that " << why;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find(lock), std::string::npos) << e.what();
    }
  };
  expectRefused("not a lock\n", "is not a lock");
  expectRefused("kiln tactic lock 1\nbackend\tcuda\ndevice\tNVIDIA H200 9.0\n", "was made for CUDA");
  std::filesystem::remove(lock);
  Builder().build(*convNetwork(), config);  // writes a valid lock for this machine
  std::string text = readText(lock);
  expectRefused(text.substr(0, text.find("conv3x3")), "lacks a layer");
  expectRefused(text + "conv1x1\tcpu.conv.direct\tzz\n", "has a malformed payload");
  std::filesystem::remove(lock);
}

TEST(TacticSources, SwitchedOffSourcesAreNeverChosen) {
  BuilderConfig config;
  config.disabledTacticSources = {"cpu"};
  try {
    Builder().build(*convNetwork(), config);
    ADD_FAILURE() << "built with every CPU tactic switched off";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("--tactic-sources"), std::string::npos) << e.what();
  }
  config.disabledTacticSources = {"cudnn", "cublaslt"};  // not the CPU's: the build is unchanged
  EXPECT_NO_THROW(Builder().build(*convNetwork(), config));
}
