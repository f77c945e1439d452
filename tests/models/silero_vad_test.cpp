// Silero VAD (audio chunk + LSTM state h, c -> speech probability and the next state; the whole
// network sits in If branches chosen by the sample rate, with nested Ifs and LSTMs) streaming
// synthesized speech: the engine and the reference executor each carry their own h/c from chunk
// to chunk, and must agree at every step, at several batch sizes and chunk lengths.
#include "models/support/engine_checks.h"
#include "models/support/model_files.h"
#include "models/support/speech.h"

#include <kiln/onnx_importer.h>

#include <gtest/gtest.h>

using namespace kiln;
using namespace kiln::test;

namespace {

constexpr const char* kModel = "silero_vad.onnx";
constexpr const char* kSentence = "Is anybody there? I think I heard someone speaking in the next room.";

OptimizationProfile streamingProfile() {
  return {{{"input", ShapeRange{{1, 512}, {1, 1280}, {4, 1536}}},
           {"h", rangeAlong({2, 1, 64}, 1, 1, 1, 4)},
           {"c", rangeAlong({2, 1, 64}, 1, 1, 1, 4)}}};
}

// Chunk `index` of `samples` samples for each of `batch` streams; stream b starts b * 0.4 s into
// the audio (wrapping), so the streams hear different things. Silero takes [-1, 1) floats.
HostTensor chunkOf(const std::vector<float>& audio, int64_t batch, int64_t samples, int64_t index) {
  std::vector<float> values;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < samples; ++i)
      values.push_back(audio[size_t(b * 6400 + index * samples + i) % audio.size()] * kUnitScale);
  return tensorOf({batch, samples}, values);
}

void checkStreaming(const std::vector<float>& speech, int64_t batch, int64_t samples) {
  auto network = OnnxImporter().importFile(modelPath(kModel).string());
  auto context = buildEngine(*network, false, {streamingProfile()})->createExecutionContext();
  ReferenceExecutor reference(network);
  const HostTensor sampleRate = HostTensor::scalar<int64_t>(kSpeechRate);
  // Both start from the zero state, as a stream does (openWakeWord's JS glue too).
  HostTensor engineH(DataType::kFloat32, {2, batch, 64}), engineC = engineH.clone();
  HostTensor referenceH = engineH.clone(), referenceC = engineH.clone();
  std::vector<float> probabilities, state;
  const int64_t chunks = int64_t(speech.size()) / samples;
  for (int64_t k = 0; k < chunks; ++k) {
    SCOPED_TRACE("chunk " + std::to_string(k) + " of " + std::to_string(chunks));
    const HostTensor audio = chunkOf(speech, batch, samples, k);
    Tensors actual = runEngine(*context, {{"input", audio}, {"sr", sampleRate}, {"h", engineH}, {"c", engineC}});
    const Tensors expected =
        runReference(reference, {{"input", audio}, {"sr", sampleRate}, {"h", referenceH}, {"c", referenceC}});
    ASSERT_TRUE(matchesReference(actual, expected, kFp32Tolerance));
    engineH = actual.at("hn").clone();
    engineC = actual.at("cn").clone();
    referenceH = expected.at("hn");
    referenceC = expected.at("cn");
    for (float p : valuesOf(actual.at("output"))) probabilities.push_back(p);
    state.push_back(engineH.data<float>()[0]);
  }
  // Speech, pauses and the state's drift: neither the probability nor the state is constant.
  EXPECT_TRUE(isNonTrivial(probabilities, "speech probability over the stream"));
  EXPECT_TRUE(isNonTrivial(state, "h[0] over the stream"));
  for (float p : probabilities) EXPECT_TRUE(p >= 0 && p <= 1) << p;
}

}  // namespace

// The chunk openWakeWord's browser glue feeds it (1280 samples, 80 ms), one stream.
TEST(SileroVad, OneStreamOf1280SampleChunksMatchesTheReference) {
  KILN_REQUIRE_MODEL(kModel);
  KILN_REQUIRE_SPEECH(speech, kSentence);
  checkStreaming(speech, 1, 1280);
}

// Silero's own chunk sizes (512 and 1536 at 16 kHz), several streams in one batch.
TEST(SileroVad, BatchedStreamsMatchTheReference) {
  KILN_REQUIRE_MODEL(kModel);
  KILN_REQUIRE_SPEECH(speech, kSentence);
  checkStreaming(speech, 3, 512);
  checkStreaming(speech, 4, 1536);
}
