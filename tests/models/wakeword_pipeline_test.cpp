// openWakeWord end to end, as its browser package streams it (models/support/openwakeword.h):
// 1280-sample chunks of synthesized speech -> melspectrogram -> mel / 10 + 2 -> 76-frame windows ->
// embedding model -> each wake-word head, at both sample scales (speech.h), fp32 engines.
//
// Each engine is held to the reference executor on the reference chain's own inputs (every call
// of every stage: relative L2 <= 1e-5). Then a chain of engines alone runs against the chain of
// references: its embeddings must still agree to 1e-5; its probabilities, three models down,
// carry the differences of every stage before, which a head amplifies (hey_mycroft's differ by
// 1.6e-5 where each stage alone is within 3e-6), so they are held to 1e-4.
#include "models/support/engine_checks.h"
#include "models/support/model_files.h"
#include "models/support/openwakeword.h"
#include "models/support/speech.h"

#include <kiln/onnx_importer.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <ostream>

using namespace kiln;
using namespace kiln::test;

namespace {

// Every head reacts to something in it (see wakeword_heads_test.cpp).
constexpr const char* kSentence =
    "Alexa, set a timer for ten minutes. Hey Mycroft, what is the weather? Hey Rhasspy. Hey Jarvis.";
const std::vector<std::string> kHeads = {"hey_jarvis_v0.1.onnx", "alexa_v0.1.onnx",  "hey_mycroft_v0.1.onnx",
                                         "hey_rhasspy_v0.1.onnx", "timer_v0.1.onnx", "weather_v0.1.onnx"};
constexpr double kChainTolerance = 1e-4;

std::shared_ptr<Network> load(const std::string& file) { return OnnxImporter().importFile(modelPath(file).string()); }

// One stage's outputs on the same inputs, engine and reference, over the whole stream.
struct StageRecord {
  std::vector<float> engine, reference;
  double worstCall = 0;  // the largest relative L2 of a single call
};

// A model that answers with the reference's output and also runs the engine on the same input,
// recording both: the reference chain drives, the engine shadows it.
owkw::Model shadowed(owkw::Model reference, owkw::Model engine, StageRecord& record) {
  return [=, &record](const HostTensor& x) {
    HostTensor expected = reference(x), actual = engine(x);
    const double error = relativeL2(actual, expected);
    record.worstCall = std::isnan(error) ? INFINITY : std::max(record.worstCall, error);
    for (float v : valuesOf(actual)) record.engine.push_back(v);
    for (float v : valuesOf(expected)) record.reference.push_back(v);
    return expected;
  };
}

double seriesError(const std::vector<float>& actual, const std::vector<float>& expected) {
  const std::vector<int64_t> dims = {int64_t(actual.size())};
  return actual.size() == expected.size() ? relativeL2(tensorOf(dims, actual), tensorOf(dims, expected)) : NAN;
}

// The models of the chain, built once per test.
struct Chain {
  std::shared_ptr<Network> mel = load("melspectrogram.onnx"), embedding = load("embedding_model.onnx");
  std::vector<std::shared_ptr<Network>> heads;
  // The chain runs one chunk and one window at a time, as the JS does: batch 1.
  std::shared_ptr<Engine> melEngine =
      buildEngine(*mel, false, {{{{"input", ShapeRange{{1, 1280}, {1, 1280}, {1, 1280}}}}}});
  std::shared_ptr<Engine> embeddingEngine =
      buildEngine(*embedding, false, {{{{"input_1", ShapeRange{{1, 76, 32, 1}, {1, 76, 32, 1}, {1, 76, 32, 1}}}}}});
  std::vector<std::shared_ptr<Engine>> headEngines;

  Chain() {
    for (const auto& file : kHeads) {
      heads.push_back(load(file));
      headEngines.push_back(buildEngine(*heads.back(), false));
    }
  }
};

std::vector<owkw::Step> stream(owkw::Pipeline& pipeline, const std::vector<float>& audio) {
  std::vector<owkw::Step> steps;
  for (size_t at = 0; at + owkw::kChunkSamples <= audio.size(); at += owkw::kChunkSamples) {
    const std::vector<float> chunk(audio.begin() + int64_t(at), audio.begin() + int64_t(at + owkw::kChunkSamples));
    for (auto& step : pipeline.feed(chunk)) steps.push_back(std::move(step));
  }
  return steps;
}

struct Scale {
  const char* name;
  float factor;  // applied to int16-scale samples
};

void PrintTo(const Scale& scale, std::ostream* out) { *out << scale.name; }  // names in ctest

class WakeWordPipeline : public ::testing::TestWithParam<Scale> {
 protected:
  void SetUp() override {
    KILN_REQUIRE_MODEL("melspectrogram.onnx");
    KILN_REQUIRE_MODEL("embedding_model.onnx");
    for (const auto& head : kHeads) KILN_REQUIRE_MODEL(head);
    Speech speech = synthesizeSpeech(kSentence);
    if (!speech.whyNot.empty()) GTEST_SKIP() << "SKIPPED: " << speech.whyNot;
    audio_ = scaled(speech.samples, GetParam().factor);
    chain_ = std::make_unique<Chain>();
  }

