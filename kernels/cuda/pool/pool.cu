#include "pool.h"

#include <kernels/cuda/common/device_types.cuh>
#include <kernels/cuda/common/launch.cuh>
#include <kernels/cuda/elementwise/fast_divider.h>

#include <type_traits>

namespace kiln::kernels::cuda {
namespace {

template <class T>
using PoolAcc = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <class T>
__device__ __forceinline__ PoolAcc<T> loadAcc(const T* p) {
  return PoolAcc<T>(toCompute(*p));
}

template <class T>
__device__ __forceinline__ T storeAcc(PoolAcc<T> v) {
  if constexpr (std::is_integral_v<T>)
    return T(v);
  else
    return fromCompute<T>(v);
}

// One thread per output element; consecutive threads take consecutive outputs (along W for
// channels-first, along C for channels-last), so both layouts read and write coalesced.
template <class T>
__global__ void poolKernel(const T* __restrict__ x, T* __restrict__ y, int64_t* __restrict__ indices,
                           const __grid_constant__ PoolParams params) {
  KILN_GRID_STRIDE_LOOP(i, params.count()) {
    const Pooled<PoolAcc<T>> r = poolAt<PoolAcc<T>>(params, i, [&](int64_t at) { return loadAcc(x + at); });
    if constexpr (std::is_integral_v<T>)
      y[i] = r.any ? storeAcc<T>(r.value) : std::numeric_limits<T>::lowest();
    else
      y[i] = storeAcc<T>(r.value);
    if (indices) indices[i] = r.index;
  }
}

// 2-D (and 1-D) max and average pools without indices, the CNN case: the same taps and results as
// poolAt, with 32-bit index math through invariant dividers instead of 64-bit divisions per
// output (ResNet-50's stem pool at batch 128 ran 13x slower through the general kernel).
struct Pool2d {
  FastDivider byChannels, byWidth, byHeight;
  int32_t channels, inH, inW, outH, outW, kH, kW, sH, sW, dH, dW, padH, padW, endH, endW;
  bool last, countPad;
};

__device__ __forceinline__ int32_t tapsOn(int32_t o, int32_t stride, int32_t pad, int32_t dilation, int32_t kernel,
                                          int32_t lo, int32_t hi) {
  int32_t count = 0;
  for (int32_t k = 0; k < kernel; ++k) {
    const int32_t c = o * stride - pad + k * dilation;
    count += c >= lo && c < hi;
  }
  return count;
}

// Calls fn(pixel) for every tap of output (oh, ow) inside the image: pixel = ih * inW + iw.
template <class Fn>
__device__ __forceinline__ void forEachTap(const Pool2d& g, int32_t oh, int32_t ow, Fn&& fn) {
  for (int32_t kh = 0; kh < g.kH; ++kh) {
    const int32_t ih = oh * g.sH - g.padH + kh * g.dH;
    if (ih < 0 || ih >= g.inH) continue;
    for (int32_t kw = 0; kw < g.kW; ++kw) {
      const int32_t iw = ow * g.sW - g.padW + kw * g.dW;
      if (iw >= 0 && iw < g.inW) fn(int64_t(ih) * g.inW + iw);
    }
  }
}

// AveragePool's divisor at output (oh, ow): the taps in the image, or in the padded image.
__device__ __forceinline__ int32_t averageTaps(const Pool2d& g, int32_t oh, int32_t ow) {
  return tapsOn(oh, g.sH, g.padH, g.dH, g.kH, g.countPad ? -g.padH : 0, g.countPad ? g.inH + g.endH : g.inH) *
         tapsOn(ow, g.sW, g.padW, g.dW, g.kW, g.countPad ? -g.padW : 0, g.countPad ? g.inW + g.endW : g.inW);
}

template <class T, bool kMax>
__global__ void pool2dKernel(const T* __restrict__ x, T* __restrict__ y, uint32_t count,
                             const __grid_constant__ Pool2d g) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) {
    uint32_t rest = i, c = 0, q;
    if (g.last) q = g.byChannels.divide(rest), c = rest - q * uint32_t(g.channels), rest = q;
    q = g.byWidth.divide(rest);
    const int32_t ow = int32_t(rest - q * uint32_t(g.outW));
    rest = q;
    q = g.byHeight.divide(rest);
    const int32_t oh = int32_t(rest - q * uint32_t(g.outH));
    rest = q;
    if (!g.last) q = g.byChannels.divide(rest), c = rest - q * uint32_t(g.channels), rest = q;
    const uint32_t n = rest;
    const int64_t plane = int64_t(g.inH) * g.inW;
    const T* base = g.last ? x + int64_t(n) * plane * g.channels + c : x + (int64_t(n) * g.channels + c) * plane;
    const int64_t step = g.last ? g.channels : 1;
    PoolAcc<T> acc = kMax ? std::numeric_limits<PoolAcc<T>>::lowest() : PoolAcc<T>(0);
    bool any = false;
    forEachTap(g, oh, ow, [&](int64_t pixel) {
      const PoolAcc<T> v = loadAcc(base + pixel * step);
      if (kMax) {
        if (!any || v > acc) acc = v;
      } else {
        acc += v;
      }
      any = true;
    });
    if (!kMax) {
      const int32_t taps = averageTaps(g, oh, ow);
      acc = taps > 0 ? acc / PoolAcc<T>(taps) : PoolAcc<T>(0);
    }
    if constexpr (std::is_integral_v<T>)
      y[i] = any ? storeAcc<T>(acc) : std::numeric_limits<T>::lowest();
    else
      y[i] = storeAcc<T>(acc);
  }
}

