// openWakeWord's embedding CNN (76 frames of 32 mel features -> a 96-float embedding: 20 Conv with
// LeakyRelu/Max, 5 MaxPool) on the features of synthesized speech, engine vs the reference
// executor, fp32 and fp16, at several batch sizes inside one profile.
#include "models/support/engine_checks.h"
#include "models/support/model_files.h"
#include "models/support/openwakeword.h"
#include "models/support/speech.h"

#include <kiln/onnx_importer.h>

#include <gtest/gtest.h>

#include <cmath>

using namespace kiln;
using namespace kiln::test;

namespace {

constexpr const char* kModel = "embedding_model.onnx";
constexpr const char* kMelModel = "melspectrogram.onnx";
constexpr const char* kSentence = "Alexa, set a timer for five minutes and tell me the weather.";

OptimizationProfile batchProfile() {
  return {{{"input_1", rangeAlong({1, owkw::kWindowFrames, owkw::kMelBins, 1}, 0, 1, 2, 4)}}};
}

// The speech's features as the pipeline makes them, from the reference melspectrogram.
std::vector<float> speechFeatures(const std::vector<float>& speech) {
  auto mel = OnnxImporter().importFile(modelPath(kMelModel).string());
  return owkw::featuresOf(owkw::referenceModel(mel), speech);
}

// Windows 8 frames apart (the pipeline's step) across the features, `batch` at a time.
std::vector<std::vector<int64_t>> windowBatches(const std::vector<float>& features) {
  const int64_t frames = int64_t(features.size()) / owkw::kMelBins;
  std::vector<int64_t> starts;
  for (int64_t s = 0; s + owkw::kWindowFrames <= frames; s += owkw::kWindowStep) starts.push_back(s);
  std::vector<std::vector<int64_t>> batches;
  size_t at = 0;
  for (size_t batch : {1, 3, 4, 2}) {
    if (at + batch > starts.size()) break;
    batches.emplace_back(starts.begin() + int64_t(at), starts.begin() + int64_t(at + batch));
    at += batch;
  }
  return batches;
}

void checkOnSpeech(const std::vector<float>& speech, bool fp16) {
  auto network = OnnxImporter().importFile(modelPath(kModel).string());
  auto engine = buildEngine(*network, fp16, {batchProfile()});
  auto context = engine->createExecutionContext();
  ReferenceExecutor reference(network);
  const std::vector<float> features = speechFeatures(speech);
  const auto batches = windowBatches(features);
  ASSERT_EQ(batches.size(), 4u) << "the sentence is too short for four batches of windows";
  for (const auto& starts : batches) {
    SCOPED_TRACE("batch " + std::to_string(starts.size()) + " from frame " + std::to_string(starts[0]));
    const Tensors inputs = {{"input_1", owkw::windowsAt(features, starts)}};
    const Tensors actual = runEngine(*context, inputs);
    EXPECT_TRUE(matchesReference(actual, runReference(reference, inputs), fp16 ? kFp16Tolerance : kFp32Tolerance));
    const HostTensor& embedding = actual.at("conv2d_19");
    EXPECT_EQ(embedding.dims(), (std::vector<int64_t>{int64_t(starts.size()), 1, 1, owkw::kEmbeddingSize}));
    EXPECT_TRUE(isNonTrivial(embedding, "embedding"));
  }
}

}  // namespace

TEST(EmbeddingModel, Fp32EngineMatchesTheReferenceOnSpeechFeatures) {
  KILN_REQUIRE_MODEL(kModel);
  KILN_REQUIRE_MODEL(kMelModel);
  KILN_REQUIRE_SPEECH(speech, kSentence);
  checkOnSpeech(speech, false);
}

TEST(EmbeddingModel, Fp16EngineMatchesTheReferenceOnSpeechFeatures) {
  KILN_REQUIRE_MODEL(kModel);
  KILN_REQUIRE_MODEL(kMelModel);
  KILN_REQUIRE_SPEECH(speech, kSentence);
  checkOnSpeech(speech, true);
}

// The check has teeth: one embedding value off by 1% of the output's RMS must fail it.
TEST(EmbeddingModel, ACheckOfAPerturbedOutputFails) {
  KILN_REQUIRE_MODEL(kModel);
  KILN_REQUIRE_MODEL(kMelModel);
  KILN_REQUIRE_SPEECH(speech, kSentence);
  auto network = OnnxImporter().importFile(modelPath(kModel).string());
  auto engine = buildEngine(*network, false, {batchProfile()});
  const Tensors inputs = {{"input_1", owkw::windowsAt(speechFeatures(speech), {0, 8})}};
  const Tensors expected = runReference(ReferenceExecutor(network), inputs);
  Tensors actual = runEngine(*engine->createExecutionContext(), inputs);
  ASSERT_TRUE(matchesReference(actual, expected, kFp32Tolerance));
  HostTensor& embedding = actual.at("conv2d_19");
  double sumOfSquares = 0;
  for (float v : valuesOf(embedding)) sumOfSquares += double(v) * v;
  const double rms = std::sqrt(sumOfSquares / double(embedding.elementCount()));
  embedding.data<float>()[37] += float(0.01 * rms);
  EXPECT_FALSE(matchesReference(actual, expected, kFp32Tolerance));
}
