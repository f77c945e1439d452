// The `kiln` executable, run as a subprocess on models written to a temp folder: output format,
// results, and that every bad input ends in one clear message and exit code, with no output files.
#include <kiln/npy.h>
#include <kiln/onnx_importer.h>

#include "app/cli_fixture.h"
#include "common/test_models.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>

using namespace kiln;
using kiln::test::Cli;
using kiln::test::CliResult;
using kiln::test::ModelBuilder;
using kiln::test::readFile;
using kiln::test::writeFile;
namespace fs = std::filesystem;

namespace {

// x:[2,3] float and k:[4] int64, each passed through Identity (the op every branch has).
ModelBuilder twoInputModel() {
  ModelBuilder mb;
  mb.input("x", onnx::TensorProto::FLOAT, {2, 3});
  mb.input("k", onnx::TensorProto::INT64, {4});
  mb.node("Identity", {"x"}, {"y"}, "copy_x");
  mb.node("Identity", {"k"}, {"k_out"}, "copy_k");
  mb.output("y");
  mb.output("k_out");
  return mb;
}

ModelBuilder symbolicModel() {
  ModelBuilder mb;
  mb.symbolicInput("x", onnx::TensorProto::FLOAT, {"batch", "3"});
  mb.node("Identity", {"x"}, {"y"});
  mb.output("y");
  return mb;
}

}  // namespace

TEST_F(Cli, PrintsVersionAndHelp) {
  CliResult v = kiln({"--version"});
  EXPECT_EQ(v.exitCode, 0);
  EXPECT_NE(v.out.find(std::string("kiln ") + KILN_VERSION), std::string::npos) << v.out;
  for (const char* sub : {"inspect", "run"}) {
    CliResult h = kiln({sub, "--help"});
    EXPECT_EQ(h.exitCode, 0) << sub;
    EXPECT_NE(h.out.find("MODEL"), std::string::npos) << h.out;
  }
  EXPECT_NE(kiln({"run", "--help"}).out.find("--shapes"), std::string::npos);
  EXPECT_NE(kiln({"--help"}).out.find("inspect"), std::string::npos);
}

TEST_F(Cli, InspectText) {
  ModelBuilder mb = symbolicModel();
  mb.model().set_producer_version("9.9");
  mb.initializer("w", HostTensor::fromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6}));
  mb.node("Identity", {"w"}, {"w_copy"});
  mb.output("w_copy");
  CliResult r = kiln({"inspect", save("m.onnx", mb)});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  for (const char* expected : {"kiln-tests 9.9", "ai.onnx 17", "x  float32  [batch,3]", "y  float32  [batch,3]",
                               "Identity", "parameters: 6 (24 bytes)"})
    EXPECT_NE(r.out.find(expected), std::string::npos) << "'" << expected << "' not in:\n" << r.out;
}

TEST_F(Cli, InspectJson) {
  ModelBuilder mb = symbolicModel();
  mb.initializer("w", HostTensor::fromVector<int64_t>({5}, {1, 2, 3, 4, 5}));
  mb.node("Identity", {"w"}, {"w_copy"});
  mb.output("w_copy");
  CliResult r = kiln({"inspect", "--json", save("m.onnx", mb)});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["producer"]["name"], "kiln-tests");
  EXPECT_EQ(j["ir_version"], 8);
  EXPECT_EQ(j["opset_imports"]["ai.onnx"], 17);
  ASSERT_EQ(j["inputs"].size(), 1u);
  EXPECT_EQ(j["inputs"][0]["name"], "x");
  EXPECT_EQ(j["inputs"][0]["dtype"], "float32");
  EXPECT_EQ(j["inputs"][0]["shape"], nlohmann::json::parse(R"(["batch", 3])"));
  ASSERT_EQ(j["outputs"].size(), 2u);
  EXPECT_EQ(j["outputs"][1]["name"], "w_copy");
  EXPECT_EQ(j["outputs"][1]["dtype"], "int64");
  EXPECT_EQ(j["outputs"][1]["shape"], nlohmann::json::parse("[5]"));
  EXPECT_EQ(j["op_histogram"]["Identity"], 2);
  EXPECT_EQ(j["parameters"]["count"], 5);
  EXPECT_EQ(j["parameters"]["bytes"], 40);
  EXPECT_TRUE(j["warnings"].empty());
}

