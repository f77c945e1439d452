#pragma once
// Resize / Upsample: each axis samples its input independently (nearest, linear or cubic taps with
// weights), so N-d interpolation is a sequence of 1-D passes over the axes that change.
#include <cstdint>
#include <vector>

namespace kiln::kernels {

enum class ResizeMode { kNearest, kLinear, kCubic };
enum class CoordinateMode {
  kHalfPixel,
  kHalfPixelSymmetric,
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfHalfPixelForNn,
  kTfCropAndResize,
};
// kSimple is Upsample's (and Resize-10's) rule: floor when upsampling, ceil when downsampling.
enum class NearestMode { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil, kSimple };

struct ResizeOptions {
  ResizeMode mode = ResizeMode::kNearest;
  CoordinateMode coordinates = CoordinateMode::kHalfPixel;
  NearestMode nearest = NearestMode::kRoundPreferFloor;
  float cubicCoeffA = -0.75f;
  bool excludeOutside = false;
  bool antialias = false;
};

// For each output coordinate of one axis: `taps` source indices and weights; `outside` marks
// tf_crop_and_resize coordinates that fall outside the input (they take the extrapolation value).
struct AxisSampling {
  int64_t taps = 1;
  std::vector<int64_t> index;
  std::vector<float> weight;
  std::vector<uint8_t> outside;
  bool identity = false;  // the output equals the input along this axis
};

// roiStart/roiEnd are used by tf_crop_and_resize only (normalised coordinates).
AxisSampling sampleAxis(int64_t inSize, int64_t outSize, double scale, double roiStart, double roiEnd,
                        const ResizeOptions& options);

// Nearest neighbour for any element type (axes sampled with mode kNearest).
template <class T>
void resizeNearest(const T* src, const std::vector<int64_t>& srcDims, T* dst, const std::vector<int64_t>& dstDims,
                   const std::vector<AxisSampling>& axes, const T& extrapolation);

// Linear / cubic for floating-point types; accumulates in float.
template <class T>
void resizeInterpolate(const T* src, const std::vector<int64_t>& srcDims, T* dst,
                       const std::vector<int64_t>& dstDims, const std::vector<AxisSampling>& axes,
                       float extrapolation);

}  // namespace kiln::kernels
