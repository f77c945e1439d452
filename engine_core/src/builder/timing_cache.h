#pragma once
// Measured tactic times, keyed by backend, device, layer signature and tactic, kept across builds
// in a JSON file so rebuilding a model does not time the same candidates again.
#include <map>
#include <optional>
#include <string>

namespace kiln {

class TimingCache {
 public:
  // Loads `path` if it exists (a malformed file is an error naming it); empty path: in memory only.
  explicit TimingCache(std::string path = "");
  std::optional<double> find(const std::string& key) const;
  void put(const std::string& key, double milliseconds);
  size_t size() const { return entries_.size(); }
  // Writes the file atomically (no-op without a path).
  void save() const;

 private:
  std::string path_;
  std::map<std::string, double> entries_;
};

}  // namespace kiln