// Channels-last pools of 16-byte vectors: a thread takes the same 16 bytes of channels of one
// output pixel at every tap (8 fp16 / bf16 channels, 16 int8), so each tap is one wide load; the
// arithmetic per channel is pool2dKernel's.
template <class T, bool kMax>
__global__ void pool2dChannelsLastVectorKernel(const T* __restrict__ x, T* __restrict__ y, uint32_t count,
                                               const __grid_constant__ Pool2d g, FastDivider byVectors,
                                               int32_t vectors) {
  constexpr int kWidth = 16 / int(sizeof(T));
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) {
    uint32_t rest = byVectors.divide(i);
    const uint32_t vec = i - rest * uint32_t(vectors);
    uint32_t q = g.byWidth.divide(rest);
    const int32_t ow = int32_t(rest - q * uint32_t(g.outW));
    rest = q;
    q = g.byHeight.divide(rest);
    const int32_t oh = int32_t(rest - q * uint32_t(g.outH));
    const uint32_t n = q;
    const uint4* base = reinterpret_cast<const uint4*>(x + int64_t(n) * g.inH * g.inW * g.channels) + vec;
    PoolAcc<T> acc[kWidth];
#pragma unroll
    for (int e = 0; e < kWidth; ++e) acc[e] = kMax ? std::numeric_limits<PoolAcc<T>>::lowest() : PoolAcc<T>(0);
    bool any = false;
    forEachTap(g, oh, ow, [&](int64_t pixel) {
      const uint4 packed = base[pixel * vectors];
      const T* v = reinterpret_cast<const T*>(&packed);
#pragma unroll
      for (int e = 0; e < kWidth; ++e) {
        const PoolAcc<T> value = loadAcc(v + e);
        if (kMax) {
          if (!any || value > acc[e]) acc[e] = value;
        } else {
          acc[e] += value;
        }
      }
      any = true;
    });
    if (!kMax) {
      const int32_t taps = averageTaps(g, oh, ow);
#pragma unroll
      for (int e = 0; e < kWidth; ++e) acc[e] = taps > 0 ? acc[e] / PoolAcc<T>(taps) : PoolAcc<T>(0);
    }
    uint4 packed;
    T* out = reinterpret_cast<T*>(&packed);
#pragma unroll
    for (int e = 0; e < kWidth; ++e) {
      if constexpr (std::is_integral_v<T>)
        out[e] = any ? storeAcc<T>(acc[e]) : std::numeric_limits<T>::lowest();
      else
        out[e] = storeAcc<T>(acc[e]);
    }
    reinterpret_cast<uint4*>(y)[i] = packed;
  }
}

bool fits2d(const PoolParams& p, const int64_t* indices) {
  const PoolWindow& w = p.w;
  if (indices || p.kind == PoolKind::kLp || w.in[0] != 1 || w.out[0] != 1 || w.kernel[0] != 1) return false;
  const int64_t limit = int64_t(1) << 30;
  if (p.count() >= limit || p.channels >= limit) return false;
  for (int a = 1; a < kPoolSpatialRank; ++a)
    for (int64_t v : {w.in[a], w.out[a], w.kernel[a], w.stride[a], w.dilation[a], w.padBegin[a], w.padEnd[a]})
      if (v < 0 || v >= limit) return false;
  return true;
}

Pool2d pool2dOf(const PoolParams& p) {
  const PoolWindow& w = p.w;
  Pool2d g;
  g.byChannels = FastDivider(uint32_t(p.channels));
  g.byWidth = FastDivider(uint32_t(w.out[2]));
  g.byHeight = FastDivider(uint32_t(w.out[1]));
  g.channels = int32_t(p.channels);
  g.inH = int32_t(w.in[1]), g.inW = int32_t(w.in[2]), g.outH = int32_t(w.out[1]), g.outW = int32_t(w.out[2]);
  g.kH = int32_t(w.kernel[1]), g.kW = int32_t(w.kernel[2]), g.sH = int32_t(w.stride[1]), g.sW = int32_t(w.stride[2]);
  g.dH = int32_t(w.dilation[1]), g.dW = int32_t(w.dilation[2]), g.padH = int32_t(w.padBegin[1]);
  g.padW = int32_t(w.padBegin[2]), g.endH = int32_t(w.padEnd[1]), g.endW = int32_t(w.padEnd[2]);
  g.last = p.layout == PoolLayout::kChannelsLast;
  g.countPad = p.countIncludePad;
  return g;
}

