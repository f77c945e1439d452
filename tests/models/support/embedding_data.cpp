#include "models/support/embedding_data.h"

#include "models/support/speech.h"

#include <kiln/npy.h>

namespace kiln::test::owkw {
namespace {

const std::vector<std::string> kCalibrationSentences = {
    "Alexa, set a timer for five minutes and tell me the weather.",
    "Hey Jarvis, turn on the kitchen lights and play some music.",
    "Remind me to call my sister tomorrow morning at nine."};
const std::vector<std::string> kHeldOutSentences = {
    "What is the capital of Australia, and how far away is it?",
    "Hey Mycroft, please read me the latest news headlines."};

}  // namespace

HostTensor windowsOf(const std::string& sentence, const Model& melspectrogram, int wordsPerMinute) {
  Speech speech = synthesizeSpeech(sentence, wordsPerMinute);
  if (!speech.whyNot.empty()) return {};
  const std::vector<float> features = featuresOf(melspectrogram, speech.samples);
  std::vector<int64_t> starts;
  for (int64_t s = 0; (s + kWindowFrames) * kMelBins <= int64_t(features.size()); s += kWindowStep)
    starts.push_back(s);
  return windowsAt(features, starts);
}

std::vector<HostTensor> calibrationWindows(const Model& melspectrogram) {
  std::vector<HostTensor> windows;
  for (const auto& sentence : kCalibrationSentences) {
    windows.push_back(windowsOf(sentence, melspectrogram, 160));
    if (windows.back().empty()) return {};
  }
  return windows;
}

int writeCalibrationWindows(const Model& melspectrogram, const std::filesystem::path& folder) {
  int batches = 0;
  for (const HostTensor& windows : calibrationWindows(melspectrogram))
    for (int64_t first = 0; first + 8 <= windows.dim(0); first += 8)
      writeNpyFile(rows(windows, first, 8), (folder / ("input_1." + std::to_string(batches++) + ".npy")).string());
  return batches;
}

std::vector<HostTensor> heldOutWindows(const Model& melspectrogram) {
  std::vector<HostTensor> windows = {windowsOf(kHeldOutSentences[0], melspectrogram, 160),
                                     windowsOf(kHeldOutSentences[1], melspectrogram, 200)};
  if (windows[0].empty() || windows[1].empty()) return {};
  return windows;
}

std::string whyNoSpeech() { return synthesizeSpeech(kCalibrationSentences[0]).whyNot; }

HostTensor rows(const HostTensor& t, int64_t first, int64_t count) {
  std::vector<int64_t> dims = t.dims();
  dims[0] = count;
  const int64_t row = t.elementCount() / t.dim(0);
  std::vector<float> values(t.data<float>() + first * row, t.data<float>() + (first + count) * row);
  return tensorOf(dims, values);
}

}  // namespace kiln::test::owkw
