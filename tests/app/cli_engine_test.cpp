// `kiln build / run PLAN / inspect PLAN / compare / profile` end to end on the bundled sample model
// (TinyResNet, dynamic batch): plans that run and match the model, reports and profiles that name
// every layer, and one clear message with no files left behind for each misuse.
#include <kiln/npy.h>

#include "app/cli_fixture.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>

using kiln::test::Cli;
using kiln::test::readFile;
using kiln::test::writeFile;
namespace fs = std::filesystem;

namespace {

const std::string kSample = std::string(KILN_SOURCE_DIR) + "/resources/models/sample.onnx";
const std::string kProfile = "image:1x3x64x64/2x3x64x64/4x3x64x64";

class CliEngine : public Cli {
 protected:
  std::string buildPlan(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"build", kSample, "--save", path("out/s.plan"), "--profile", kProfile};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = kiln(args);
    EXPECT_EQ(r.exitCode, 0) << r.err;
    return path("out/s.plan");
  }
};

TEST_F(CliEngine, BuildReportsFusionAndInspectNamesEveryLayersOrigins) {
  std::string plan = buildPlan({"--export-report", path("out/report.json")});
  auto inspect = kiln({"inspect", plan, "--json"});
  ASSERT_EQ(inspect.exitCode, 0) << inspect.err;
  auto info = nlohmann::json::parse(inspect.out);
  ASSERT_GT(info["layers"].size(), 0u);
  size_t origins = 0, fused = 0;
  for (const auto& layer : info["layers"]) {
    EXPECT_FALSE(layer["tactic"].get<std::string>().empty()) << layer["name"];
    EXPECT_FALSE(layer["origins"].empty()) << layer["name"];
    origins += layer["origins"].size();
    fused += layer["type"] == "kiln.FusedConv";
  }
  auto report = nlohmann::json::parse(readFile(path("out/report.json")));
  // Every ONNX node is accounted for: in a layer's origins, or folded away by a pass.
  EXPECT_LE(origins, report["onnx_node_count"].get<size_t>());
  EXPECT_LT(info["layers"].size(), report["onnx_node_count"].get<size_t>());
  EXPECT_GE(fused, 5u);  // the stem and the residual blocks' convolutions
  // Activations kept channels-last are listed by name; each is some layer's output.
  ASSERT_TRUE(info["non_linear_layouts"].is_object());
  for (const auto& [tensor, layout] : info["non_linear_layouts"].items()) {
    EXPECT_EQ(layout, "nhwc") << tensor;
    bool made = false;
    for (const auto& layer : info["layers"])
      for (const auto& out : layer["outputs"]) made = made || out["name"] == tensor;
    EXPECT_TRUE(made) << tensor;
  }
}

TEST_F(CliEngine, PlanRunsLikeTheModelAndFp16StaysClose) {
  std::string plan = buildPlan();
  auto same = kiln({"compare", kSample, plan, "--shapes", "image:3x3x64x64", "--atol", "1e-4", "--rtol", "1e-3"});
  EXPECT_EQ(same.exitCode, 0) << same.out << same.err;
  EXPECT_NE(same.out.find("PASS"), std::string::npos) << same.out;

  fs::remove(plan);
  buildPlan({"--fp16"});
  auto loose = kiln({"compare", kSample, plan, "--atol", "1e-2", "--rtol", "1e-2"});
  EXPECT_EQ(loose.exitCode, 0) << loose.out << loose.err;
  // fp16 storage between layers cannot be bit-exact: a zero tolerance must fail, and say so.
  auto exact = kiln({"compare", kSample, plan, "--atol", "0", "--rtol", "0"});
  EXPECT_EQ(exact.exitCode, 1) << exact.out;
  EXPECT_NE(exact.out.find("FAIL"), std::string::npos) << exact.out;
}

