#include "non_max_suppression.h"

#include <kernels/cpu/common/parallel.h>

#include <algorithm>
#include <numeric>

namespace kiln::kernels {
namespace {

struct Corners {
  float yMin, xMin, yMax, xMax, area;
};

Corners cornersOf(const float* b, bool centerPointBox) {
  Corners c;
  if (centerPointBox) {
    c.xMin = b[0] - b[2] / 2;
    c.xMax = b[0] + b[2] / 2;
    c.yMin = b[1] - b[3] / 2;
    c.yMax = b[1] + b[3] / 2;
  } else {  // either diagonal may be given
    c.yMin = std::min(b[0], b[2]);
    c.yMax = std::max(b[0], b[2]);
    c.xMin = std::min(b[1], b[3]);
    c.xMax = std::max(b[1], b[3]);
  }
  c.area = (c.xMax - c.xMin) * (c.yMax - c.yMin);
  return c;
}

bool overlapsTooMuch(const Corners& a, const Corners& b, float threshold) {
  float width = std::min(a.xMax, b.xMax) - std::max(a.xMin, b.xMin);
  float height = std::min(a.yMax, b.yMax) - std::max(a.yMin, b.yMin);
  if (width <= 0 || height <= 0 || a.area <= 0 || b.area <= 0) return false;
  float intersection = width * height;
  float unionArea = a.area + b.area - intersection;
  return unionArea > 0 && intersection / unionArea > threshold;
}

}  // namespace

std::vector<std::array<int64_t, 3>> nonMaxSuppression(const NmsConfig& config, const float* boxes, const float* scores) {
  const int64_t n = config.boxes;
  std::vector<Corners> corners(size_t(config.batches * n));
  for (int64_t i = 0; i < config.batches * n; ++i) corners[size_t(i)] = cornersOf(boxes + i * 4, config.centerPointBox);
  const int64_t pairs = config.batches * config.classes;
  std::vector<std::vector<int64_t>> selected(static_cast<size_t>(pairs));
  parallelFor(pairs, 1, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> order;
    for (int64_t pair = begin; pair < end; ++pair) {
      const int64_t batch = pair / config.classes;
      const float* s = scores + pair * n;
      const Corners* c = corners.data() + batch * n;
      order.clear();
      for (int64_t i = 0; i < n; ++i)
        if (!config.hasScoreThreshold || s[i] > config.scoreThreshold) order.push_back(i);
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return s[a] > s[b]; });
      auto& kept = selected[size_t(pair)];
      for (int64_t candidate : order) {
        if (int64_t(kept.size()) >= config.maxPerClass) break;
        bool suppressed = std::any_of(kept.begin(), kept.end(), [&](int64_t k) {
          return overlapsTooMuch(c[k], c[candidate], config.iouThreshold);
        });
        if (!suppressed) kept.push_back(candidate);
      }
    }
  });
  std::vector<std::array<int64_t, 3>> out;
  for (int64_t pair = 0; pair < pairs; ++pair)
    for (int64_t box : selected[size_t(pair)]) out.push_back({pair / config.classes, pair % config.classes, box});
  return out;
}

}  // namespace kiln::kernels
