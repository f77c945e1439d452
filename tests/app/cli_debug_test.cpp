// `kiln debug precision` and `kiln debug advise` end to end on small models with one layer made
// precision-sensitive: each trial printed, the layer found, the constraints file written and taken
// by `kiln build --layer-precision-file` (after which `kiln compare` passes where it failed), the
// advisor's table, plot, CSV and JSON; and one clear error, a non-zero exit and no files for bad
// input: unknown or malformed constraints, a model that fails even in FP32, options that do not fit.
#include "app/cli_fixture.h"
#include "common/precision_models.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>

using kiln::test::Cli;
using kiln::test::readFile;
using kiln::test::writeFile;
namespace fs = std::filesystem;

namespace {

class CliDebug : public Cli {
 protected:
  std::string calibration() { return kiln::test::writeOutlierBatches(path("calib")); }
  std::string heldOut() { return kiln::test::writeOutlierBatches(path("held_out"), 2, 300); }  // for --data
};

}  // namespace

TEST_F(CliDebug, PrecisionFindsTheFp16OverflowAndItsConstraintsFileFixesTheBuild) {
  const std::string model = save("overflow.onnx", kiln::test::fp16OverflowModel());
  auto r = kiln({"debug", "precision", model, "--fp16", "--metric", "cosine", "--threshold", "0.9999",
                 "--write-constraints", path("out/keep.txt"), "--export", path("out/bisect.json")});
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("trial  phase       held  1-cosine"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("reduced        0  inf"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("FAIL    nothing held back"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("PASS    first 3 of 4 (through 'amplify')"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("PASS    release 'mm1'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("hold back 1 of 4 layer(s) in fp32:\n  amplify\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("constraints written to " + path("out/keep.txt") + " (1 layer(s))"), std::string::npos);
  const std::string constraints = readFile(path("out/keep.txt"));
  EXPECT_EQ(constraints.rfind("# kiln layer precision constraints: kiln build ", 0), 0u) << constraints;
  EXPECT_NE(constraints.find("\namplify:fp32\n"), std::string::npos) << constraints;
  const auto json = nlohmann::json::parse(readFile(path("out/bisect.json")));
  EXPECT_EQ(json["keep"], nlohmann::json::array({"amplify"}));
  EXPECT_EQ(json["trials"].size(), 6u);

  // The fix is one flag: without it compare fails, with it compare passes.
  ASSERT_EQ(kiln({"build", model, "--fp16", "--save", path("plain.plan")}).exitCode, 0);
  auto fixedBuild = kiln({"build", model, "--fp16", "--save", path("fixed.plan"), "--layer-precision-file",
                          path("out/keep.txt")});
  ASSERT_EQ(fixedBuild.exitCode, 0) << fixedBuild.err;
  EXPECT_NE(fixedBuild.out.find("1 layer precision constraint(s) held"), std::string::npos) << fixedBuild.out;
  EXPECT_NE(kiln({"compare", model, path("plain.plan"), "--atol", "0.5", "--rtol", "0.02"}).exitCode, 0);
  auto compared = kiln({"compare", model, path("fixed.plan"), "--atol", "0.5", "--rtol", "0.02"});
  EXPECT_EQ(compared.exitCode, 0) << compared.out;
}

TEST_F(CliDebug, PrecisionFindsTheInt8OutlierReaderOnHeldOutData) {
  const std::string model = save("outlier.onnx", kiln::test::int8OutlierModel());
  auto r = kiln({"debug", "precision", model, "--int8", "--calib-data", calibration(), "--calibrator", "minmax",
                 "--data", heldOut(), "--metric", "cosine", "--threshold", "0.999", "--write-constraints",
                 path("out/keep.txt")});
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("2 input set(s), criterion cosine >= 0.999, held-back layers in fp32"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("hold back 1 of 3 layer(s) in fp32:\n  mixer\n"), std::string::npos) << r.out;
  EXPECT_NE(readFile(path("out/keep.txt")).find("\nmixer:fp32\n"), std::string::npos);
}

TEST_F(CliDebug, AdviseRanksTheOutlierReaderWorstAndWritesTablePlotCsvJsonAndConstraints) {
  const std::string model = save("outlier.onnx", kiln::test::int8OutlierModel());
  auto r = kiln({"debug", "advise", model, "--int8", "--calib-data", calibration(), "--calibrator", "minmax",
                 "--data", heldOut(), "--threshold", "0.999", "--layer-runs", "3", "--plot", path("out/advice.svg"),
                 "--csv", path("out/advice.csv"), "--export", path("out/advice.json"), "--write-constraints",
                 path("out/keep.txt")});
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  const size_t table = r.out.find("per layer, worst first");
  ASSERT_NE(table, std::string::npos) << r.out;
  const size_t firstRow = r.out.find("\n     1  ", table);
  ASSERT_NE(firstRow, std::string::npos) << r.out;
  EXPECT_EQ(r.out.compare(firstRow + 9, 5, "mixer"), 0) << r.out;
  EXPECT_NE(r.out.find("KEEP", firstRow), std::string::npos);
  EXPECT_NE(r.out.find("keep 1 layer(s) in fp32: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("end-to-end median: all fp32 "), std::string::npos) << r.out;
  EXPECT_EQ(readFile(path("out/advice.svg")).rfind("<?xml", 0), 0u);
  EXPECT_EQ(readFile(path("out/advice.csv")).find("\n1,mixer,"), readFile(path("out/advice.csv")).find('\n'));
  EXPECT_EQ(nlohmann::json::parse(readFile(path("out/advice.json")))["keep"], nlohmann::json::array({"mixer"}));
  EXPECT_NE(readFile(path("out/keep.txt")).find("\nmixer:fp32\n"), std::string::npos);
  const auto built = kiln({"build", model, "--int8", "--calib-data", calibration(), "--calibrator", "minmax",
                           "--save", path("fixed.plan"), "--layer-precision-file", path("out/keep.txt")});
  ASSERT_EQ(built.exitCode, 0) << built.err;
  EXPECT_NE(built.out.find("int8: 2 layer(s); 1 Conv/MatMul/Gemm layer(s) stay float"), std::string::npos)
      << built.out;
}

// fp8 and fp4 are debugged as int8 is: the same calibration options, the same bisect over the
// layers the build quantized, a constraints file that fixes the build.
TEST_F(CliDebug, PrecisionDebugsFp8AndFp4Builds) {
  const std::string model = save("outlier.onnx", kiln::test::int8OutlierModel());
  for (const char* flag : {"--fp8", "--fp4"}) {
    SCOPED_TRACE(flag);
    auto r = kiln({"debug", "precision", model, flag, "--calib-data", calibration(), "--calibrator", "minmax",
                   "--data", heldOut(), "--metric", "cosine", "--threshold", "0.99999", "--write-constraints",
                   path("out/keep.txt")});
    ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("held-back layers in fp32"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("FAIL    nothing held back"), std::string::npos) << "quantized, so not this close: " << r.out;
    const auto built = kiln({"build", model, flag, "--calib-data", calibration(), "--calibrator", "minmax", "--save",
                             path("fixed.plan"), "--layer-precision-file", path("out/keep.txt")});
    ASSERT_EQ(built.exitCode, 0) << built.err;
    EXPECT_NE(built.out.find("layer precision constraint(s) held"), std::string::npos) << built.out;
  }
}

TEST_F(CliDebug, AModelThatFailsEvenInFp32IsOneErrorAndNoFiles) {
  const std::string model = save("random.onnx", kiln::test::unseededRandomModel());
  const std::vector<std::string> fragments = {"even with all",
                                               "candidate layer(s) in fp32 the engine fails atol 0.0001, rtol 0.001"};
  expectFailure({"debug", "precision", model, "--fp16", "--write-constraints", path("out/keep.txt"), "--export",
                 path("out/x.json")},
                1, fragments);
  expectFailure({"debug", "advise", model, "--fp16", "--layer-runs", "0", "--write-constraints", path("out/keep.txt"),
                 "--plot", path("out/x.svg")},
                1, fragments);
}

TEST_F(CliDebug, BadConstraintsAreOneErrorNamingTheLayerOrLine) {
  const std::string model = save("overflow.onnx", kiln::test::fp16OverflowModel());
  writeFile(path("unknown.txt"), "# by hand\namplify:fp32\nconv9:fp32\n");
  expectFailure({"build", model, "--fp16", "--save", path("out/p.plan"), "--layer-precision-file", path("unknown.txt")},
                2, {"constraint conv9:fp32 names no layer of this model's engine", "'mm1'"});
  writeFile(path("fused.txt"), "tanh2:fp32\n");
  expectFailure({"build", model, "--fp16", "--save", path("out/p.plan"), "--layer-precision-file", path("fused.txt")},
                2, {"fused into layer 'mm2'; constrain 'mm2' instead"});
  writeFile(path("malformed.txt"), "amplify:fp32\namplify fp16\n");
  expectFailure({"build", model, "--fp16", "--save", path("out/p.plan"), "--layer-precision-file",
                 path("malformed.txt")},
                2, {"malformed.txt line 2: 'amplify fp16' must look like LAYER:PRECISION"});
  expectFailure({"build", model, "--fp16", "--save", path("out/p.plan"), "--layer-precision-file", path("none.txt")},
                2, {"none.txt' cannot be read"});
  expectFailure({"build", model, "--fp16", "--save", path("out/p.plan"), "--layer-precision", "amplify"}, 2,
                {"--layer-precision: 'amplify' must look like LAYER:PRECISION"});
  expectFailure({"debug", "precision", model, "--fp16", "--layer-precision-file", path("unknown.txt"),
                 "--write-constraints", path("out/keep.txt")},
                2, {"constraint conv9:fp32 names no layer"});
}

TEST_F(CliDebug, OptionsThatDoNotFitAreOneUsageError) {
  const std::string model = save("overflow.onnx", kiln::test::fp16OverflowModel());
  expectFailure({"debug", "precision", model}, 2, {"give the reduced precision to debug: --int8"});
  expectFailure({"debug", "precision", model, "--fp16", "--metric", "tolerance", "--threshold", "0.9"}, 2,
                {"--threshold belongs to --metric cosine"});
  expectFailure({"debug", "precision", model, "--fp16", "--metric", "cosine", "--atol", "0.1"}, 2,
                {"--atol and --rtol belong to --metric tolerance"});
  expectFailure({"debug", "precision", model, "--fp16", "--metric", "l2"}, 2, {"--metric 'l2' is not a metric"});
  expectFailure({"debug", "precision", model, "--fp16", "--threshold", "1.5"}, 2, {"--threshold must be"});
  expectFailure({"debug", "precision", model, "--fp16", "--keep-precision", "int8"}, 2,
                {"--keep-precision 'int8' must be fp32, fp16 or bf16"});
  expectFailure({"debug", "precision", model, "--fp16", "--reference", "onnxruntime"}, 2,
                {"--reference 'onnxruntime' must be model or fp32"});
  expectFailure({"debug", "precision", model, "--fp16", "--data", path("nowhere")}, 2,
                {"input data: '" + path("nowhere") + "' is not a folder"});
  expectFailure({"debug", "precision", model, "--int8"}, 2, {"--calib-data"});
  expectFailure({"debug", "advise", model, "--fp16", "--layer-runs", "-1"}, 2, {"--layer-runs must be"});
  ASSERT_EQ(kiln({"build", model, "--save", path("m.plan")}).exitCode, 0);
  expectFailure({"debug", "precision", path("m.plan"), "--fp16"}, 2, {"is a plan"});
  expectFailure({"debug"}, 2, {});
}
