#include "models/support/speech.h"

#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <numbers>
#include <random>
#include <stdexcept>

namespace kiln::test {

namespace {

uint32_t readLE(const std::string& bytes, size_t offset, int size) {
  uint32_t value = 0;
  for (int i = 0; i < size; ++i) value |= uint32_t(uint8_t(bytes[offset + i])) << (8 * i);
  return value;
}

std::string shellQuoted(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

}  // namespace

std::vector<float> scaled(std::vector<float> samples, float factor) {
  for (float& s : samples) s *= factor;
  return samples;
}

std::vector<float> decodeWav(const std::string& bytes, int& sampleRate) {
  if (bytes.size() < 12 || bytes.compare(0, 4, "RIFF") != 0 || bytes.compare(8, 4, "WAVE") != 0)
    throw std::runtime_error("not a RIFF/WAVE file");
  bool haveFormat = false;
  for (size_t at = 12; at + 8 <= bytes.size();) {
    const std::string id = bytes.substr(at, 4);
    // espeak-ng --stdout streams: its size fields say "to the end" (0x7ffff000), so clamp them.
    const size_t size = std::min<size_t>(readLE(bytes, at + 4, 4), bytes.size() - at - 8);
    const size_t body = at + 8;
    if (id == "fmt ") {
      if (size < 16) throw std::runtime_error("short fmt chunk");
      const uint32_t format = readLE(bytes, body, 2), channels = readLE(bytes, body + 2, 2);
      const uint32_t bits = readLE(bytes, body + 14, 2);
      if (format != 1 || channels != 1 || bits != 16)
        throw std::runtime_error("expected 16-bit PCM mono, got format " + std::to_string(format) + ", " +
                                 std::to_string(channels) + " channels, " + std::to_string(bits) + " bits");
      sampleRate = int(readLE(bytes, body + 4, 4));
      haveFormat = true;
    } else if (id == "data") {
      if (!haveFormat) throw std::runtime_error("data chunk before fmt chunk");
      std::vector<float> samples(size / 2);
      for (size_t i = 0; i < samples.size(); ++i)
        samples[i] = float(int16_t(uint16_t(readLE(bytes, body + 2 * i, 2))));
      return samples;
    }
    at = body + size + (size & 1);  // chunks are padded to even sizes
  }
  throw std::runtime_error("no data chunk");
}

std::vector<float> resample(const std::vector<float>& samples, int fromRate, int toRate) {
  if (fromRate == toRate) return samples;
  // Low-pass just below the lower of the two Nyquist rates, so that downsampling does not fold
  // the voice's high harmonics back into the band; Hann-windowed sinc, 32 input samples each side
  // at the cut-off's scale.
  const double step = double(fromRate) / toRate;                   // input samples per output sample
  const double cutoff = 0.95 * 0.5 * std::min(1.0, 1.0 / step);   // cycles per input sample
  const double radius = 16.0 / cutoff;
  std::vector<float> out(size_t(double(samples.size()) / step));
  for (size_t i = 0; i < out.size(); ++i) {
    const double x = double(i) * step;
    const auto first = int64_t(std::max(0.0, std::ceil(x - radius)));
    const auto last = std::min(int64_t(samples.size()) - 1, int64_t(std::floor(x + radius)));
    double sum = 0;
    for (int64_t k = first; k <= last; ++k) {
      const double t = x - double(k);
      const double arg = 2 * cutoff * t;
      const double sinc = arg == 0 ? 1.0 : std::sin(std::numbers::pi * arg) / (std::numbers::pi * arg);
      const double window = 0.5 * (1 + std::cos(std::numbers::pi * t / radius));
      sum += samples[size_t(k)] * 2 * cutoff * sinc * window;
    }
    out[i] = float(sum);
  }
  return out;
}

// KILN_SPEECH_CACHE names a folder of espeak-ng's WAVs by text and rate: read from there when
// present, written there when made. The GPU machine, which has no espeak-ng, gets a filled one.
std::string speechCacheFile(const std::string& text, int wordsPerMinute) {
  const char* dir = std::getenv("KILN_SPEECH_CACHE");
  if (!dir || !*dir) return "";
  return std::string(dir) + "/" + std::to_string(std::hash<std::string>{}(text)) + "-" +
         std::to_string(wordsPerMinute) + ".wav";
}

Speech synthesizeSpeech(const std::string& text, int wordsPerMinute) {
  Speech speech;
  const std::string cached = speechCacheFile(text, wordsPerMinute);
  std::string wav;
  if (std::ifstream file(cached, std::ios::binary); !cached.empty() && file)
    wav.assign(std::istreambuf_iterator<char>(file), {});
  if (wav.empty()) {
    const std::string command =
        "espeak-ng -v en-us -s " + std::to_string(wordsPerMinute) + " --stdout " + shellQuoted(text) + " 2>/dev/null";
    FILE* pipe = popen(command.c_str(), "r");
    if (!pipe) {
      speech.whyNot = std::string("cannot start espeak-ng: ") + std::strerror(errno);
      return speech;
    }
    char buffer[1 << 16];
    for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) wav.append(buffer, n);
    const int status = pclose(pipe);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
      speech.whyNot = "espeak-ng not found on PATH (Debian package espeak-ng; scripts/setup.sh installs it)";
      return speech;
    }
    if (status != 0) {
      speech.whyNot = "espeak-ng failed (status " + std::to_string(status) + "): " + command;
      return speech;
    }
    if (!cached.empty()) std::ofstream(cached, std::ios::binary) << wav;
  }
  try {
    int rate = 0;
    std::vector<float> samples = decodeWav(wav, rate);
    if (rate <= 0) throw std::runtime_error("sample rate " + std::to_string(rate));
    // Half a second of quiet before the speech and a second after it, so that the first and last
    // words fit whole into the models' windows (a wake-word head wants its phrase at the end of
    // ~1.3-3.4 s of context).
    speech.samples.assign(kSpeechRate / 2, 0.0f);
    const std::vector<float> spoken = resample(samples, rate, kSpeechRate);
    speech.samples.insert(speech.samples.end(), spoken.begin(), spoken.end());
    speech.samples.resize(speech.samples.size() + kSpeechRate, 0.0f);
    // espeak-ng's pauses are exact zeros, which no microphone delivers: add a seeded noise floor
    // of about -70 dBFS (sigma 10 on the int16 scale), so quiet windows look like a quiet room.
    std::mt19937 rng(16000);
    std::normal_distribution<float> noise(0.0f, 10.0f);
    for (float& s : speech.samples) s += noise(rng);
  } catch (const std::runtime_error& e) {
    speech.whyNot = std::string("cannot read espeak-ng's WAV output: ") + e.what();
  }
  return speech;
}

}  // namespace kiln::test
