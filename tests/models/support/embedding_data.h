#pragma once
// Real input data for openWakeWord's embedding CNN: the mel features of sentences spoken by
// espeak-ng (through the melspectrogram model), cut into the CNN's 76-frame windows.
#include "models/support/openwakeword.h"

#include <kiln/host_tensor.h>

#include <filesystem>
#include <string>
#include <vector>

namespace kiln::test::owkw {

// Every window of the sentence's features, 8 frames apart, as [count, 76, 32, 1]; empty when no
// speech could be made (synthesizeSpeech(sentence).whyNot says why).
HostTensor windowsOf(const std::string& sentence, const Model& melspectrogram, int wordsPerMinute);

// The windows of the three calibration sentences, one tensor a sentence; empty when no speech
// could be made.
std::vector<HostTensor> calibrationWindows(const Model& melspectrogram);

// The calibration batches of the embedding CNN's INT8 tests: 8 windows a file (input_1.K.npy in
// `folder`) from the calibration sentences. Returns how many; 0 when no speech could be made.
int writeCalibrationWindows(const Model& melspectrogram, const std::filesystem::path& folder);

// Windows not used for calibration: two other sentences, the second spoken faster. Empty when no
// speech could be made.
std::vector<HostTensor> heldOutWindows(const Model& melspectrogram);

// Why no speech could be made ("" when it can).
std::string whyNoSpeech();

// Rows [first, first + count) of a float32 [rows, ...] tensor, as a tensor of its own.
HostTensor rows(const HostTensor& t, int64_t first, int64_t count);

}  // namespace kiln::test::owkw