// float types, and int8 / uint8 where integers are allowed (MaxPool).
template <class Fn>
cudaError_t dispatchPoolType(ElementType type, bool integers, Fn&& fn) {
  if (integers && type == ElementType::kInt8) return fn(int8_t{});
  if (integers && type == ElementType::kUInt8) return fn(uint8_t{});
  return dispatchFloat(type, fn);
}

cudaError_t runPool(const void* x, void* y, int64_t* indices, const PoolParams& params, ElementType type,
                    cudaStream_t stream) {
  if (params.batch < 0 || params.channels < 0) return cudaErrorInvalidValue;
  for (int a = 0; a < kPoolSpatialRank; ++a)
    if (params.w.kernel[a] < 1 || params.w.stride[a] < 1 || params.w.dilation[a] < 1 || params.w.in[a] < 0 ||
        params.w.out[a] < 0)
      return cudaErrorInvalidValue;
  const bool integers = params.kind == PoolKind::kMax;
  if (params.count() == 0) return dispatchPoolType(type, integers, [](auto) { return cudaSuccess; });
  if (fits2d(params, indices)) {
    const Pool2d g = pool2dOf(params);
    const auto count = uint32_t(params.count());
    return dispatchPoolType(type, integers, [&](auto tag) {
      using T = decltype(tag);
      constexpr int kWidth = 16 / int(sizeof(T));
      const bool vectors = sizeof(T) <= 2 && g.last && params.channels % kWidth == 0 &&
                           (reinterpret_cast<uintptr_t>(x) & 15u) == 0 && (reinterpret_cast<uintptr_t>(y) & 15u) == 0;
      if (vectors) {
        const int32_t perPixel = int32_t(params.channels / kWidth);
        const uint32_t units = count / uint32_t(kWidth);
        const FastDivider byVectors{uint32_t(perPixel)};
        if (params.kind == PoolKind::kMax)
          pool2dChannelsLastVectorKernel<T, true><<<gridFor(units), kThreadsPerBlock, 0, stream>>>(
              static_cast<const T*>(x), static_cast<T*>(y), units, g, byVectors, perPixel);
        else
          pool2dChannelsLastVectorKernel<T, false><<<gridFor(units), kThreadsPerBlock, 0, stream>>>(
              static_cast<const T*>(x), static_cast<T*>(y), units, g, byVectors, perPixel);
        return launchStatus();
      }
      if (params.kind == PoolKind::kMax)
        pool2dKernel<T, true><<<gridFor(count), kThreadsPerBlock, 0, stream>>>(static_cast<const T*>(x),
                                                                               static_cast<T*>(y), count, g);
      else
        pool2dKernel<T, false><<<gridFor(count), kThreadsPerBlock, 0, stream>>>(static_cast<const T*>(x),
                                                                                static_cast<T*>(y), count, g);
      return launchStatus();
    });
  }
  return dispatchPoolType(type, integers, [&](auto tag) {
    using T = decltype(tag);
    poolKernel<T><<<gridFor(params.count()), kThreadsPerBlock, 0, stream>>>(static_cast<const T*>(x),
                                                                            static_cast<T*>(y), indices, params);
    return launchStatus();
  });
}

PoolParams paramsOf(PoolKind kind, int64_t batch, int64_t channels, const PoolWindow& window, PoolLayout layout) {
  PoolParams params;
  params.kind = kind;
  params.batch = batch;
  params.channels = channels;
  params.w = window;
  params.layout = layout;
  return params;
}

}  // namespace

cudaError_t maxPool(const void* x, void* y, int64_t* indices, bool columnMajorIndices, int64_t batch, int64_t channels,
                    const PoolWindow& window, PoolLayout layout, ElementType type, cudaStream_t stream) {
  PoolParams params = paramsOf(PoolKind::kMax, batch, channels, window, layout);
  params.columnMajorIndices = columnMajorIndices;
  return runPool(x, y, indices, params, type, stream);
}

cudaError_t averagePool(const void* x, void* y, int64_t batch, int64_t channels, const PoolWindow& window,
                        bool countIncludePad, PoolLayout layout, ElementType type, cudaStream_t stream) {
  PoolParams params = paramsOf(PoolKind::kAverage, batch, channels, window, layout);
  params.countIncludePad = countIncludePad;
  return runPool(x, y, nullptr, params, type, stream);
}

cudaError_t lpPool(const void* x, void* y, int64_t batch, int64_t channels, const PoolWindow& window, float p,
                   PoolLayout layout, ElementType type, cudaStream_t stream) {
  if (!(p > 0)) return cudaErrorInvalidValue;
  PoolParams params = paramsOf(PoolKind::kLp, batch, channels, window, layout);
  params.p = p;
  return runPool(x, y, nullptr, params, type, stream);
}

}  // namespace kiln::kernels::cuda
