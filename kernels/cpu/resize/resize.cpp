#include "resize.h"

#include <kernels/cpu/common/numeric_types.h>
#include <kernels/cpu/common/parallel.h>
#include <kernels/cpu/layout/element_types.h>

#include <algorithm>
#include <cmath>

namespace kiln::kernels {
namespace {

// Source coordinate of output coordinate `o` (ONNX Resize's coordinate_transformation_mode). Like
// ONNX's reference, align_corners and tf_crop_and_resize divide by the unrounded resized length
// scale * inSize, which differs from outSize when scales (not sizes) were given.
double sourceCoordinate(int64_t o, int64_t inSize, int64_t outSize, double scale, double roiStart, double roiEnd,
                        CoordinateMode mode) {
  double x = double(o), resized = scale * double(inSize);
  switch (mode) {
    case CoordinateMode::kHalfPixel: return (x + 0.5) / scale - 0.5;
    case CoordinateMode::kHalfPixelSymmetric: {
      double adjustment = double(outSize) / resized;
      double offset = double(inSize) / 2 * (1 - adjustment);
      return offset + (x + 0.5) / scale - 0.5;
    }
    case CoordinateMode::kPytorchHalfPixel: return outSize > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
    case CoordinateMode::kAlignCorners: return resized == 1 ? 0.0 : x * double(inSize - 1) / (resized - 1);
    case CoordinateMode::kAsymmetric: return x / scale;
    case CoordinateMode::kTfHalfPixelForNn: return (x + 0.5) / scale;
    case CoordinateMode::kTfCropAndResize:
      return outSize > 1 ? roiStart * double(inSize - 1) + x * (roiEnd - roiStart) * double(inSize - 1) / (resized - 1)
                         : 0.5 * (roiStart + roiEnd) * double(inSize - 1);
  }
  return x;
}

int64_t nearestIndex(double x, double scale, NearestMode mode) {
  switch (mode) {
    case NearestMode::kRoundPreferFloor: return int64_t(x == std::floor(x) + 0.5 ? std::floor(x) : std::round(x));
    case NearestMode::kRoundPreferCeil: return int64_t(std::floor(x + 0.5));
    case NearestMode::kFloor: return int64_t(std::floor(x));
    case NearestMode::kCeil: return int64_t(std::ceil(x));
    case NearestMode::kSimple: return int64_t(scale < 1 ? std::ceil(x) : std::floor(x));
  }
  return int64_t(x);
}

double cubicKernel(double t, double a) {
  t = std::abs(t);
  if (t <= 1) return ((a + 2) * t - (a + 3)) * t * t + 1;
  if (t < 2) return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
  return 0;
}

// Visits the dense multi-index rows of `dims` (all axes but the last) in [begin, end).
template <class Fn>
void forEachRow(const std::vector<int64_t>& dims, int64_t begin, int64_t end, Fn&& fn) {
  std::vector<int64_t> index(dims.size());
  for (int64_t row = begin; row < end; ++row) {
    int64_t rest = row;
    for (size_t d = dims.size() - 1; d-- > 0;) {
      index[d] = rest % dims[d];
      rest /= dims[d];
    }
    fn(row, index);
  }
}

// One 1-D pass: out [outer, outSize, inner] from in [outer, inSize, inner].
void resampleAxis(const float* in, float* out, int64_t outer, int64_t inSize, int64_t inner,
                  const AxisSampling& sampling) {
  int64_t outSize = int64_t(sampling.index.size()) / sampling.taps;
  parallelFor(outer * outSize, std::max<int64_t>(1, 4096 / inner), [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      int64_t o = task / outSize, x = task % outSize;
      float* row = out + task * inner;
      std::fill_n(row, inner, 0.0f);
      for (int64_t k = 0; k < sampling.taps; ++k) {
        float w = sampling.weight[x * sampling.taps + k];
        if (w == 0.0f) continue;
        const float* from = in + (o * inSize + sampling.index[x * sampling.taps + k]) * inner;
        for (int64_t i = 0; i < inner; ++i) row[i] += w * from[i];
      }
    }
  });
}

bool anyOutside(const std::vector<AxisSampling>& axes) {
  for (const auto& axis : axes)
    for (uint8_t flag : axis.outside)
      if (flag) return true;
  return false;
}

// True when every output coordinate takes exactly its own input coordinate (taps may clamp onto it).
bool isIdentity(const AxisSampling& s, int64_t inSize, int64_t outSize) {
  if (inSize != outSize) return false;
  for (int64_t o = 0; o < outSize; ++o) {
    float onTarget = 0, elsewhere = 0;
    for (int64_t k = 0; k < s.taps; ++k) {
      float w = s.weight[o * s.taps + k];
      if (s.index[o * s.taps + k] == o) onTarget += w;
      else elsewhere += std::abs(w);
    }
    if (s.outside[o] || std::abs(onTarget - 1.0f) > 1e-6f || elsewhere > 1e-6f) return false;
  }
  return true;
}

}  // namespace

