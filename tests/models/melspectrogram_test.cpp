// openWakeWord's melspectrogram model (audio [batch, samples] -> log-mel [batch, 1, frames, 32]:
// STFT as Conv, power, mel MatMul, dB with an 80 dB floor) on synthesized speech, engine vs the
// reference executor, at several batch sizes and lengths inside one profile, at both sample
// scales the model is fed in practice (speech.h).
#include "models/support/engine_checks.h"
#include "models/support/model_files.h"
#include "models/support/openwakeword.h"
#include "models/support/speech.h"

#include <kiln/onnx_importer.h>

#include <gtest/gtest.h>

using namespace kiln;
using namespace kiln::test;

namespace {

constexpr const char* kModel = "melspectrogram.onnx";
constexpr const char* kSentence = "Hey Jarvis, what is the weather like in Edinburgh today?";

// Batch 1..4, from one JS chunk (1280 samples) to 2 s of audio.
OptimizationProfile audioProfile() {
  return {{{"input", ShapeRange{{1, owkw::kChunkSamples}, {2, 16000}, {4, 32000}}}}};
}

// `batch` rows of `samples` samples each, row b starting b * 3000 samples into the speech (the
// rows hold different sounds); the speech is repeated if it is short.
HostTensor speechBatch(const std::vector<float>& speech, int64_t batch, int64_t samples) {
  std::vector<float> values;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < samples; ++i) values.push_back(speech[size_t(b * 3000 + i) % speech.size()]);
  return tensorOf({batch, samples}, values);
}

void checkOnSpeech(const std::vector<float>& speech, bool fp16) {
  auto network = OnnxImporter().importFile(modelPath(kModel).string());
  auto engine = buildEngine(*network, fp16, {audioProfile()});
  auto context = engine->createExecutionContext();
  ReferenceExecutor reference(network);
  for (auto [batch, samples] : {std::pair<int64_t, int64_t>{1, owkw::kChunkSamples}, {3, 8000}, {4, 32000}}) {
    SCOPED_TRACE("batch " + std::to_string(batch) + " x " + std::to_string(samples) + " samples");
    const Tensors inputs = {{"input", speechBatch(speech, batch, samples)}};
    const Tensors expected = runReference(reference, inputs);
    const Tensors actual = runEngine(*context, inputs);
    EXPECT_TRUE(matchesReference(actual, expected, fp16 ? kFp16Tolerance : kFp32Tolerance));
    const HostTensor& mel = actual.at("output");
    ASSERT_EQ(mel.rank(), 4u);
    EXPECT_EQ(mel.dim(0), batch);
    EXPECT_EQ(mel.dim(3), owkw::kMelBins);
    EXPECT_TRUE(isNonTrivial(mel, "mel output"));
  }
}

}  // namespace

TEST(Melspectrogram, Fp32EngineMatchesTheReferenceOnInt16ScaleSpeech) {
  KILN_REQUIRE_MODEL(kModel);
  KILN_REQUIRE_SPEECH(speech, kSentence);
  checkOnSpeech(speech, false);
}

TEST(Melspectrogram, Fp32EngineMatchesTheReferenceOnUnitScaleSpeech) {
  KILN_REQUIRE_MODEL(kModel);
  KILN_REQUIRE_SPEECH(speech, kSentence);
  checkOnSpeech(scaled(speech, kUnitScale), false);
}

// In [-1, 1] only: on int16-scale speech the power spectrum reaches ~1e10, far past fp16's
// largest value (65504), so an fp16 build gives inf/NaN there; that is fp16's range, not a fault
// to test for (such layers would need fp32: BuilderConfig::layerPrecisions).
TEST(Melspectrogram, Fp16EngineMatchesTheReferenceOnUnitScaleSpeech) {
  KILN_REQUIRE_MODEL(kModel);
  KILN_REQUIRE_SPEECH(speech, kSentence);
  checkOnSpeech(scaled(speech, kUnitScale), true);
}