  std::vector<float> audio_;
  std::unique_ptr<Chain> chain_;
};

}  // namespace

TEST_P(WakeWordPipeline, EachEngineMatchesTheReferenceOnTheStreamsInputs) {
  const Chain& c = *chain_;
  StageRecord mel, embedding;
  std::vector<StageRecord> heads(kHeads.size());
  std::vector<owkw::Head> shadowedHeads;
  for (size_t h = 0; h < kHeads.size(); ++h)
    shadowedHeads.push_back({kHeads[h],
                             shadowed(owkw::referenceModel(c.heads[h]), owkw::engineModel(c.headEngines[h]), heads[h]),
                             owkw::headWindow(*c.heads[h])});
  owkw::Pipeline pipeline(shadowed(owkw::referenceModel(c.mel), owkw::engineModel(c.melEngine), mel),
                          shadowed(owkw::referenceModel(c.embedding), owkw::engineModel(c.embeddingEngine), embedding),
                          shadowedHeads);
  const auto steps = stream(pipeline, audio_);
  ASSERT_GE(steps.size(), 40u) << "expected 40+ embedding windows from " << audio_.size() << " samples";

  EXPECT_LE(mel.worstCall, kFp32Tolerance) << "melspectrogram, worst chunk";
  EXPECT_TRUE(isNonTrivial(mel.engine, "mel output"));
  EXPECT_LE(embedding.worstCall, kFp32Tolerance) << "embedding model, worst window";
  EXPECT_TRUE(isNonTrivial(embedding.engine, "embeddings"));
  // A head's probabilities are compared over the whole stream (wakeword_heads_test.cpp says why).
  for (size_t h = 0; h < kHeads.size(); ++h) {
    EXPECT_LE(seriesError(heads[h].engine, heads[h].reference), kFp32ProbabilityTolerance) << kHeads[h];
    EXPECT_TRUE(isNonTrivial(heads[h].engine, kHeads[h] + " probabilities"));
  }
}

TEST_P(WakeWordPipeline, AChainOfEnginesFollowsTheChainOfReferences) {
  const Chain& c = *chain_;
  std::vector<owkw::Head> engineHeads, referenceHeads;
  for (size_t h = 0; h < kHeads.size(); ++h) {
    const int64_t window = owkw::headWindow(*c.heads[h]);
    engineHeads.push_back({kHeads[h], owkw::engineModel(c.headEngines[h]), window});
    referenceHeads.push_back({kHeads[h], owkw::referenceModel(c.heads[h]), window});
  }
  owkw::Pipeline engines(owkw::engineModel(c.melEngine), owkw::engineModel(c.embeddingEngine), engineHeads);
  owkw::Pipeline reference(owkw::referenceModel(c.mel), owkw::referenceModel(c.embedding), referenceHeads);
  const auto engineSteps = stream(engines, audio_), referenceSteps = stream(reference, audio_);
  ASSERT_EQ(engineSteps.size(), referenceSteps.size());
  ASSERT_GE(engineSteps.size(), 40u);

  for (size_t s = 0; s < engineSteps.size(); ++s)
    EXPECT_LE(seriesError(engineSteps[s].embedding, referenceSteps[s].embedding), kFp32Tolerance) << "window " << s;
  for (size_t h = 0; h < kHeads.size(); ++h) {
    std::vector<float> actual, expected;
    for (size_t s = 0; s < engineSteps.size(); ++s) {
      actual.insert(actual.end(), engineSteps[s].headOutputs[h].begin(), engineSteps[s].headOutputs[h].end());
      expected.insert(expected.end(), referenceSteps[s].headOutputs[h].begin(), referenceSteps[s].headOutputs[h].end());
    }
    EXPECT_LE(seriesError(actual, expected), kChainTolerance) << kHeads[h];  // NaN fails too
    EXPECT_TRUE(isNonTrivial(actual, kHeads[h] + " probabilities"));
    RecordProperty(kHeads[h].substr(0, kHeads[h].find("_v0")) + "_max_probability",
                   std::to_string(*std::max_element(actual.begin(), actual.end())));
  }
}

INSTANTIATE_TEST_SUITE_P(Scales, WakeWordPipeline,
                         ::testing::Values(Scale{"unit", kUnitScale}, Scale{"int16", 1.0f}),
                         [](const auto& instance) { return std::string(instance.param.name); });
