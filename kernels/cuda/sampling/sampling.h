#pragma once
// GridSample, RoiAlign and MaxUnpool on the GPU with the CPU kernels' semantics
// (kernels/cpu/sampling, kernels/cpu/pool): float32, float16, bfloat16 and float64 data, sampled in
// float as the CPU does. Asynchronous; no allocation; empty outputs are a no-op.
#include <kernels/cuda/common/element_type.h>

#include <cuda_runtime.h>

#include <cstdint>

namespace kiln::kernels::cuda {

enum class GridSampleMode { kLinear, kNearest, kCubic };
enum class GridSamplePadding { kZeros, kBorder, kReflection };

struct GridSampleShape {
  int64_t batch = 0, channels = 0, inHeight = 0, inWidth = 0, outHeight = 0, outWidth = 0;
  GridSampleMode mode = GridSampleMode::kLinear;
  GridSamplePadding padding = GridSamplePadding::kZeros;
  bool alignCorners = false;
};

// x [batch, channels, inHeight, inWidth]; grid [batch, outHeight, outWidth, 2] as (x, y) in
// [-1, 1], of any float type (rounded to x's type first, as the CPU converts it); y like x with
// the output size. Bicubic is PyTorch's (A = -0.75); non-finite grid values read zero.
cudaError_t gridSample2d(const void* x, ElementType type, const void* grid, ElementType gridType,
                         const GridSampleShape& shape, void* y, cudaStream_t stream);

struct RoiAlignShape {
  int64_t channels = 0, height = 0, width = 0, rois = 0, batch = 0;
  int64_t outputHeight = 1, outputWidth = 1, samplingRatio = 0;
  float spatialScale = 1.0f;
  bool halfPixel = true;  // coordinate_transformation_mode half_pixel, else output_half_pixel
  bool maxMode = false;   // the max of the weighted corners (ONNX Runtime's), else the average
};

// x [batch, channels, height, width]; rois [rois, 4] as (x1, y1, x2, y2), any float type;
// batchIndices [rois] int32 or int64; y [rois, channels, outputHeight, outputWidth] in x's type. A
// batch index outside [0, batch) gives zeros.
cudaError_t roiAlign(const void* x, ElementType type, const void* rois, ElementType roiType, const void* batchIndices,
                     ElementType indexType, const RoiAlignShape& shape, void* y, cudaStream_t stream);

constexpr int kMaxUnpoolRank = 5;

// y (dims yDims, rank dims) = 0 except y[I[i]] = x[i] for the `count` elements of x, where I
// (int64) addresses the unpooled shape `pooledFrom` and keeps its coordinates in y; indices outside
// it write nothing. Any type (moved by size).
cudaError_t maxUnpool(const void* x, const int64_t* indices, int64_t count, const int64_t* pooledFrom,
                      const int64_t* yDims, int rank, void* y, ElementType type, cudaStream_t stream);

}  // namespace kiln::kernels::cuda
