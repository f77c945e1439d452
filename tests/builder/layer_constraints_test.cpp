// Per-layer precision constraints: the constraints file format (comments, names holding ':',
// conflicts and malformed lines named by line, a round trip through the writer) and the
// builder's refusal of names that are no engine layer, saying where the node went.
#include <kiln/builder.h>
#include <kiln/error.h>
#include <kiln/layer_precision_file.h>
#include <kiln/onnx_importer.h>

#include "common/precision_models.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

using namespace kiln;

namespace {

std::string errorOf(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

}  // namespace

TEST(LayerPrecisionFile, ReadsOneConstraintALineSkippingCommentsAndBlanks) {
  const LayerPrecisions c = parseLayerPrecisionFile(
      "# made by hand\n\nconv1:fp32\r\n  /block/0/MatMul:fp16  \nscope:inner:bf16\nconv1:fp32\n", "c.txt");
  EXPECT_EQ(c, (LayerPrecisions{{"conv1", Precision::kFP32},
                                {"/block/0/MatMul", Precision::kFP16},
                                {"scope:inner", Precision::kBF16}}));
  EXPECT_TRUE(parseLayerPrecisionFile("# nothing\n", "c.txt").empty());
}

TEST(LayerPrecisionFile, NamesTheLineOfAMalformedOrConflictingConstraint) {
  EXPECT_NE(errorOf([] { parseLayerPrecisionFile("a:fp32\n\nb fp32\n", "c.txt"); }).find("c.txt line 3: 'b fp32' must look like LAYER:PRECISION"),
            std::string::npos);
  EXPECT_NE(errorOf([] { parseLayerPrecisionFile("a:fp64\n", "c.txt"); }).find("c.txt line 1"), std::string::npos);
  EXPECT_NE(errorOf([] { parseLayerPrecisionFile(":fp32\n", "c.txt"); }).find("c.txt line 1"), std::string::npos);
  EXPECT_NE(errorOf([] { parseLayerPrecisionFile("a:fp32\na:fp16\n", "c.txt"); })
                .find("c.txt line 2 asks for layer 'a' in fp16 but line 1 asks for fp32"),
            std::string::npos);
  EXPECT_NE(errorOf([] { readLayerPrecisionFile("/nonexistent/c.txt"); }).find("'/nonexistent/c.txt' cannot be read"),
            std::string::npos);
  EXPECT_NE(errorOf([] { parseLayerPrecision("conv1", "--layer-precision"); }).find("--layer-precision: 'conv1'"),
            std::string::npos);
}

TEST(LayerPrecisionFile, WhatTheWriterWritesReadsBack) {
  const std::vector<std::pair<std::string, Precision>> lines = {{"z", Precision::kFP32}, {"a:b", Precision::kFP16}};
  const std::string text = formatLayerPrecisionFile(lines, {"for kiln build", "two layers"});
  EXPECT_EQ(text, "# for kiln build\n# two layers\nz:fp32\na:b:fp16\n");
  const auto path = std::filesystem::temp_directory_path() / ("kiln_constraints_" + std::to_string(::getpid()));
  std::ofstream(path) << text;
  EXPECT_EQ(readLayerPrecisionFile(path.string()), (LayerPrecisions{{"z", Precision::kFP32}, {"a:b", Precision::kFP16}}));
  std::filesystem::remove(path);
}

TEST(LayerConstraints, ANameThatIsNoEngineLayerIsRefusedSayingWhereTheNodeWent) {
  auto network = OnnxImporter().importBytes(test::fp16OverflowModel().bytes());
  auto build = [&](const std::string& layer, int optimizationLevel = 3) {
    BuilderConfig config;
    config.allowFP16 = true;
    config.optimizationLevel = optimizationLevel;
    config.layerPrecisions[layer] = Precision::kFP32;
    Builder().build(*network, config);
  };
  build("amplify");  // a layer: fine
  EXPECT_NE(errorOf([&] { build("tanh1"); })
                .find("constraint tanh1:fp32 names ONNX node 'tanh1', which the graph passes fused into layer 'mm1'; "
                      "constrain 'mm1' instead"),
            std::string::npos);
  build("tanh1", 0);  // no passes: the node is a layer
  const std::string unknown = errorOf([&] { build("conv9"); });
  EXPECT_NE(unknown.find("constraint conv9:fp32 names no layer of this model's engine"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("'mm1', 'mm2', 'amplify', 'shrink'"), std::string::npos) << unknown;
}

TEST(LayerConstraints, ANodeThePassesRemovedIsNamedAsRemoved) {
  using namespace test::onnx_types;
  test::ModelBuilder mb;
  mb.input("x", kFloat, {2, 3}).output("y");
  mb.node("Identity", {"x"}, {"i"}, "passthrough");
  mb.node("Relu", {"i"}, {"y"}, "relu");
  auto network = OnnxImporter().importBytes(mb.bytes());
  BuilderConfig config;
  config.layerPrecisions["passthrough"] = Precision::kFP32;
  const std::string message = errorOf([&] { Builder().build(*network, config); });
  EXPECT_NE(message.find("names ONNX node 'passthrough', which the graph passes removed"), std::string::npos) << message;
}
