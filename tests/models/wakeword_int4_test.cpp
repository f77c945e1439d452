// INT4 weight-only builds of the real wake-word heads (their hidden dense layers: 1536 to 3264 x
// 128 or 32, and 128 x 128 Gemms; the output layers are too small and stay float, and so do
// hey_jarvis's verifier layers inside its If), groups of 32 along K, on the
// embeddings of a synthesized utterance that says every wake phrase, as the pipeline slides them:
// the utterance's probabilities stay within cosine 0.99 of the FP32 engine's, with an error > 0
// (really quantized), from a plan a fraction of the FP32 one's size.
#include "models/support/engine_checks.h"
#include "models/support/model_files.h"
#include "models/support/openwakeword.h"
#include "models/support/speech.h"

#include <kiln/builder.h>
#include <kiln/onnx_importer.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>

using namespace kiln;
using namespace kiln::test;

namespace {

double cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double dot = 0, na = 0, nb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    dot += double(a[i]) * b[i];
    na += double(a[i]) * a[i];
    nb += double(b[i]) * b[i];
  }
  return dot / std::sqrt(na * nb);
}

BuildResult buildPlan(const Network& network, bool int4) {
  BuilderConfig config;
  config.backend = testBackend();
  config.int4Weights = int4;
  config.int4GroupSize = 32;
  return Builder().build(network, config);
}

class WakeWordHeadInt4 : public ::testing::TestWithParam<const char*> {};

}  // namespace

TEST_P(WakeWordHeadInt4, ProbabilitiesStayCloseToFp32OnSpeechEmbeddings) {
  KILN_REQUIRE_MODEL(GetParam());
  KILN_REQUIRE_MODEL("melspectrogram.onnx");
  KILN_REQUIRE_MODEL("embedding_model.onnx");
  KILN_REQUIRE_SPEECH(speech, owkw::kEveryWakePhrase);
  auto network = OnnxImporter().importFile(modelPath(GetParam()).string());
  const int64_t window = owkw::headWindow(*network);
  const std::string input = network->runtimeInputs().at(0), output = network->outputs().at(0);
  const BuildResult fp32Plan = buildPlan(*network, false), int4Plan = buildPlan(*network, true);
  int int4Layers = 0;
  for (const auto& l : int4Plan.report.layers) int4Layers += l.type == "kiln.WeightOnlyMatMul";
  // Both hidden dense layers; hey_rhasspy's second (32 x 32) is too small and stays float.
  EXPECT_EQ(int4Layers, std::string(GetParam()) == "hey_rhasspy_v0.1.onnx" ? 1 : 2);
  auto fp32 = Runtime().load(fp32Plan.plan)->createExecutionContext();
  auto int4 = Runtime().load(int4Plan.plan)->createExecutionContext();

  const auto embeddings = owkw::speechEmbeddings(speech);
  std::vector<float> actual, expected;
  for (size_t last = 0; last < embeddings.size(); ++last) {
    const Tensors inputs = {{input, owkw::headInput(embeddings, last, window)}};
    for (float p : valuesOf(runEngine(*int4, inputs).at(output))) actual.push_back(p);
    for (float p : valuesOf(runEngine(*fp32, inputs).at(output))) expected.push_back(p);
  }
  const std::vector<int64_t> dims = {int64_t(actual.size())};
  const double c = cosine(actual, expected), error = relativeL2(tensorOf(dims, actual), tensorOf(dims, expected));
  std::cout << "[ int4     ] " << GetParam() << ": " << int4Layers << " int4 layers, cosine " << c
            << ", relative L2 " << error << ", largest probability " << *std::max_element(expected.begin(), expected.end())
            << " (fp32), plan " << fp32Plan.plan.size() << " -> " << int4Plan.plan.size() << " bytes\n";
  EXPECT_GE(c, 0.99);
  EXPECT_GT(error, 0.0) << "the int4 engine computes what FP32 does: nothing was quantized";
  EXPECT_TRUE(isNonTrivial(actual, "int4 probabilities over the utterance"));
  // hey_jarvis keeps its verifier's 64 x 1536 weights float (inside its If, which the step leaves alone).
  EXPECT_LT(int4Plan.plan.size(), fp32Plan.plan.size() / (std::string(GetParam()) == "hey_jarvis_v0.1.onnx" ? 2 : 3));
}

INSTANTIATE_TEST_SUITE_P(Heads, WakeWordHeadInt4,
                         ::testing::Values("hey_jarvis_v0.1.onnx", "alexa_v0.1.onnx", "hey_mycroft_v0.1.onnx",
                                           "hey_rhasspy_v0.1.onnx", "timer_v0.1.onnx", "weather_v0.1.onnx"),
                         [](const auto& instance) {
                           std::string name = instance.param;
                           return name.substr(0, name.find("_v0"));
                         });