TEST_F(Cli, InspectShowsModelsWithUnsupportedOps) {
  ModelBuilder mb;
  mb.input("x", onnx::TensorProto::FLOAT, {2});
  mb.node("NoSuchOp", {"x"}, {"y"}, "mystery");
  mb.output("y");
  CliResult r = kiln({"inspect", "--json", save("m.onnx", mb)});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["op_histogram"]["NoSuchOp"], 1);
  ASSERT_FALSE(j["warnings"].empty());
  EXPECT_NE(j["warnings"][0].get<std::string>().find("mystery"), std::string::npos);
  CliResult text = kiln({"inspect", path("m.onnx")});
  EXPECT_EQ(text.exitCode, 0);
  EXPECT_NE(text.out.find("warning: node 'mystery' (NoSuchOp)"), std::string::npos) << text.out;
}

TEST_F(Cli, RunWithNpyAndPbInputs) {
  HostTensor x = test::randomFloats({2, 3}, 5);
  HostTensor k = HostTensor::fromVector<int64_t>({4}, {3, -1, 4, -1});
  writeNpyFile(x, path("x.npy"));
  writeTensorProtoFile(k, path("k.pb"), "k");
  CliResult r = kiln({"run", save("m.onnx", twoInputModel()), "--input", "x=" + path("x.npy"), "--input",
                      "k=" + path("k.pb"), "--output-dir", outDir()});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(outFiles(), (std::vector<std::string>{"k_out.npy", "y.npy"}));
  HostTensor y = readNpyFile(path("out/y.npy"));
  ASSERT_EQ(y.dims(), x.dims());
  for (int i = 0; i < 6; ++i) EXPECT_EQ(y.data<float>()[i], x.data<float>()[i]);
  EXPECT_EQ(readNpyFile(path("out/k_out.npy")).toInt64Vector(), k.toInt64Vector());

  // The summary: shape, dtype and min/max/mean computed here independently.
  EXPECT_NE(r.out.find("k_out  int64 [4]  min -1  max 4  mean 1.25"), std::string::npos) << r.out;
  double lo = 1e9, hi = -1e9;
  for (int i = 0; i < 6; ++i) lo = std::min(lo, double(x.data<float>()[i])), hi = std::max(hi, double(x.data<float>()[i]));
  std::ostringstream minText;
  minText.precision(6);
  minText << "min " << lo << "  max " << hi;
  EXPECT_NE(r.out.find("y  float32 [2,3]  " + minText.str()), std::string::npos) << r.out;
}

TEST_F(Cli, RandomInputsAreSeededAndNeverZero) {
  std::string model = save("m.onnx", symbolicModel());
  auto runWithSeed = [&](const std::string& seed) {
    fs::remove_all(dir_ / "out");
    CliResult r = kiln({"run", model, "--shapes", "x:4x3", "--seed", seed, "--output-dir", outDir()});
    EXPECT_EQ(r.exitCode, 0) << r.err;
    return readFile(dir_ / "out" / "y.npy");
  };
  std::string first = runWithSeed("7");
  EXPECT_EQ(runWithSeed("7"), first);
  EXPECT_NE(runWithSeed("8"), first);
  HostTensor y = parseNpy(first, "y.npy");
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{4, 3}));
  for (int i = 0; i < 12; ++i) {
    float v = y.data<float>()[i];
    EXPECT_NE(v, 0.0f);
    EXPECT_GE(v, -1.0f);
    EXPECT_LE(v, 1.0f);
  }
}

