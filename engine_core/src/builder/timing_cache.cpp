#include "timing_cache.h"

#include <kiln/builder.h>
#include <kiln/error.h>

#include <nlohmann/json.hpp>

#include <filesystem>

namespace kiln {

TimingCache::TimingCache(std::string path) : path_(std::move(path)) {
  std::error_code ec;
  if (path_.empty() || !std::filesystem::exists(path_, ec)) return;
  auto bytes = readFileBytes(path_);
  try {
    auto j = nlohmann::json::parse(bytes.begin(), bytes.end());
    if (j.at("format") != "kiln-timing-cache-1") throw Error(ErrorCode::kInvalidArgument, "unknown format");
    for (const auto& [key, ms] : j.at("entries").items()) entries_[key] = ms.get<double>();
  } catch (const std::exception& e) {
    throw Error(ErrorCode::kInvalidArgument, "timing cache '" + path_ + "' is malformed (" + e.what() +
                                                 "); delete it and it will be rebuilt");
  }
}

std::optional<double> TimingCache::find(const std::string& key) const {
  auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  return it->second;
}

void TimingCache::put(const std::string& key, double milliseconds) { entries_[key] = milliseconds; }

void TimingCache::save() const {
  if (path_.empty()) return;
  nlohmann::json j;
  j["format"] = "kiln-timing-cache-1";
  j["entries"] = entries_;
  std::string text = j.dump(1);
  writeFileAtomically(path_, std::vector<uint8_t>(text.begin(), text.end()));
}

}  // namespace kiln
