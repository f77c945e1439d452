#include "models/support/openwakeword.h"

#include "models/support/model_files.h"

#include <kiln/onnx_importer.h>
#include <kiln/reference_executor.h>

#include <algorithm>
#include <stdexcept>

namespace kiln::test::owkw {

Model engineModel(std::shared_ptr<const Engine> engine) {
  std::string input, output;
  for (const IOTensorInfo& io : engine->ioTensors()) (io.isInput ? input : output) = io.name;
  std::shared_ptr<ExecutionContext> context = engine->createExecutionContext();
  // Outputs are cloned: they outlive this run, and a later run may reuse the buffers.
  return [=](const HostTensor& x) { return runEngine(*context, {{input, x}}).at(output).clone(); };
}

Model referenceModel(std::shared_ptr<const Network> network) {
  const std::string input = network->runtimeInputs().at(0), output = network->outputs().at(0);
  auto reference = std::make_shared<ReferenceExecutor>(network);
  return [=](const HostTensor& x) { return reference->run({{input, x}}).at(output).tensor; };
}

std::vector<float> melToFeatures(const HostTensor& mel) {
  if (mel.rank() != 4 || mel.dim(1) != 1 || mel.dim(3) != kMelBins)
    throw std::invalid_argument("melspectrogram output is not [batch, 1, frames, 32]");
  std::vector<float> features = valuesOf(mel);
  for (float& v : features) v = v / 10.0f + 2.0f;
  return features;
}

std::vector<float> featuresOf(const Model& melspectrogram, const std::vector<float>& audio) {
  std::vector<float> features;
  for (size_t at = 0; at + kChunkSamples <= audio.size(); at += kChunkSamples) {
    std::vector<float> chunk(audio.begin() + int64_t(at), audio.begin() + int64_t(at + kChunkSamples));
    std::vector<float> frames = melToFeatures(melspectrogram(tensorOf({1, kChunkSamples}, chunk)));
    features.insert(features.end(), frames.begin(), frames.begin() + kFramesPerChunk * kMelBins);
  }
  return features;
}

HostTensor windowsAt(const std::vector<float>& features, const std::vector<int64_t>& startFrames) {
  std::vector<float> values;
  for (int64_t start : startFrames) {
    if ((start + kWindowFrames) * kMelBins > int64_t(features.size()))
      throw std::invalid_argument("window at frame " + std::to_string(start) + " runs past the features");
    values.insert(values.end(), features.begin() + start * kMelBins,
                  features.begin() + (start + kWindowFrames) * kMelBins);
  }
  return tensorOf({int64_t(startFrames.size()), kWindowFrames, kMelBins, 1}, values);
}

HostTensor headInput(const std::vector<std::vector<float>>& embeddings, size_t last, int64_t window) {
  HostTensor input(DataType::kFloat32, {1, window, kEmbeddingSize});  // zero-filled
  float* out = input.data<float>();
  for (int64_t slot = window - 1, e = int64_t(last); slot >= 0 && e >= 0; --slot, --e)
    std::copy(embeddings.at(size_t(e)).begin(), embeddings.at(size_t(e)).end(), out + slot * kEmbeddingSize);
  return input;
}

Pipeline::Pipeline(Model melspectrogram, Model embedding, std::vector<Head> heads)
    : melspectrogram_(std::move(melspectrogram)), embedding_(std::move(embedding)), heads_(std::move(heads)) {}

std::vector<Step> Pipeline::feed(const std::vector<float>& chunk) {
  if (int64_t(chunk.size()) != kChunkSamples) throw std::invalid_argument("a chunk is 1280 samples");
  std::vector<float> features = melToFeatures(melspectrogram_(tensorOf({1, kChunkSamples}, chunk)));
  for (int64_t f = 0; f < kFramesPerChunk; ++f)
    frames_.emplace_back(features.begin() + f * kMelBins, features.begin() + (f + 1) * kMelBins);

  std::vector<Step> steps;
  while (int64_t(frames_.size()) >= kWindowFrames) {
    std::vector<float> window;
    for (int64_t f = 0; f < kWindowFrames; ++f) window.insert(window.end(), frames_[f].begin(), frames_[f].end());
    Step step;
    step.embedding = valuesOf(embedding_(tensorOf({1, kWindowFrames, kMelBins, 1}, window)));
    embeddings_.push_back(step.embedding);
    for (const Head& head : heads_)
      step.headOutputs.push_back(valuesOf(head.score(headInput(embeddings_, embeddings_.size() - 1, head.window))));
    steps.push_back(std::move(step));
    frames_.erase(frames_.begin(), frames_.begin() + kWindowStep);
  }
  return steps;
}

int64_t headWindow(const Network& head) {
  const Shape& shape = head.tensor(head.runtimeInputs().at(0)).shape;
  if (shape.rank() != 3 || !shape[1].isKnown()) throw std::invalid_argument("a head's input is [1, window, 96]");
  return shape[1].value();
}

std::vector<std::vector<float>> speechEmbeddings(const std::vector<float>& speech) {
  auto mel = OnnxImporter().importFile(modelPath("melspectrogram.onnx").string());
  auto embedding = OnnxImporter().importFile(modelPath("embedding_model.onnx").string());
  const std::vector<float> features = featuresOf(referenceModel(mel), speech);
  std::vector<int64_t> starts;
  for (int64_t s = 0; (s + kWindowFrames) * kMelBins <= int64_t(features.size()); s += kWindowStep)
    starts.push_back(s);
  const std::vector<float> all = valuesOf(referenceModel(embedding)(windowsAt(features, starts)));
  std::vector<std::vector<float>> embeddings;
  for (size_t i = 0; i < starts.size(); ++i)
    embeddings.emplace_back(all.begin() + int64_t(i) * kEmbeddingSize, all.begin() + int64_t(i + 1) * kEmbeddingSize);
  return embeddings;
}

}  // namespace kiln::test::owkw