AxisSampling sampleAxis(int64_t inSize, int64_t outSize, double scale, double roiStart, double roiEnd,
                        const ResizeOptions& options) {
  AxisSampling s;
  bool cropAndResize = options.coordinates == CoordinateMode::kTfCropAndResize;
  // Taps relative to floor(x): [first, first + taps). Antialiasing widens the filter when downsampling.
  double filterScale = options.antialias ? std::min(scale, 1.0) : 1.0;
  double support = options.mode == ResizeMode::kCubic ? 2.0 : 1.0;
  int64_t first = options.mode == ResizeMode::kNearest ? 0 : int64_t(std::floor(-support / filterScale)) + 1;
  s.taps = options.mode == ResizeMode::kNearest ? 1 : 2 - 2 * first;
  s.index.resize(size_t(outSize * s.taps));
  s.weight.resize(size_t(outSize * s.taps));
  s.outside.assign(size_t(outSize), 0);
  for (int64_t o = 0; o < outSize; ++o) {
    double x = sourceCoordinate(o, inSize, outSize, scale, roiStart, roiEnd, options.coordinates);
    if (cropAndResize && (x < 0 || x > double(inSize - 1))) s.outside[o] = 1;
    int64_t* index = &s.index[size_t(o * s.taps)];
    float* weight = &s.weight[size_t(o * s.taps)];
    if (options.mode == ResizeMode::kNearest) {
      index[0] = std::clamp<int64_t>(nearestIndex(x, scale, options.nearest), 0, inSize - 1);
      weight[0] = 1.0f;
      continue;
    }
    double base = std::floor(x), ratio = x - base;
    double sum = 0;
    std::vector<double> w(size_t(s.taps));
    for (int64_t k = 0; k < s.taps; ++k) {
      int64_t source = int64_t(base) + first + k;
      double t = (double(first + k) - ratio) * filterScale;
      w[k] = options.mode == ResizeMode::kCubic ? cubicKernel(t, options.cubicCoeffA) : std::max(0.0, 1 - std::abs(t));
      if (options.excludeOutside && (source < 0 || source >= inSize)) w[k] = 0;
      sum += w[k];
      index[k] = std::clamp<int64_t>(source, 0, inSize - 1);
    }
    bool normalise = (options.antialias || options.excludeOutside) && sum != 0;
    for (int64_t k = 0; k < s.taps; ++k) weight[k] = float(normalise ? w[k] / sum : w[k]);
  }
  s.identity = isIdentity(s, inSize, outSize);
  return s;
}

