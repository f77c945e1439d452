#pragma once
// N-gram counting for ONNX TfIdfVectorizer over token ids (strings are mapped to ids by the caller).
#include <cstdint>
#include <map>
#include <vector>

namespace kiln::kernels {

class NgramCounter {
 public:
  // `grams[k]` are the pool's n-grams of length k + 1 (token ids), `slots[k]` their output positions.
  // N-grams shorter than minLength or longer than maxLength are never counted. Tokens of a skip-gram
  // are maxSkip + 1 apart at most.
  NgramCounter(const std::vector<std::vector<std::vector<int64_t>>>& grams,
               const std::vector<std::vector<int64_t>>& slots, int64_t minLength, int64_t maxLength, int64_t maxSkip);

  // Adds the occurrences of each pool n-gram in tokens[0, length) to counts[slot]. A unigram counts
  // once per position (skips do not apply to it).
  void count(const int64_t* tokens, int64_t length, float* counts) const;

 private:
  std::vector<std::map<std::vector<int64_t>, int64_t>> bySize_;  // index n - 1
  int64_t minLength_, maxLength_, maxSkip_;
};

}  // namespace kiln::kernels
