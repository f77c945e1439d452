#pragma once
// ONNX NonMaxSuppression: per batch and class, greedy selection of boxes by descending score,
// dropping boxes whose IoU with an already selected one exceeds the threshold.
#include <array>
#include <cstdint>
#include <vector>

namespace kiln::kernels {

struct NmsConfig {
  int64_t batches = 0, classes = 0, boxes = 0;
  bool centerPointBox = false;  // boxes are [x_center, y_center, width, height], else two corners [y1, x1, y2, x2]
  int64_t maxPerClass = 0;
  float iouThreshold = 0.0f;
  bool hasScoreThreshold = false;
  float scoreThreshold = 0.0f;  // boxes must score above it
};

// boxes: [batches, boxes, 4]; scores: [batches, classes, boxes]. Returns (batch, class, box) triples,
// batch-major, then class, then selection order. Equal scores keep the lower box index first.
std::vector<std::array<int64_t, 3>> nonMaxSuppression(const NmsConfig& config, const float* boxes, const float* scores);

}  // namespace kiln::kernels
