#pragma once
// Resize / Upsample on the GPU with the CPU kernel's semantics (kernels/cpu/resize): nearest (every
// nearest_mode), linear and cubic (cubic_coeff_a, exclude_outside, antialias), every
// coordinate_transformation_mode, extrapolation_value for tf_crop_and_resize. N-d up to kMaxRank
// axes; the axes a resize leaves alone cost nothing, and each thread serves several planes (the
// N*C of an NCHW image) with one set of taps. Asynchronous; no allocation; empty outputs are a no-op.
#include <kernels/cuda/common/element_type.h>

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

namespace kiln::kernels::cuda {

enum class ResizeMode { kNearest, kLinear, kCubic };
enum class ResizeCoordinateMode {
  kHalfPixel,
  kHalfPixelSymmetric,
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfHalfPixelForNn,
  kTfCropAndResize,
};
// kSimple is Upsample's (and Resize-10's) rule: floor when upsampling, ceil when downsampling.
enum class ResizeNearestMode { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil, kSimple };

struct ResizeOptions {
  ResizeMode mode = ResizeMode::kNearest;
  ResizeCoordinateMode coordinates = ResizeCoordinateMode::kHalfPixel;
  ResizeNearestMode nearest = ResizeNearestMode::kRoundPreferFloor;
  float cubicCoeffA = -0.75f;
  bool excludeOutside = false;
  bool antialias = false;  // linear and cubic: widen the filter when downsampling
  float extrapolationValue = 0.0f;
};

// src has srcDims, dst dstDims (the same rank). scales[d] is the axis' ONNX scale (output / input:
// the scales input, or dstDims / srcDims when sizes were given). roiStart / roiEnd hold the
// normalised roi of tf_crop_and_resize per axis; empty means [0, 1] on every axis.
// Nearest moves any dtype by size; linear and cubic take float32, float16, bfloat16 (computed in
// float) and float64 (computed in double; the CPU kernel computes it in float).
cudaError_t resize(const void* src, const std::vector<int64_t>& srcDims, void* dst, const std::vector<int64_t>& dstDims,
                   const std::vector<double>& scales, const std::vector<double>& roiStart,
                   const std::vector<double>& roiEnd, const ResizeOptions& options, ElementType type,
                   cudaStream_t stream);

}  // namespace kiln::kernels::cuda
