// The calibration cache's text form and the model fingerprint it is keyed by.
#include <kiln/error.h>

#include "builder/calibration/calibration_cache.h"
#include "common/test_models.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace kiln;
using namespace kiln::calibration;

namespace {

Network smallNetwork(uint32_t weightSeed) {
  Network n;
  n.addInput("x", DataType::kFloat32, Shape({Dim::symbol("N"), 4}));
  n.addConstant("w", test::randomFloats({4, 3}, weightSeed));
  Layer mm;
  mm.name = "mm";
  mm.opType = "MatMul";
  mm.opsetVersion = 17;
  mm.inputs = {"x", "w"};
  mm.outputs = {"y"};
  n.addLayer(mm);
  n.markOutput("y");
  return n;
}

}  // namespace

TEST(CalibrationCache, RoundTripsEveryScaleExactly) {
  CalibrationCache cache{"0123456789abcdef", "percentile 99.9", {}};
  cache.scales["input_1"] = 0.0123456789f;
  cache.scales["x:0"] = 1.0f / 3.0f;  // a name with ':' (the separator is the last ": ")
  cache.scales["layer/relu out"] = 7.5e-6f;
  const std::string text = formatCalibrationCache(cache);
  EXPECT_EQ(text.rfind("# kiln calibration cache 1\n# model 0123456789abcdef\n# calibrator percentile 99.9\n", 0), 0u)
      << text;
  const CalibrationCache back = parseCalibrationCache(text, "test.cache");
  EXPECT_EQ(back.model, cache.model);
  EXPECT_EQ(back.calibrator, cache.calibrator);
  ASSERT_EQ(back.scales.size(), cache.scales.size());
  for (const auto& [name, scale] : cache.scales) {
    ASSERT_TRUE(back.scales.count(name)) << name;
    EXPECT_EQ(std::memcmp(&back.scales.at(name), &scale, sizeof scale), 0) << name;  // bit for bit
  }
}

TEST(CalibrationCache, MalformedFilesNameTheLine) {
  auto message = [](const std::string& text) {
    try {
      parseCalibrationCache(text, "c.cache");
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string header = "# kiln calibration cache 1\n# model 00\n# calibrator entropy\n";
  EXPECT_NE(message("TRT-8601-EntropyCalibration2\n").find("line 1"), std::string::npos);
  EXPECT_NE(message("# kiln calibration cache 1\n# calibrator entropy\n").find("line 2"), std::string::npos);
  EXPECT_NE(message(header + "a: 0.5\nb 0.5\n").find("line 5"), std::string::npos);
  EXPECT_NE(message(header + "a: -0.5\n").find("not a positive scale"), std::string::npos);
  EXPECT_NE(message(header + "a: nan\n").find("line 4"), std::string::npos);
  EXPECT_NE(message(header + "a: 0.5x\n").find("c.cache"), std::string::npos);
}

TEST(CalibrationCache, TheFingerprintFollowsTheWeightsAndTheGraph) {
  const std::string a = networkFingerprint(smallNetwork(1));
  EXPECT_EQ(a.size(), 16u);
  EXPECT_EQ(a, networkFingerprint(smallNetwork(1)));
  EXPECT_NE(a, networkFingerprint(smallNetwork(2)));  // other weight values
  Network renamed = smallNetwork(1);
  renamed.layers()[0].name = "other";
  EXPECT_NE(a, networkFingerprint(renamed));
}
