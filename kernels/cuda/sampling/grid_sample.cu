// GridSample (sampling.h): one thread per output location computes its taps once (the CPU's
// Sampler, kernels/cpu/sampling/grid_sample.cpp) and applies them to every channel.
#include "sampling.h"

#include <kernels/cuda/common/device_types.cuh>
#include <kernels/cuda/common/launch.cuh>

#include <cmath>

namespace kiln::kernels::cuda {
namespace {

struct Taps {
  int count = 0;
  int64_t index[16];
  float weight[16];
};

struct Sampler {
  GridSampleShape s;

  __device__ float unnormalize(float v, int64_t size) const {
    return s.alignCorners ? (v + 1) / 2 * float(size - 1) : ((v + 1) * float(size) - 1) / 2;
  }

  __device__ static float reflect(float v, float twiceLow, float twiceHigh) {
    if (twiceLow == twiceHigh) return 0;
    const float low = twiceLow / 2, span = (twiceHigh - twiceLow) / 2;
    v = fabsf(v - low);
    const float extra = fmodf(v, span);
    const int64_t flips = int64_t(floorf(v / span));
    return flips % 2 == 0 ? extra + low : span - extra + low;
  }

  __device__ float pad(float v, int64_t size) const {
    const float last = float(size - 1);
    switch (s.padding) {
      case GridSamplePadding::kZeros: return v;
      case GridSamplePadding::kBorder: return fminf(fmaxf(v, 0.0f), last);
      case GridSamplePadding::kReflection:
        v = s.alignCorners ? reflect(v, 0, 2 * last) : reflect(v, -1, 2 * float(size) - 1);
        return fminf(fmaxf(v, 0.0f), last);
    }
    return v;
  }

  __device__ static void cubicCoefficients(float t, float c[4]) {
    constexpr float A = -0.75f;
    auto nearTap = [](float x) { return ((A + 2) * x - (A + 3)) * x * x + 1; };       // |x| <= 1
    auto farTap = [](float x) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; };  // 1 < |x| < 2
    c[0] = farTap(t + 1);
    c[1] = nearTap(t);
    c[2] = nearTap(1 - t);
    c[3] = farTap(2 - t);
  }

  __device__ void add(Taps& t, int64_t x, int64_t y, float weight) const {
    if (x < 0 || y < 0 || x >= s.inWidth || y >= s.inHeight) return;
    t.index[t.count] = y * s.inWidth + x;
    t.weight[t.count++] = weight;
  }

  __device__ Taps taps(float gx, float gy) const {
    Taps t;
    if (!(gx - gx == 0.0f) || !(gy - gy == 0.0f)) return t;  // NaN or infinite
    const int64_t W = s.inWidth, H = s.inHeight;
    float x = unnormalize(gx, W), y = unnormalize(gy, H);
    if (s.padding == GridSamplePadding::kZeros) {  // keeps the integer casts defined far outside
      x = fminf(fmaxf(x, -float(W) - 8), 2.0f * float(W) + 8);
      y = fminf(fmaxf(y, -float(H) - 8), 2.0f * float(H) + 8);
    }
    switch (s.mode) {
      case GridSampleMode::kNearest:
        add(t, int64_t(rintf(pad(x, W))), int64_t(rintf(pad(y, H))), 1.0f);
        break;
      case GridSampleMode::kLinear: {
        x = pad(x, W);
        y = pad(y, H);
        const float x0 = floorf(x), y0 = floorf(y), wx = x - x0, wy = y - y0;
        const int64_t ix = int64_t(x0), iy = int64_t(y0);
        add(t, ix, iy, (1 - wx) * (1 - wy));
        add(t, ix + 1, iy, wx * (1 - wy));
        add(t, ix, iy + 1, (1 - wx) * wy);
        add(t, ix + 1, iy + 1, wx * wy);
        break;
      }
      case GridSampleMode::kCubic: {  // weights from the unpadded position; each tap padded alone
        const float x0 = floorf(x), y0 = floorf(y);
        float cx[4], cy[4];
        cubicCoefficients(x - x0, cx);
        cubicCoefficients(y - y0, cy);
        for (int i = 0; i < 4; ++i)
          for (int j = 0; j < 4; ++j) {
            const float px = pad(x0 - 1 + float(j), W), py = pad(y0 - 1 + float(i), H);
            add(t, int64_t(px), int64_t(py), cx[j] * cy[i]);
          }
        break;
      }
    }
    return t;
  }
};

template <class T, class G>
__global__ void gridSampleKernel(const T* x, const G* grid, GridSampleShape shape, T* y) {
  const Sampler sampler{shape};
  const int64_t outPlane = shape.outHeight * shape.outWidth, inPlane = shape.inHeight * shape.inWidth;
  KILN_GRID_STRIDE_LOOP(location, shape.batch * outPlane) {
    const int64_t n = location / outPlane, p = location % outPlane;
    const G* g = grid + location * 2;
    // The grid in x's type first, as the CPU converts it.
    const Taps taps = sampler.taps(float(toCompute(T(float(toCompute(g[0]))))), float(toCompute(T(float(toCompute(g[1]))))));
    for (int64_t c = 0; c < shape.channels; ++c) {
      const T* plane = x + (n * shape.channels + c) * inPlane;
      float sum = 0;
      for (int k = 0; k < taps.count; ++k) sum += taps.weight[k] * float(toCompute(plane[taps.index[k]]));
      y[(n * shape.channels + c) * outPlane + p] = T(sum);
    }
  }
}

}  // namespace

cudaError_t gridSample2d(const void* x, ElementType type, const void* grid, ElementType gridType,
                         const GridSampleShape& shape, void* y, cudaStream_t stream) {
  const int64_t locations = shape.batch * shape.outHeight * shape.outWidth;
  if (locations == 0 || shape.channels == 0) return cudaSuccess;
  return dispatchFloat(type, [&](auto tag) {
    using T = decltype(tag);
    return dispatchFloat(gridType, [&](auto gridTag) {
      using G = decltype(gridTag);
      gridSampleKernel<T, G><<<gridFor(locations), kThreadsPerBlock, 0, stream>>>(
          static_cast<const T*>(x), static_cast<const G*>(grid), shape, static_cast<T*>(y));
      return launchStatus();
    });
  });
}

}  // namespace kiln::kernels::cuda