template <class T>
void resizeNearest(const T* src, const std::vector<int64_t>& srcDims, T* dst, const std::vector<int64_t>& dstDims,
                   const std::vector<AxisSampling>& axes, const T& extrapolation) {
  size_t rank = dstDims.size();
  int64_t total = 1;
  for (int64_t d : dstDims) total *= d;
  if (total == 0) return;
  if (rank == 0) {
    dst[0] = src[0];
    return;
  }
  std::vector<int64_t> srcStrides(rank, 1);
  for (size_t d = rank; d-- > 1;) srcStrides[d - 1] = srcStrides[d] * srcDims[d];
  int64_t inner = dstDims.back();
  const AxisSampling& last = axes.back();
  parallelFor(total / inner, std::max<int64_t>(1, kCopyGrainElements / inner), [&](int64_t begin, int64_t end) {
    forEachRow(dstDims, begin, end, [&](int64_t row, const std::vector<int64_t>& index) {
      T* out = dst + row * inner;
      int64_t offset = 0;
      bool outside = false;
      for (size_t d = 0; d + 1 < rank; ++d) {
        outside |= axes[d].outside[index[d]] != 0;
        offset += axes[d].index[index[d]] * srcStrides[d];
      }
      for (int64_t i = 0; i < inner; ++i)
        out[i] = outside || last.outside[i] ? extrapolation : src[offset + last.index[i]];
    });
  });
}

template <class T>
void resizeInterpolate(const T* src, const std::vector<int64_t>& srcDims, T* dst,
                       const std::vector<int64_t>& dstDims, const std::vector<AxisSampling>& axes,
                       float extrapolation) {
  size_t rank = dstDims.size();
  int64_t srcCount = 1, dstCount = 1;
  for (size_t d = 0; d < rank; ++d) {
    srcCount *= srcDims[d];
    dstCount *= dstDims[d];
  }
  if (dstCount == 0) return;
  std::vector<float> current(static_cast<size_t>(srcCount));
  for (int64_t i = 0; i < srcCount; ++i) current[i] = toFloat(src[i]);
  std::vector<int64_t> dims = srcDims;
  std::vector<float> next;
  for (size_t axis = 0; axis < rank; ++axis) {
    if (axes[axis].identity) continue;
    int64_t outer = 1, inner = 1;
    for (size_t d = 0; d < axis; ++d) outer *= dims[d];
    for (size_t d = axis + 1; d < rank; ++d) inner *= dims[d];
    next.assign(size_t(outer * dstDims[axis] * inner), 0.0f);
    resampleAxis(current.data(), next.data(), outer, dims[axis], inner, axes[axis]);
    dims[axis] = dstDims[axis];
    current.swap(next);
  }
  bool extrapolate = anyOutside(axes);
  int64_t inner = rank == 0 ? 1 : dstDims.back();
  parallelFor(dstCount / inner, std::max<int64_t>(1, 4096 / inner), [&](int64_t begin, int64_t end) {
    if (rank == 0) {
      dst[0] = fromFloat<T>(current[0]);
      return;
    }
    forEachRow(dstDims, begin, end, [&](int64_t row, const std::vector<int64_t>& index) {
      bool outside = false;
      for (size_t d = 0; extrapolate && d + 1 < rank; ++d) outside |= axes[d].outside[index[d]] != 0;
      for (int64_t i = 0; i < inner; ++i) {
        bool out = outside || (extrapolate && axes.back().outside[i]);
        dst[row * inner + i] = fromFloat<T>(out ? extrapolation : current[row * inner + i]);
      }
    });
  });
}

#define KILN_INSTANTIATE_NEAREST(T)                                                                        \
  template void resizeNearest<T>(const T*, const std::vector<int64_t>&, T*, const std::vector<int64_t>&, \
                                 const std::vector<AxisSampling>&, const T&);
KILN_FOR_EACH_STORAGE_TYPE(KILN_INSTANTIATE_NEAREST)
#undef KILN_INSTANTIATE_NEAREST

#define KILN_INSTANTIATE_INTERPOLATE(T)                                                                        \
  template void resizeInterpolate<T>(const T*, const std::vector<int64_t>&, T*, const std::vector<int64_t>&, \
                                     const std::vector<AxisSampling>&, float);
KILN_INSTANTIATE_INTERPOLATE(float)
KILN_INSTANTIATE_INTERPOLATE(double)
KILN_INSTANTIATE_INTERPOLATE(Float16)
KILN_INSTANTIATE_INTERPOLATE(BFloat16)
#undef KILN_INSTANTIATE_INTERPOLATE

}  // namespace kiln::kernels
