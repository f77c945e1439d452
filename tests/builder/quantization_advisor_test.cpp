// kiln::adviseQuantization on small models with one precision-sensitive layer: it ranks that
// layer worst (alone it breaks the criterion, the others do not), suggests keeping exactly it,
// measures per-layer times from the profiler, marks the Pareto front, and exports the same
// numbers as JSON, CSV and an SVG plot.
#include <kiln/error.h>
#include <kiln/onnx_importer.h>
#include <kiln/quantization_advisor.h>

#include "common/precision_models.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <iostream>
#include <sstream>

using namespace kiln;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> namesOf(const QuantizationAdvice& advice) {
  std::vector<std::string> names;
  for (const auto& l : advice.layers) names.push_back(l.name);
  return names;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class Int8Advice : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kiln_advisor_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    options_ = test::int8OutlierOptions(test::writeOutlierBatches(dir_.string()));
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
  PrecisionDebugOptions options_;
};

}  // namespace

TEST_F(Int8Advice, RanksTheOutlierReaderWorstAndSuggestsKeepingOnlyIt) {
  auto network = OnnxImporter().importBytes(test::int8OutlierModel().bytes());
  QuantizationAdvisorOptions advisor;
  advisor.profileIterations = 5;
  const QuantizationAdvice advice = adviseQuantization(*network, options_, advisor);
  ASSERT_EQ(advice.layers.size(), 3u);
  EXPECT_EQ(advice.layers.front().name, "mixer");
  for (const auto& l : advice.layers) {
    std::cout << "[ measured ] " << l.name << " alone in int8: 1 - cosine " << l.alone.error << ", " << l.keptMs
              << " ms fp32, " << l.reducedMs << " ms int8\n";
    EXPECT_EQ(l.precision, "int8");
    EXPECT_EQ(l.type, "kiln.QuantizedMatMul");
    EXPECT_EQ(l.alone.pass, l.name != "mixer") << l.name;
    EXPECT_GT(l.alone.error, 0.0) << l.name << " was not quantized";
    EXPECT_GT(l.keptMs, 0.0) << l.name;
    EXPECT_GT(l.reducedMs, 0.0) << l.name;
  }
  EXPECT_FALSE(advice.reducedScore.pass);
  EXPECT_TRUE(advice.allKeptScore.pass);
  EXPECT_TRUE(advice.suggestionPasses);
  EXPECT_EQ(advice.keep, std::vector<std::string>{"mixer"});
  EXPECT_TRUE(advice.suggestedScore.pass);
  EXPECT_TRUE(advice.layers.front().keep);
  EXPECT_EQ(advice.constraints(options_.config), (LayerPrecisions{{"mixer", Precision::kFP32}}));
  EXPECT_GT(advice.keptTotalMs, 0.0);
  EXPECT_GT(advice.suggestedTotalMs, 0.0);
  // reduced, all kept, one trial per layer, then the bisection of the ranking (1 worst passes).
  ASSERT_EQ(advice.trials.size(), 6u);
  EXPECT_EQ(advice.trials.back().phase, "keep worst");
  EXPECT_EQ(advice.trials.back().kept, std::vector<std::string>{"mixer"});
}

TEST_F(Int8Advice, ExportsTheSameNumbersAsJsonCsvAndSvg) {
  auto network = OnnxImporter().importBytes(test::int8OutlierModel().bytes());
  QuantizationAdvisorOptions advisor;
  advisor.profileIterations = 3;
  const QuantizationAdvice advice = adviseQuantization(*network, options_, advisor);

  const auto json = nlohmann::json::parse(advice.toJson());
  EXPECT_EQ(json["format"], "kiln-quantization-advice-1");
  EXPECT_EQ(json["keep"], nlohmann::json::array({"mixer"}));
  ASSERT_EQ(json["layers"].size(), 3u);
  EXPECT_EQ(json["layers"][0]["name"], "mixer");
  EXPECT_EQ(json["layers"][0]["keep"], true);
  EXPECT_DOUBLE_EQ(json["layers"][1]["alone"]["error"].get<double>(), advice.layers[1].alone.error);
  EXPECT_EQ(json["trials"].size(), advice.trials.size());

  std::istringstream csv(advice.toCsv());
  std::string header, first;
  std::getline(csv, header);
  std::getline(csv, first);
  EXPECT_EQ(header.rfind("rank,layer,type,precision,error_alone", 0), 0u) << header;
  EXPECT_EQ(first.rfind("1,mixer,kiln.QuantizedMatMul,int8,", 0), 0u) << first;
  EXPECT_EQ(first.substr(first.size() - 3), "yes") << "mixer is kept: " << first;

  const std::string svg = advice.toSvg();
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_EQ(count(svg, "<svg"), 1u);
  EXPECT_EQ(count(svg, "</svg>"), 1u);
  EXPECT_EQ(count(svg, "<circle"), 3u + 2u) << "a point per layer and two in the legend";
  EXPECT_EQ(count(svg, "<title>mixer"), 1u);
  EXPECT_NE(svg.find("limit: cosine &gt;= 0.999"), std::string::npos);
}

TEST(QuantizationAdvisor, RanksTheFp16OverflowWorstWithoutProfiling) {
  auto network = OnnxImporter().importBytes(test::fp16OverflowModel().bytes());
  const PrecisionDebugOptions o = test::fp16OverflowOptions(1);
  QuantizationAdvisorOptions advisor;
  advisor.profileIterations = 0;
  const QuantizationAdvice advice = adviseQuantization(*network, o, advisor);
  ASSERT_EQ(advice.layers.size(), 4u);
  EXPECT_EQ(namesOf(advice).front(), "amplify");
  EXPECT_TRUE(std::isinf(advice.layers.front().alone.error));
  for (size_t i = 1; i < advice.layers.size(); ++i) {
    EXPECT_TRUE(advice.layers[i].alone.pass) << advice.layers[i].name;
    EXPECT_LE(advice.layers[i].alone.error, advice.layers[i - 1].alone.error) << "sorted worst first";
    EXPECT_EQ(advice.layers[i].keptMs, 0.0) << "not profiled";
  }
  EXPECT_EQ(advice.keep, std::vector<std::string>{"amplify"});
  EXPECT_EQ(advice.keptTotalMs, 0.0);
  // Without times every layer saves 0: the front is the least error alone.
  EXPECT_FALSE(advice.layers.front().pareto);
  EXPECT_TRUE(advice.layers.back().pareto);
}

TEST(QuantizationAdvisor, AModelThatFailsEvenInFp32HasNoSuggestion) {
  auto network = OnnxImporter().importBytes(test::unseededRandomModel().bytes());
  PrecisionDebugOptions o = test::fp16OverflowOptions(1);
  o.criterion = {};  // the default tolerance
  QuantizationAdvisorOptions advisor;
  advisor.profileIterations = 0;
  const QuantizationAdvice advice = adviseQuantization(*network, o, advisor);
  EXPECT_FALSE(advice.allKeptScore.pass);
  EXPECT_FALSE(advice.suggestionPasses);
  EXPECT_TRUE(advice.keep.empty());
  EXPECT_FALSE(advice.layers.empty());
}