TEST_F(Cli, RandomIntegerAndBoolInputsUseSensibleRanges) {
  ModelBuilder mb;
  mb.input("i", onnx::TensorProto::INT32, {50});
  mb.input("u", onnx::TensorProto::UINT8, {50});
  mb.input("h", onnx::TensorProto::FLOAT16, {50});
  mb.node("Identity", {"i"}, {"i_out"});
  mb.node("Identity", {"u"}, {"u_out"});
  mb.node("Identity", {"h"}, {"h_out"});
  mb.output("i_out");
  mb.output("u_out");
  mb.output("h_out");
  ASSERT_EQ(kiln({"run", save("m.onnx", mb), "--output-dir", outDir()}).exitCode, 0);
  for (int64_t v : readNpyFile(path("out/i_out.npy")).toInt64Vector()) EXPECT_TRUE(v != 0 && v >= -10 && v <= 10) << v;
  for (int64_t v : readNpyFile(path("out/u_out.npy")).toInt64Vector()) EXPECT_TRUE(v >= 1 && v <= 20) << v;
  for (double v : readNpyFile(path("out/h_out.npy")).toDoubleVector()) EXPECT_TRUE(v != 0 && v >= -1 && v <= 1) << v;
}

TEST_F(Cli, OutputNamesBecomeSafeUniqueFileNames) {
  ModelBuilder mb;
  mb.input("x", onnx::TensorProto::FLOAT, {2});
  mb.node("Identity", {"x"}, {"scores/out:0"});
  mb.node("Identity", {"x"}, {"scores out:0"});
  mb.node("Identity", {"x"}, {"../escape"});
  mb.output("scores/out:0");
  mb.output("scores out:0");
  mb.output("../escape");
  CliResult r = kiln({"run", save("m.onnx", mb), "--output-dir", outDir()});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(outFiles(), (std::vector<std::string>{"___escape.npy", "scores_out_0.npy", "scores_out_0_2.npy"}));
}

