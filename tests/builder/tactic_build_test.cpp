// Tactics through the whole flow: the builder times the CPU conv tactics and reports every
// candidate, the timing cache spares the second build, the workspace limit excludes tactics, the
// plan keeps the choice, the runtime runs exactly the tactic the plan names and refuses an unknown one.
#include <kiln/builder.h>
#include <kiln/error.h>
#include <kiln/onnx_importer.h>
#include <kiln/reference_executor.h>
#include <kiln/runtime.h>

#include "plan/engine_plan.h"
#include "runtime/engine_program.h"
#include "common/test_models.h"
#include "plan/plan_format.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include <unistd.h>

using namespace kiln;
using kiln::test::ModelBuilder;

namespace {

using namespace kiln::test::onnx_types;

// x[1, 8, 14, 14] -> Conv 3x3 (pad 1) -> Relu -> Conv 1x1 -> y: a fused conv and a pointwise conv.
std::shared_ptr<Network> twoConvNetwork() {
  ModelBuilder mb;
  mb.input("x", kFloat, {1, 8, 14, 14})
      .initializer("w1", test::randomFloats({16, 8, 3, 3}, 1))
      .initializer("b1", test::randomFloats({16}, 2))
      .initializer("w2", test::randomFloats({16, 16, 1, 1}, 3))
      .output("y");
  auto& conv = mb.node("Conv", {"x", "w1", "b1"}, {"c1"}, "conv3x3");
  ModelBuilder::setInts(conv, "pads", {1, 1, 1, 1});
  mb.node("Relu", {"c1"}, {"r1"}, "relu");
  mb.node("Conv", {"r1", "w2"}, {"y"}, "conv1x1");
  return OnnxImporter().importBytes(mb.bytes());
}

const LayerSummary& layerNamed(const BuildReport& report, const std::string& name) {
  for (const auto& l : report.layers)
    if (l.name == name) return l;
  throw std::runtime_error("no layer " + name);
}

const TacticCandidate& candidateNamed(const LayerSummary& layer, const std::string& id) {
  for (const auto& c : layer.tacticCandidates)
    if (c.tactic == id) return c;
  throw std::runtime_error("layer " + layer.name + " has no candidate " + id);
}

class TempDir {
 public:
  TempDir() : path_(std::filesystem::temp_directory_path() / ("kiln_tactics_" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

void expectClose(const HostTensor& actual, const HostTensor& expected) {
  ASSERT_EQ(actual.dims(), expected.dims());
  for (int64_t i = 0; i < expected.elementCount(); ++i)
    ASSERT_NEAR(actual.data<float>()[i], expected.data<float>()[i], 1e-4 * (1 + std::fabs(expected.data<float>()[i])))
        << "element " << i;
}

}  // namespace

TEST(TacticBuild, ReportsEveryTimedCandidateAndTheFastestIsChosen) {
  BuildResult built = Builder().build(*twoConvNetwork(), BuilderConfig{});
  const LayerSummary& fused = layerNamed(built.report, "conv3x3");
  EXPECT_EQ(fused.type, "kiln.FusedConv");
  ASSERT_GE(fused.tacticCandidates.size(), 2u);
  double fastest = 1e300;
  for (const auto& c : fused.tacticCandidates) {
    EXPECT_EQ(c.status, "timed") << c.tactic;
    EXPECT_GT(c.milliseconds, 0) << c.tactic;
    fastest = std::min(fastest, c.milliseconds);
  }
  // The fastest, or within the selector's 10% near-tie margin a tactic that takes channels-last
  // activations (tactic_selector.cpp): under ASan two CPU tactics time within 3% of each other.
  EXPECT_LE(candidateNamed(fused, fused.tactic).milliseconds, fastest * 1.10);
  EXPECT_EQ(fused.workspaceBytes, candidateNamed(fused, fused.tactic).workspaceBytes);
  const LayerSummary& pointwise = layerNamed(built.report, "conv1x1");
  EXPECT_EQ(candidateNamed(pointwise, "cpu.conv.gemm_1x1").workspaceBytes, 0);  // no im2col buffer
  EXPECT_GT(candidateNamed(pointwise, "cpu.conv.im2col_gemm").workspaceBytes, 0);
  // The JSON report carries the candidates through.
  BuildReport back = BuildReport::fromJson(built.report.toJson());
  const LayerSummary& again = layerNamed(back, "conv3x3");
  ASSERT_EQ(again.tacticCandidates.size(), fused.tacticCandidates.size());
  EXPECT_EQ(again.tacticCandidates[0].tactic, fused.tacticCandidates[0].tactic);
  EXPECT_EQ(again.tacticCandidates[0].milliseconds, fused.tacticCandidates[0].milliseconds);
  EXPECT_EQ(again.workspaceBytes, fused.workspaceBytes);
}

TEST(TacticBuild, TimingCacheSparesTheSecondBuild) {
  TempDir dir;
  BuilderConfig config;
  config.timingCachePath = dir.file("cache.json");
  auto network = twoConvNetwork();
  BuildResult first = Builder().build(*network, config);
  ASSERT_TRUE(std::filesystem::exists(config.timingCachePath));
  BuildResult second = Builder().build(*network, config);
  for (const char* name : {"conv3x3", "conv1x1"}) {
    const LayerSummary& a = layerNamed(first.report, name);
    const LayerSummary& b = layerNamed(second.report, name);
    EXPECT_EQ(a.tactic, b.tactic);
    ASSERT_EQ(a.tacticCandidates.size(), b.tacticCandidates.size());
    for (size_t i = 0; i < b.tacticCandidates.size(); ++i) {
      EXPECT_EQ(a.tacticCandidates[i].status, "timed");
      EXPECT_EQ(b.tacticCandidates[i].status, "cached");
      EXPECT_EQ(a.tacticCandidates[i].milliseconds, b.tacticCandidates[i].milliseconds);
    }
  }
}

TEST(TacticBuild, WorkspaceLimitExcludesTacticsAndTheReportSaysSo) {
  auto network = twoConvNetwork();
  const LayerSummary unlimited = layerNamed(Builder().build(*network, BuilderConfig{}).report, "conv3x3");
  const int64_t im2col = candidateNamed(unlimited, "cpu.conv.im2col_gemm").workspaceBytes;
  const int64_t direct = candidateNamed(unlimited, "cpu.conv.direct").workspaceBytes;
  ASSERT_LT(direct, im2col);  // the padded image is smaller than the column matrix
  BuilderConfig config;
  config.workspaceBytes = uint64_t(direct);
  BuildResult built = Builder().build(*network, config);
  const LayerSummary& layer = layerNamed(built.report, "conv3x3");
  EXPECT_EQ(layer.tactic, "cpu.conv.direct");
  EXPECT_EQ(candidateNamed(layer, "cpu.conv.im2col_gemm").status.rfind("skipped: needs", 0), 0u);
  EXPECT_EQ(candidateNamed(layer, "cpu.conv.direct").status, "only candidate");
  ASSERT_FALSE(built.report.warnings.empty());
  EXPECT_NE(built.report.warnings.back().find("workspace limit"), std::string::npos) << built.report.warnings.back();

  config.workspaceBytes = 16;  // below every tactic of the padded 3x3 convolution
  try {
    Builder().build(*network, config);
    FAIL() << "expected a workspace error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("conv3x3"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--workspace"), std::string::npos) << e.what();
  }
}

TEST(TacticBuild, PlanKeepsTacticIdsAndTheEngineRunsThem) {
  BuildResult built = Builder().build(*twoConvNetwork(), BuilderConfig{});
  auto description = readPlan(built.plan);
  auto engine = Runtime().load(built.plan);
  const auto& layers = engine->plan().network->layers();
  ASSERT_EQ(engine->program().layers.size(), layers.size());
  for (size_t i = 0; i < layers.size(); ++i) {
    const std::string& planned = description->layers[i].tactic;
    EXPECT_EQ(planned, layerNamed(built.report, layers[i].name).tactic);
    ASSERT_TRUE(engine->program().layers[i].step) << layers[i].name;
    EXPECT_EQ(engine->program().layers[i].step->tactic().id, planned);
  }
  EXPECT_EQ(layerNamed(engine->report(), "conv3x3").tacticCandidates.size(),
            layerNamed(built.report, "conv3x3").tacticCandidates.size());
}

TEST(TacticBuild, EveryConvTacticNamedInAPlanRunsAndMatchesTheReference) {
  auto network = twoConvNetwork();
  BuildResult built = Builder().build(*network, BuilderConfig{});
  HostTensor x = test::randomFloats({1, 8, 14, 14}, 9);
  HostTensor expected = ReferenceExecutor(network).run({{"x", Value(x)}}).at("y").tensor;
  auto description = readPlan(built.plan);
  const auto& layers = description->network->layers();
  for (size_t i = 0; i < layers.size(); ++i) {
    for (const auto& candidate : layerNamed(built.report, layers[i].name).tacticCandidates) {
      SCOPED_TRACE(layers[i].name + " on " + candidate.tactic);
      auto forced = readPlan(built.plan);
      forced->layers[i].tactic = candidate.tactic;
      auto engine = Runtime().load(writePlan(*forced));
      EXPECT_EQ(engine->program().layers[i].step->tactic().id, candidate.tactic);
      expectClose(engine->createExecutionContext()->run({{"x", x}}).at("y"), expected);
    }
  }
  expectClose(Runtime().load(built.plan)->createExecutionContext()->run({{"x", x}}).at("y"), expected);
}

TEST(TacticBuild, PlanNamingAnUnknownTacticIsRefusedAtLoad) {
  BuildResult built = Builder().build(*twoConvNetwork(), BuilderConfig{});
  auto description = readPlan(built.plan);
  for (auto& decision : description->layers)
    if (decision.tactic.rfind("cpu.conv.", 0) == 0) decision.tactic = "cpu.conv.from_the_future";
  try {
    Runtime().load(writePlan(*description));
    FAIL() << "expected an unknown-tactic error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    const std::string what = e.what();
    EXPECT_NE(what.find("cpu.conv.from_the_future"), std::string::npos) << what;
    EXPECT_NE(what.find("conv3x3"), std::string::npos) << what;
    EXPECT_NE(what.find("rebuild"), std::string::npos) << what;
  }
}
