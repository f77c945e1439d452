#pragma once
// A table of named entries filled once at start-up and read from then on (op schemas, CPU kernels
// and tactics, backends). OpRegistry keys entries by (domain, op type), with "" and "ai.onnx" the
// same domain.
#include <map>
#include <string>
#include <vector>

namespace kiln {

template <class Entry>
class Registry {
 public:
  void add(const std::string& key, Entry entry) { entries_.insert_or_assign(key, std::move(entry)); }
  const Entry* find(const std::string& key) const {
    auto it = entries_.find(key);
    return it == entries_.end() ? nullptr : &it->second;
  }
  Entry* find(const std::string& key) {
    auto it = entries_.find(key);
    return it == entries_.end() ? nullptr : &it->second;
  }
  std::vector<std::string> keys() const {
    std::vector<std::string> out;
    for (const auto& [key, entry] : entries_) out.push_back(key);
    return out;
  }
  std::vector<const Entry*> all() const {
    std::vector<const Entry*> out;
    for (const auto& [key, entry] : entries_) out.push_back(&entry);
    return out;
  }

 private:
  std::map<std::string, Entry> entries_;
};

inline std::string opKey(const std::string& domain, const std::string& opType) {
  return (domain == "ai.onnx" ? std::string() : domain) + "::" + opType;
}

template <class Entry>
class OpRegistry {
 public:
  void add(const std::string& domain, const std::string& opType, Entry entry) {
    entries_.add(opKey(domain, opType), std::move(entry));
  }
  const Entry* find(const std::string& domain, const std::string& opType) const {
    return entries_.find(opKey(domain, opType));
  }
  Entry* find(const std::string& domain, const std::string& opType) { return entries_.find(opKey(domain, opType)); }
  std::vector<const Entry*> all() const { return entries_.all(); }

 private:
  Registry<Entry> entries_;
};

}  // namespace kiln
