#include "ngram_counter.h"

#include <algorithm>

namespace kiln::kernels {

NgramCounter::NgramCounter(const std::vector<std::vector<std::vector<int64_t>>>& grams,
                           const std::vector<std::vector<int64_t>>& slots, int64_t minLength, int64_t maxLength,
                           int64_t maxSkip)
    : bySize_(grams.size()), minLength_(minLength), maxLength_(std::min<int64_t>(maxLength, int64_t(grams.size()))),
      maxSkip_(maxSkip) {
  for (size_t k = 0; k < grams.size(); ++k)
    for (size_t i = 0; i < grams[k].size(); ++i) bySize_[k].emplace(grams[k][i], slots[k][i]);
}

void NgramCounter::count(const int64_t* tokens, int64_t length, float* counts) const {
  std::vector<int64_t> key;
  for (int64_t start = 0; start < length; ++start)
    for (int64_t n = std::max<int64_t>(minLength_, 1); n <= maxLength_; ++n) {
      const auto& pool = bySize_[size_t(n - 1)];
      if (pool.empty()) continue;
      int64_t skips = n == 1 ? 0 : maxSkip_;
      for (int64_t skip = 0; skip <= skips; ++skip) {
        int64_t stride = skip + 1;
        if (start + (n - 1) * stride >= length) break;
        key.clear();
        for (int64_t j = 0; j < n; ++j) key.push_back(tokens[start + j * stride]);
        if (auto it = pool.find(key); it != pool.end()) counts[it->second] += 1.0f;
      }
    }
}

}  // namespace kiln::kernels