TEST_F(CliEngine, RunPlanDefaultsToTheProfilesOptShapeAndWritesOutputs) {
  std::string plan = buildPlan();
  auto r = kiln({"run", plan, "--output-dir", path("out/run"), "--seed", "3"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  kiln::HostTensor probabilities = kiln::readNpyFile(path("out/run/probabilities.npy"));
  ASSERT_EQ(probabilities.dims(), (std::vector<int64_t>{2, 10}));  // the opt batch of kProfile
  for (int64_t row = 0; row < 2; ++row) {
    double sum = 0;
    for (int64_t c = 0; c < 10; ++c) sum += probabilities.data<float>()[row * 10 + c];
    EXPECT_NEAR(sum, 1.0, 1e-5);  // the sample model ends in Softmax
  }
}

TEST_F(CliEngine, ProfileExportNamesEveryLayer) {
  std::string plan = buildPlan();
  auto r = kiln({"profile", plan, "--iterations", "3", "--duration", "0", "--warmup", "1", "--streams", "2",
                 "--export-profile", path("out/p.json")});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  auto profile = nlohmann::json::parse(readFile(path("out/p.json")));
  auto info = nlohmann::json::parse(kiln({"inspect", plan, "--json"}).out);
  EXPECT_EQ(profile["format"], "kiln-profile-1");
  ASSERT_EQ(profile["layers"].size(), info["layers"].size());
  double percent = 0;
  for (const auto& layer : profile["layers"]) {
    EXPECT_GT(layer["median_ms"].get<double>(), 0.0) << layer["name"];
    percent += layer["percent"].get<double>();
  }
  EXPECT_NEAR(percent, 100.0, 0.5);
  // The trtexec-style measurements: two streams' runs, latency percentiles in order.
  const auto& performance = profile["performance"];
  EXPECT_EQ(performance["streams"], 2);
  EXPECT_GE(performance["runs"].get<int>(), 6);
  EXPECT_GT(performance["throughput_per_s"].get<double>(), 0.0);
  const auto& latency = performance["latency"];
  EXPECT_LE(latency["min_ms"].get<double>(), latency["median_ms"].get<double>());
  EXPECT_LE(latency["median_ms"].get<double>(), latency["p90_ms"].get<double>());
  EXPECT_LE(latency["p90_ms"].get<double>(), latency["p99_ms"].get<double>());
  EXPECT_LE(latency["p99_ms"].get<double>(), latency["max_ms"].get<double>());
  EXPECT_GT(performance["compute"]["median_ms"].get<double>(), 0.0);
  for (const char* line : {"throughput:", "latency:", "host to device:", "compute:", "device to host:"})
    EXPECT_NE(r.out.find(line), std::string::npos) << line << " in\n" << r.out;
  // Without transfers there are no copy times to report.
  auto compute = kiln({"profile", plan, "--iterations", "2", "--duration", "0", "--warmup", "0", "--no-data-transfers",
                       "--layer-runs", "0"});
  ASSERT_EQ(compute.exitCode, 0) << compute.err;
  EXPECT_EQ(compute.out.find("host to device:"), std::string::npos) << compute.out;
  EXPECT_EQ(kiln({"profile", plan, "--streams", "0"}).exitCode, 2);  // a usage error
}

TEST_F(CliEngine, BuildWithoutProfileWarnsAndBuildsForBatchOne) {
  auto r = kiln({"build", kSample, "--save", path("out/d.plan")});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.err.find("warning: input 'image' has dynamic shape"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("1x3x64x64"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("\033["), std::string::npos) << "terminal codes written to a file";
  EXPECT_EQ(kiln({"run", path("out/d.plan")}).exitCode, 0);
  fs::remove(path("out/d.plan"));
  expectFailure({"run", path("out/none.plan"), "--shapes", "image:2x3x64x64"}, 1, {"none.plan", "does not exist"});
}

TEST_F(CliEngine, ShapesOutsideTheProfileAreNamed) {
  std::string plan = buildPlan();
  auto r = kiln({"run", plan, "--shapes", "image:8x3x64x64"});
  EXPECT_NE(r.exitCode, 0);
  EXPECT_NE(r.err.find("input 'image' dimension 0 is 8"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("[1, 4]"), std::string::npos) << r.err;
}

TEST_F(CliEngine, BadBuildRequestsLeaveNoPlan) {
  expectFailure({"build", kSample, "--save", path("out/x.plan"), "--profile", "image:4x3x64x64/2x3x64x64/1x3x64x64"}, 2,
                {"image"});
  expectFailure({"build", kSample, "--save", path("out/x.plan"), "--profile", "image:1x3x64/1x3x64/1x3x64"}, 2,
                {"image", "rank"});
  expectFailure({"build", kSample, "--save", path("out/x.plan"), "--opt-level", "9"}, 2, {"--opt-level"});
  expectFailure({"build", kSample, "--save", path("out/x.plan"), "--workspace", "lots"}, 2, {"--workspace"});
  expectFailure({"build", kSample, "--save", path("out/x.plan"), "--backend", "tpu"}, 2, {"tpu"});
}

TEST_F(CliEngine, CorruptedPlansAreRefusedByEveryCommand) {
  std::string plan = buildPlan();
  std::string bytes = readFile(plan);
  fs::remove(plan);
  bytes[bytes.size() / 2] = char(bytes[bytes.size() / 2] ^ 0x40);
  writeFile(dir_ / "corrupt.plan", bytes);
  for (const char* command : {"run", "inspect", "profile"}) {
    auto r = kiln({command, path("corrupt.plan")});
    EXPECT_EQ(r.exitCode, 1) << command << ": " << r.err;
    EXPECT_NE(r.err.find("corrupt.plan"), std::string::npos) << command << ": " << r.err;
    EXPECT_NE(r.err.find("checksum"), std::string::npos) << command << ": " << r.err;
  }
}

}  // namespace
