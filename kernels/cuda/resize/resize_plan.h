#pragma once
// Where each Resize output reads, shared by the kernels and the host tests: per axis, the source
// coordinate of an output coordinate and its taps (index and weight), computed as the CPU kernel's
// sampleAxis does; per output element, the product of its axes' taps.
#include "resize.h"

#include <kernels/cuda/common/host_device.h>
#include <kernels/cuda/common/tensor_geometry.h>

#include <math.h>

#include <cstdint>
#include <optional>

#if defined(__CUDA_ARCH__)  // unrolled, the per-axis arrays below stay in registers
#define KILN_RESIZE_UNROLL _Pragma("unroll")
#else
#define KILN_RESIZE_UNROLL
#endif

namespace kiln::kernels::cuda {

// Products that feed a sum are rounded on their own on the device too, so that the coordinates
// (and the nearest indices that hang on them) come out as the CPU's do: nvcc would fuse them.
KILN_HD double productRn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}

// The cubic convolution kernel, factored at its roots t = 1 and t = 2: the expanded polynomials
// lose most of their digits to cancellation there in float, and exclude_outside's normalisation
// can magnify that.
KILN_HD float cubicWeight(float t, float a) {
  t = fabsf(t);
  if (t <= 1) return (t - 1) * ((a + 2) * t * t - t - 1);  // (a+2)t^3 - (a+3)t^2 + 1
  if (t < 2) return a * (t - 1) * (t - 2) * (t - 2);       // a(t^3 - 5t^2 + 8t - 4)
  return 0;
}

// One axis: output coordinate -> source coordinate -> taps.
struct AxisSampler {
  int64_t inSize = 1, outSize = 1;
  double scale = 1, roiStart = 0, roiEnd = 1;
  ResizeMode mode = ResizeMode::kNearest;
  ResizeCoordinateMode coordinates = ResizeCoordinateMode::kHalfPixel;
  ResizeNearestMode nearest = ResizeNearestMode::kRoundPreferFloor;
  float cubicA = -0.75f;
  bool excludeOutside = false;
  bool normalise = false;   // weights divided by their sum (antialias or exclude_outside)
  float filterScale = 1;    // < 1 widens the filter (antialias when downsampling)
  int first = 0, taps = 1;  // taps are floor(x) + first + k for k < taps

  // ONNX Resize's coordinate_transformation_mode. align_corners and tf_crop_and_resize divide by
  // the unrounded resized length scale * inSize, as ONNX's reference does.
  KILN_HD double sourceCoordinate(int64_t o) const {
    const double x = double(o), resized = productRn(scale, double(inSize));
    switch (coordinates) {
      case ResizeCoordinateMode::kHalfPixel: return (x + 0.5) / scale - 0.5;
      case ResizeCoordinateMode::kHalfPixelSymmetric: {
        const double adjustment = double(outSize) / resized;
        const double offset = productRn(double(inSize) / 2, 1 - adjustment);
        return offset + (x + 0.5) / scale - 0.5;
      }
      case ResizeCoordinateMode::kPytorchHalfPixel: return outSize > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
      case ResizeCoordinateMode::kAlignCorners:
        return resized == 1 ? 0.0 : productRn(x, double(inSize - 1)) / (resized - 1);
      case ResizeCoordinateMode::kAsymmetric: return x / scale;
      case ResizeCoordinateMode::kTfHalfPixelForNn: return (x + 0.5) / scale;
      case ResizeCoordinateMode::kTfCropAndResize:
        if (outSize > 1)
          return productRn(roiStart, double(inSize - 1)) +
                 productRn(productRn(x, roiEnd - roiStart), double(inSize - 1)) / (resized - 1);
        return productRn(productRn(0.5, roiStart + roiEnd), double(inSize - 1));
    }
    return x;
  }

  // tf_crop_and_resize coordinates outside the input take the extrapolation value.
  KILN_HD bool outside(double x) const {
    return coordinates == ResizeCoordinateMode::kTfCropAndResize && (x < 0 || x > double(inSize - 1));
  }

  KILN_HD int64_t clampIndex(int64_t i) const { return i < 0 ? 0 : i >= inSize ? inSize - 1 : i; }

  KILN_HD int64_t nearestIndex(double x) const {
    double r = x;
    switch (nearest) {
      case ResizeNearestMode::kRoundPreferFloor: r = x == floor(x) + 0.5 ? floor(x) : round(x); break;
      case ResizeNearestMode::kRoundPreferCeil: r = floor(x + 0.5); break;
      case ResizeNearestMode::kFloor: r = floor(x); break;
      case ResizeNearestMode::kCeil: r = ceil(x); break;
      case ResizeNearestMode::kSimple: r = scale < 1 ? ceil(x) : floor(x); break;
    }
    return clampIndex(int64_t(r));
  }

