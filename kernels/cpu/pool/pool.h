#pragma once
// Pooling over NC(D)HW tensors, one (n, c) plane at a time. T is float, double, int8 or uint8
// (float16 / bfloat16 are widened to float by the caller).
#include "../common/spatial_window.h"

#include <cstdint>

namespace kiln::kernels {

// Max over the in-image taps. When `indices` is set it receives, for every output, the flat index
// of the chosen input element in the whole tensor: row-major within the plane, or column-major
// when `columnMajorIndices` (MaxPool storage_order = 1).
template <class T>
void maxPool(const SpatialWindow& w, int64_t planes, const T* x, T* y, int64_t* indices, bool columnMajorIndices);

// Mean over the window; the divisor counts padding taps too when `countIncludePad`.
template <class T>
void averagePool(const SpatialWindow& w, int64_t planes, const T* x, T* y, bool countIncludePad);

// (sum |x|^p)^(1/p) over the in-image taps.
template <class T>
void lpPool(const SpatialWindow& w, int64_t planes, const T* x, T* y, float p);

enum class GlobalPoolKind { kAverage, kMax, kLp };
// One value per plane of `planeSize` elements.
template <class T>
void globalPool(GlobalPoolKind kind, int64_t planes, int64_t planeSize, const T* x, T* y, float p = 2.0f);

// MaxRoiPool (Fast R-CNN): rois[numRois, 5] = (batch index, x1, y1, x2, y2) in input coordinates
// before `spatialScale`; y[numRois, channels, pooledH, pooledW].
template <class T>
void maxRoiPool(int64_t channels, int64_t height, int64_t width, const T* x, int64_t numRois, const float* rois,
                float spatialScale, int64_t pooledH, int64_t pooledW, T* y);

struct RoiAlignParams {
  int64_t channels = 0, height = 0, width = 0;
  int64_t outputH = 1, outputW = 1;
  int64_t samplingRatio = 0;  // 0: adaptive, ceil(roi size / output size)
  float spatialScale = 1.0f;
  bool halfPixel = true;  // coordinate_transformation_mode half_pixel (else output_half_pixel)
  bool maxMode = false;   // mode "max" (else "avg")
};
// rois[numRois, 4] = (x1, y1, x2, y2); batchIndices[numRois]; y[numRois, channels, outputH, outputW].
template <class T>
void roiAlign(const RoiAlignParams& params, const T* x, int64_t numRois, const float* rois,
              const int64_t* batchIndices, T* y);

}  // namespace kiln::kernels
