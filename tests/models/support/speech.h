#pragma once
// Real speech for the audio models: espeak-ng (Debian package espeak-ng) speaks a sentence, and the
// tests get it at 16 kHz, the rate openWakeWord and Silero VAD expect.
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kiln::test {

inline constexpr int kSpeechRate = 16000;

// openWakeWord's Python package feeds its models 16-bit PCM samples as floats (the scale it was
// trained on); the browser package's WakeWordEngine.js feeds Web Audio samples in [-1, 1], and so
// does Silero VAD's own code. Multiply int16-scale samples by this for the latter.
inline constexpr float kUnitScale = 1.0f / 32768.0f;

struct Speech {
  std::vector<float> samples;  // mono, 16 kHz, int16 scale ([-32768, 32767]) as openWakeWord feeds it
  std::string whyNot;          // set when no speech could be made (espeak-ng missing, ...)
};

// Speaks `text` with espeak-ng's US English voice at `wordsPerMinute`, resamples it to 16 kHz, puts
// 0.5 s of quiet before it and 1 s after it, and adds a faint seeded noise floor (a room's, so
// that pauses are not digital silence).
Speech synthesizeSpeech(const std::string& text, int wordsPerMinute = 160);

// `samples` times `factor`.
std::vector<float> scaled(std::vector<float> samples, float factor);

// Samples of a 16-bit PCM mono WAV file's bytes as int16-scale floats; throws std::runtime_error
// naming what is wrong. `sampleRate` receives the file's rate.
std::vector<float> decodeWav(const std::string& bytes, int& sampleRate);

// Band-limited resampling (windowed sinc), from `fromRate` to `toRate` samples per second.
std::vector<float> resample(const std::vector<float>& samples, int fromRate, int toRate);

}  // namespace kiln::test

// Declares `var` (a std::vector<float> of 16 kHz speech) or skips the test with the reason.
#define KILN_REQUIRE_SPEECH(var, text)                                        \
  ::kiln::test::Speech var##_speech = ::kiln::test::synthesizeSpeech(text);   \
  if (!var##_speech.whyNot.empty()) GTEST_SKIP() << "SKIPPED: " << var##_speech.whyNot; \
  const std::vector<float>& var = var##_speech.samples
