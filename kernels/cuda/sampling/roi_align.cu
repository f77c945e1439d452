// RoiAlign and MaxUnpool (sampling.h). RoiAlign: one thread per output bin, the CPU's sample grid
// and bilinear corners (kernels/cpu/pool/pool.cpp) in the same float arithmetic.
#include "sampling.h"

#include <kernels/cuda/common/device_types.cuh>
#include <kernels/cuda/common/launch.cuh>

#include <cmath>

namespace kiln::kernels::cuda {
namespace {

struct BilinearSample {
  int64_t pos[4] = {0, 0, 0, 0};
  float weight[4] = {0, 0, 0, 0};
};

__device__ BilinearSample bilinearSample(float y, float x, int64_t height, int64_t width) {
  BilinearSample s;
  if (y < -1.0f || y > float(height) || x < -1.0f || x > float(width)) return s;
  y = fmaxf(y, 0.0f);
  x = fmaxf(x, 0.0f);
  int64_t yLow = int64_t(y), xLow = int64_t(x), yHigh, xHigh;
  if (yLow >= height - 1) yHigh = yLow = height - 1, y = float(yLow);
  else yHigh = yLow + 1;
  if (xLow >= width - 1) xHigh = xLow = width - 1, x = float(xLow);
  else xHigh = xLow + 1;
  const float ly = y - float(yLow), lx = x - float(xLow), hy = 1 - ly, hx = 1 - lx;
  s.pos[0] = yLow * width + xLow, s.pos[1] = yLow * width + xHigh;
  s.pos[2] = yHigh * width + xLow, s.pos[3] = yHigh * width + xHigh;
  s.weight[0] = hy * hx, s.weight[1] = hy * lx, s.weight[2] = ly * hx, s.weight[3] = ly * lx;
  return s;
}

template <class T, class R, class I>
__global__ void roiAlignKernel(const T* x, const R* rois, const I* batchIndices, RoiAlignShape s, T* y) {
  const int64_t outPlane = s.outputHeight * s.outputWidth;
  KILN_GRID_STRIDE_LOOP(e, s.rois * s.channels * outPlane) {
    const int64_t bin = e % outPlane, c = e / outPlane % s.channels, r = e / outPlane / s.channels;
    const int64_t ph = bin / s.outputWidth, pw = bin % s.outputWidth;
    const int64_t b = int64_t(batchIndices[r]);
    if (b < 0 || b >= s.batch) {
      y[e] = T(0.0f);
      continue;
    }
    float roi[4];
    for (int k = 0; k < 4; ++k) roi[k] = float(toCompute(rois[r * 4 + k]));
    const float offset = s.halfPixel ? 0.5f : 0.0f;
    const float startW = roi[0] * s.spatialScale - offset, startH = roi[1] * s.spatialScale - offset;
    float roiW = roi[2] * s.spatialScale - offset - startW, roiH = roi[3] * s.spatialScale - offset - startH;
    if (!s.halfPixel) roiW = fmaxf(roiW, 1.0f), roiH = fmaxf(roiH, 1.0f);
    const float binH = roiH / float(s.outputHeight), binW = roiW / float(s.outputWidth);
    const int64_t gridH = s.samplingRatio > 0 ? s.samplingRatio : int64_t(ceilf(roiH / float(s.outputHeight)));
    const int64_t gridW = s.samplingRatio > 0 ? s.samplingRatio : int64_t(ceilf(roiW / float(s.outputWidth)));
    const float count = float(gridH * gridW > 1 ? gridH * gridW : 1);
    const T* plane = x + (b * s.channels + c) * s.height * s.width;
    float value = 0;
    bool first = true;
    for (int64_t iy = 0; iy < gridH; ++iy)
      for (int64_t ix = 0; ix < gridW; ++ix) {
        const BilinearSample p =
            bilinearSample(startH + float(ph) * binH + (float(iy) + 0.5f) * binH / float(gridH),
                           startW + float(pw) * binW + (float(ix) + 0.5f) * binW / float(gridW), s.height, s.width);
        float v[4];
        for (int k = 0; k < 4; ++k) v[k] = p.weight[k] * float(toCompute(plane[p.pos[k]]));
        if (s.maxMode) {
          const float m = fmaxf(fmaxf(v[0], v[1]), fmaxf(v[2], v[3]));
          value = first ? m : fmaxf(value, m);
        } else {
          value += v[0] + v[1] + v[2] + v[3];
        }
        first = false;
      }
    y[e] = T(s.maxMode ? value : value / count);
  }
}

struct MaxUnpoolDims {
  int64_t pooledFrom[kMaxUnpoolRank], yDims[kMaxUnpoolRank];
  int64_t pooledCount, yCount;
  int rank;
};

template <class T>
__global__ void maxUnpoolKernel(const T* x, const int64_t* indices, int64_t count, MaxUnpoolDims d, T* y) {
  KILN_GRID_STRIDE_LOOP(i, count) {
    int64_t index = indices[i];
    if (index < 0 || index >= d.pooledCount) continue;
    int64_t target = 0, stride = 1;
    for (int a = d.rank - 1; a >= 0; --a) {  // the unpooled coordinates, kept in y's shape
      target += index % d.pooledFrom[a] * stride;
      index /= d.pooledFrom[a];
      stride *= d.yDims[a];
    }
    if (target < d.yCount) y[target] = x[i];
  }
}

}  // namespace

cudaError_t roiAlign(const void* x, ElementType type, const void* rois, ElementType roiType, const void* batchIndices,
                     ElementType indexType, const RoiAlignShape& shape, void* y, cudaStream_t stream) {
  const int64_t n = shape.rois * shape.channels * shape.outputHeight * shape.outputWidth;
  if (n == 0) return cudaSuccess;
  if (indexType != ElementType::kInt32 && indexType != ElementType::kInt64) return cudaErrorInvalidValue;
  return dispatchFloat(type, [&](auto tag) {
    using T = decltype(tag);
    return dispatchFloat(roiType, [&](auto roiTag) {
      using R = decltype(roiTag);
      if (indexType == ElementType::kInt32)
        roiAlignKernel<T, R, int32_t><<<gridFor(n), kThreadsPerBlock, 0, stream>>>(
            static_cast<const T*>(x), static_cast<const R*>(rois), static_cast<const int32_t*>(batchIndices), shape,
            static_cast<T*>(y));
      else
        roiAlignKernel<T, R, int64_t><<<gridFor(n), kThreadsPerBlock, 0, stream>>>(
            static_cast<const T*>(x), static_cast<const R*>(rois), static_cast<const int64_t*>(batchIndices), shape,
            static_cast<T*>(y));
      return launchStatus();
    });
  });
}

cudaError_t maxUnpool(const void* x, const int64_t* indices, int64_t count, const int64_t* pooledFrom,
                      const int64_t* yDims, int rank, void* y, ElementType type, cudaStream_t stream) {
  if (rank < 1 || rank > kMaxUnpoolRank) return cudaErrorInvalidValue;
  MaxUnpoolDims d;
  d.rank = rank;
  d.pooledCount = d.yCount = 1;
  for (int a = 0; a < rank; ++a) {
    d.pooledFrom[a] = pooledFrom[a];
    d.yDims[a] = yDims[a];
    d.pooledCount *= pooledFrom[a];
    d.yCount *= yDims[a];
  }
  if (d.yCount == 0) return cudaSuccess;
  if (cudaError_t s = cudaMemsetAsync(y, 0, size_t(d.yCount) * elementBytes(type), stream); s != cudaSuccess) return s;
  if (count == 0) return cudaSuccess;
  return dispatchBySize(type, [&](auto tag) {
    using T = decltype(tag);
    maxUnpoolKernel<T><<<gridFor(count), kThreadsPerBlock, 0, stream>>>(static_cast<const T*>(x), indices, count, d,
                                                                       static_cast<T*>(y));
    return launchStatus();
  });
}

}  // namespace kiln::kernels::cuda
