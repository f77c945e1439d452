#include "tactic_lock.h"

#include <kiln/error.h>
#include <kiln/file_io.h>

#include <filesystem>
#include <sstream>

namespace kiln {
namespace {

constexpr const char* kMagic = "kiln tactic lock 1";

std::string hex(const std::vector<uint8_t>& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (uint8_t b : bytes) {
    s += digits[b >> 4];
    s += digits[b & 15];
  }
  return s;
}

std::optional<std::vector<uint8_t>> unhex(const std::string& text) {
  if (text.size() % 2) return std::nullopt;
  auto value = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  std::vector<uint8_t> out;
  for (size_t i = 0; i < text.size(); i += 2) {
    const int hi = value(text[i]), lo = value(text[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out.push_back(uint8_t(hi * 16 + lo));
  }
  return out;
}

}  // namespace

TacticLock::TacticLock(std::string path, std::string backend, std::string device)
    : path_(std::move(path)), backend_(std::move(backend)), device_(std::move(device)) {
  if (path_.empty() || !std::filesystem::exists(path_)) return;
  const std::vector<uint8_t> bytes = readFileBytes(path_);
  std::istringstream in(std::string(bytes.begin(), bytes.end()));
  auto bad = [&](const std::string& why) {
    return Error(ErrorCode::kInvalidArgument, "the tactic lock '" + path_ + "' " + why +
                                                  "; delete it to write a new one with the next build");
  };
  std::string line;
  if (!std::getline(in, line) || line != kMagic) throw bad("is not a Kiln tactic lock");
  if (!std::getline(in, line) || line != "backend\t" + backend_)
    throw bad("was made for another backend (" + line + "), not " + backend_);
  if (!std::getline(in, line) || line != "device\t" + device_)
    throw bad("was made on another device (" + line + "), not " + device_);
  for (int number = 4; std::getline(in, line); ++number) {
    if (line.empty()) continue;
    const size_t a = line.find('\t'), b = a == std::string::npos ? a : line.find('\t', a + 1);
    auto payload = b == std::string::npos ? std::nullopt : unhex(line.substr(b + 1));
    if (!payload || a == 0 || b == a + 1) throw bad("has a malformed line " + std::to_string(number));
    layers_[line.substr(0, a)] = {line.substr(a + 1, b - a - 1), std::move(*payload)};
  }
  replaying_ = true;
}

std::optional<LockedTactic> TacticLock::find(const std::string& layer) const {
  auto it = layers_.find(layer);
  if (it == layers_.end()) return std::nullopt;
  return it->second;
}

void TacticLock::record(const std::string& layer, LockedTactic choice) {
  if (!replaying_) layers_[layer] = std::move(choice);
}

void TacticLock::save() const {
  if (path_.empty() || replaying_) return;
  std::string text = std::string(kMagic) + "\nbackend\t" + backend_ + "\ndevice\t" + device_ + "\n";
  for (const auto& [layer, choice] : layers_) text += layer + "\t" + choice.tactic + "\t" + hex(choice.payload) + "\n";
  writeFileAtomically(path_, text);
}

}  // namespace kiln