  // The interpolation window at source coordinate x.
  struct Window {
    int64_t base = 0;  // floor(x)
    float ratio = 0;   // x - floor(x)
    float norm = 1;    // 1 / sum of the raw weights when normalising
  };

  KILN_HD float rawWeight(const Window& w, int k) const {
    const float t = (float(first + k) - w.ratio) * filterScale;
    float weight = mode == ResizeMode::kCubic ? cubicWeight(t, cubicA) : fmaxf(0.0f, 1 - fabsf(t));
    const int64_t source = w.base + first + k;
    if (excludeOutside && (source < 0 || source >= inSize)) weight = 0;
    return weight;
  }

  KILN_HD Window window(double x) const {
    Window w;
    const double base = floor(x);
    w.base = int64_t(base);
    w.ratio = float(x - base);
    if (normalise) {
      float sum = 0;
      for (int k = 0; k < taps; ++k) sum += rawWeight(w, k);
      if (sum != 0) w.norm = 1 / sum;
    }
    return w;
  }

  KILN_HD float weight(const Window& w, int k) const { return rawWeight(w, k) * w.norm; }
  KILN_HD int64_t index(const Window& w, int k) const { return clampIndex(w.base + first + k); }
};

// The sampler of one axis (sizes, scale, roi) under `options`, as sampleAxis sets it up.
AxisSampler makeAxisSampler(int64_t inSize, int64_t outSize, double scale, double roiStart, double roiEnd,
                            const ResizeOptions& options);

// True when every output coordinate takes exactly its own input coordinate.
bool isIdentityAxis(const AxisSampler& s);

// A resize as planes (the leading axes it leaves alone) of `rank` axes, some sampled.
struct ResizePlan {
  int rank = 0;
  int64_t planes = 1, planeIn = 1, planeOut = 1;  // plane count and elements per plane
  int64_t outDims[kMaxRank] = {};
  int64_t inStrides[kMaxRank] = {};  // within a plane
  bool sampled[kMaxRank] = {};       // false: the axis is copied (output size = input size)
  AxisSampler axes[kMaxRank];

  // Nearest: the source offset (within a plane) of output element `pixel`, or -1 to extrapolate.
  KILN_HD int64_t nearestOffset(int64_t pixel) const {
    int64_t offset = 0;
    bool out = false;
    for (int d = rank - 1; d >= 0; --d) {
      const int64_t c = pixel % outDims[d];
      pixel /= outDims[d];
      if (!sampled[d]) {
        offset += c * inStrides[d];
        continue;
      }
      const double x = axes[d].sourceCoordinate(c);
      out = out || axes[d].outside(x);
      offset += axes[d].nearestIndex(x) * inStrides[d];
    }
    return out ? -1 : offset;
  }

  // Linear / cubic: calls visit(offset within a plane, weight) for every tap of output element
  // `pixel` with a non-zero weight; returns false (visiting nothing) when it extrapolates.
  template <class Visit>
  KILN_HD bool forEachTap(int64_t pixel, Visit&& visit) const {
    AxisSampler::Window windows[kMaxRank];
    int64_t base = 0, combinations = 1;
    KILN_RESIZE_UNROLL
    for (int d = kMaxRank - 1; d >= 0; --d) {
      if (d >= rank) continue;
      const int64_t c = pixel % outDims[d];
      pixel /= outDims[d];
      if (!sampled[d]) {
        base += c * inStrides[d];
        continue;
      }
      const double x = axes[d].sourceCoordinate(c);
      if (axes[d].outside(x)) return false;
      windows[d] = axes[d].window(x);
      combinations *= axes[d].taps;
    }
    for (int64_t combination = 0; combination < combinations; ++combination) {
      int64_t rest = combination, offset = base;
      float weight = 1;
      KILN_RESIZE_UNROLL
      for (int d = kMaxRank - 1; d >= 0; --d) {
        if (d >= rank || !sampled[d]) continue;
        const int k = int(rest % axes[d].taps);
        rest /= axes[d].taps;
        weight *= axes[d].weight(windows[d], k);
        offset += axes[d].index(windows[d], k) * inStrides[d];
      }
      if (weight != 0) visit(offset, weight);
    }
    return true;
  }
};

// nullopt for arguments resize() refuses (ranks, sizes, an empty input with a non-empty output).
std::optional<ResizePlan> planResize(const std::vector<int64_t>& srcDims, const std::vector<int64_t>& dstDims,
                                     const std::vector<double>& scales, const std::vector<double>& roiStart,
                                     const std::vector<double>& roiEnd, const ResizeOptions& options);

}  // namespace kiln::kernels::cuda
