#pragma once
// ONNX GridSample (opset 16, 2-D): samples X at normalised grid locations, with PyTorch's
// grid_sample semantics for unnormalising, padding and the bicubic kernel (A = -0.75).
#include <cstdint>

namespace kiln::kernels {

enum class GridSampleMode { kBilinear, kNearest, kBicubic };
enum class GridSamplePadding { kZeros, kBorder, kReflection };

struct GridSampleConfig {
  int64_t batch = 0, channels = 0, inHeight = 0, inWidth = 0, outHeight = 0, outWidth = 0;
  GridSampleMode mode = GridSampleMode::kBilinear;
  GridSamplePadding padding = GridSamplePadding::kZeros;
  bool alignCorners = false;
};

// input [batch, channels, inHeight, inWidth]; grid [batch, outHeight, outWidth, 2] as (x, y) in
// [-1, 1]; output [batch, channels, outHeight, outWidth].
template <class T>
void gridSample2d(const GridSampleConfig& config, const T* input, const T* grid, T* output);

}  // namespace kiln::kernels