TEST_F(Cli, WithoutOutputDirOnlySummarizes) {
  CliResult r = kiln({"run", save("m.onnx", symbolicModel()), "--shapes", "x:1x3"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("y  float32 [1,3]"), std::string::npos) << r.out;
  EXPECT_TRUE(outFiles().empty());
}

// ---- bad input: exit code 1 for model/runtime errors, 2 for usage errors ----

TEST_F(Cli, BrokenModelFiles) {
  std::string good = twoInputModel().bytes();
  writeFile(dir_ / "truncated.onnx", good.substr(0, good.size() / 2));
  expectFailure({"run", path("truncated.onnx"), "--output-dir", outDir()}, 1, {"truncated.onnx", "not a valid ONNX model"});
  expectFailure({"inspect", path("truncated.onnx")}, 1, {"truncated.onnx"});

  std::string noise(777, '\0');
  for (size_t i = 0; i < noise.size(); ++i) noise[i] = char((i * 2654435761u) >> 13);
  writeFile(dir_ / "noise.onnx", noise);
  expectFailure({"run", path("noise.onnx"), "--output-dir", outDir()}, 1, {"noise.onnx"});

  writeNpyFile(HostTensor::fromVector<float>({1}, {1}), path("wrong_magic.onnx"));
  expectFailure({"run", path("wrong_magic.onnx"), "--output-dir", outDir()}, 1, {"wrong_magic.onnx"});
  writeFile(dir_ / "empty.onnx", "");
  expectFailure({"inspect", path("empty.onnx")}, 1, {"empty.onnx"});
  expectFailure({"run", path("missing.onnx"), "--output-dir", outDir()}, 1, {"missing.onnx", "does not exist"});
}

TEST_F(Cli, MalformedGraphs) {
  ModelBuilder cycle;
  cycle.input("x", onnx::TensorProto::FLOAT, {2});
  cycle.node("Identity", {"b"}, {"a"}, "first");
  cycle.node("Identity", {"a"}, {"b"}, "second");
  cycle.output("a");
  expectFailure({"run", save("cycle.onnx", cycle), "--output-dir", outDir()}, 1, {"cycle"});

  ModelBuilder dangling;
  dangling.input("x", onnx::TensorProto::FLOAT, {2});
  dangling.node("Identity", {"nowhere"}, {"y"}, "reader");
  dangling.output("y");
  expectFailure({"run", save("dangling.onnx", dangling), "--output-dir", outDir()}, 1, {"nowhere", "reader"});

  ModelBuilder absurd = symbolicModel();
  auto* w = absurd.model().mutable_graph()->add_initializer();
  w->set_name("huge");
  w->set_data_type(onnx::TensorProto::FLOAT);
  for (int i = 0; i < 3; ++i) w->add_dims(int64_t(1) << 30);
  expectFailure({"run", save("absurd.onnx", absurd), "--output-dir", outDir()}, 1, {"huge", "absurdly large"});

  ModelBuilder unsupported;
  unsupported.input("x", onnx::TensorProto::FLOAT, {2});
  unsupported.node("NoSuchOp", {"x"}, {"y"}, "mystery");
  unsupported.output("y");
  expectFailure({"run", save("unsupported.onnx", unsupported), "--output-dir", outDir()}, 1, {"NoSuchOp", "mystery"});
}

TEST_F(Cli, MissingExternalDataFile) {
  ModelBuilder mb;
  mb.node("Identity", {"w"}, {"y"});
  mb.output("y");
  mb.externalInitializer("w", onnx::TensorProto::FLOAT, {4}, {{"location", "weights.bin"}});
  expectFailure({"run", save("ext.onnx", mb), "--output-dir", outDir()}, 1, {path("weights.bin")});
  expectFailure({"inspect", path("ext.onnx")}, 1, {path("weights.bin")});
}

TEST_F(Cli, InputsThatDoNotFitTheModel) {
  std::string model = save("m.onnx", twoInputModel());
  writeNpyFile(test::randomFloats({3, 2}, 1), path("wrong_shape.npy"));
  expectFailure({"run", model, "--input", "x=" + path("wrong_shape.npy"), "--output-dir", outDir()}, 2,
                {"input 'x'", "dimension 0"});
  writeNpyFile(HostTensor::fromVector<int32_t>({2, 3}, {1, 2, 3, 4, 5, 6}), path("wrong_dtype.npy"));
  expectFailure({"run", model, "--input", "x=" + path("wrong_dtype.npy"), "--output-dir", outDir()}, 2,
                {"input 'x'", "float32", "int32"});
  writeTensorProtoFile(HostTensor::fromVector<float>({4}, {1, 2, 3, 4}), path("wrong_dtype.pb"));
  expectFailure({"run", model, "--input", "k=" + path("wrong_dtype.pb"), "--output-dir", outDir()}, 2,
                {"input 'k'", "int64"});
  expectFailure({"run", model, "--input", "nope=" + path("wrong_shape.npy"), "--output-dir", outDir()}, 2,
                {"'nope'", "'x'", "'k'"});
  expectFailure({"run", model, "--shapes", "nope:1x2", "--output-dir", outDir()}, 2, {"'nope'"});
  expectFailure({"run", model, "--input", "x=" + path("absent.npy"), "--output-dir", outDir()}, 2, {"absent.npy"});
}

TEST_F(Cli, BadInputFiles) {
  std::string model = save("m.onnx", twoInputModel());
  std::string npy = serializeNpy(test::randomFloats({2, 3}, 1));
  writeFile(dir_ / "bad_magic.npy", "\x93NUMPX" + npy.substr(6));
  expectFailure({"run", model, "--input", "x=" + path("bad_magic.npy"), "--output-dir", outDir()}, 2, {"bad_magic.npy"});
  writeFile(dir_ / "truncated.npy", npy.substr(0, npy.size() - 5));
  expectFailure({"run", model, "--input", "x=" + path("truncated.npy"), "--output-dir", outDir()}, 2,
                {"truncated.npy", "needs 24"});
  std::string fortran = npy;
  fortran.replace(fortran.find("False"), 5, "True ");
  writeFile(dir_ / "fortran.npy", fortran);
  expectFailure({"run", model, "--input", "x=" + path("fortran.npy"), "--output-dir", outDir()}, 2,
                {"fortran.npy", "Fortran"});
  std::string absurd = npy;
  absurd.replace(absurd.find("(2, 3)"), 6, "(9999999999, 99999999)");
  writeFile(dir_ / "absurd.npy", absurd);
  expectFailure({"run", model, "--input", "x=" + path("absurd.npy"), "--output-dir", outDir()}, 2, {"absurd.npy"});
  writeFile(dir_ / "garbage.pb", std::string("\xff\xff\xff\xff garbage", 12));
  expectFailure({"run", model, "--input", "k=" + path("garbage.pb"), "--output-dir", outDir()}, 2, {"garbage.pb"});
}

TEST_F(Cli, SymbolicDimsNeedShapes) {
  std::string model = save("m.onnx", symbolicModel());
  expectFailure({"run", model, "--output-dir", outDir()}, 2, {"input 'x'", "dimension 0", "batch", "--shapes x:1x3"});
  expectFailure({"run", model, "--shapes", "x:2x4", "--output-dir", outDir()}, 2, {"x", "[batch,3]"});
  expectFailure({"run", model, "--shapes", "x:2xa", "--output-dir", outDir()}, 2, {"'a'", "1x3x224x224"});
  expectFailure({"run", model, "--shapes", "x", "--output-dir", outDir()}, 2, {"NAME:1x3x224x224"});
  expectFailure({"run", model, "--shapes", "x:1000000000x3", "--output-dir", outDir()}, 2, {"too large"});
}

TEST_F(Cli, UsageErrors) {
  std::string model = save("m.onnx", twoInputModel());
  expectFailure({}, 2, {"subcommand"});
  expectFailure({"run"}, 2, {"MODEL"});
  expectFailure({"run", model, "--no-such-flag"}, 2, {"--no-such-flag"});
  expectFailure({"run", model, "--input", "x"}, 2, {"NAME=FILE"});
  expectFailure({"run", model, "--seed", "abc"}, 2, {"abc"});
  expectFailure({"frobnicate"}, 2, {"frobnicate"});
}

TEST_F(Cli, UnwritableOutputDir) {
  writeFile(dir_ / "a_file", "not a folder");
  CliResult r = kiln({"run", save("m.onnx", symbolicModel()), "--shapes", "x:1x3", "--output-dir", path("a_file")});
  EXPECT_EQ(r.exitCode, 1) << r.err;
  EXPECT_NE(r.err.find("a_file"), std::string::npos) << r.err;
  EXPECT_EQ(readFile(dir_ / "a_file"), "not a folder");
}

TEST_F(Cli, RunsRealOpsAgainstANaiveReference) {
  // y = Relu(x + w) with w an initializer: checks the CLI feeds files and weights to real kernels.
  ModelBuilder mb;
  mb.input("x", onnx::TensorProto::FLOAT, {3, 4});
  HostTensor w = test::randomFloats({3, 4}, 21);
  mb.initializer("w", w);
  mb.node("Add", {"x", "w"}, {"sum"});
  mb.node("Relu", {"sum"}, {"y"});
  mb.output("y");
  HostTensor x = test::randomFloats({3, 4}, 22);
  writeNpyFile(x, path("x.npy"));
  CliResult r = kiln({"run", save("m.onnx", mb), "--input", "x=" + path("x.npy"), "--output-dir", outDir()});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  HostTensor y = readNpyFile(path("out/y.npy"));
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{3, 4}));
  for (int i = 0; i < 12; ++i)
    EXPECT_FLOAT_EQ(y.data<float>()[i], std::max(0.0f, x.data<float>()[i] + w.data<float>()[i])) << i;
}
