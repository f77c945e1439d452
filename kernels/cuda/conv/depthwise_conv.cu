#include "depthwise_conv.h"

#include <kernels/cuda/common/device_types.cuh>
#include <kernels/cuda/common/launch.cuh>
#include <kernels/cuda/common/vector_pack.cuh>
#include <kernels/cuda/elementwise/fast_divider.h>
#include <kernels/cuda/elementwise/fused_activation.cuh>

#include <limits>

namespace kiln::kernels::cuda {
namespace {

struct Geometry {
  FastDivider byGroups, byOutW, byOutH;  // output index -> (pixel, channel group) -> (n, oh, ow)
  int32_t channels, inH, inW, outH, outW, kH, kW, sH, sW, dH, dW, padT, padL;
  int32_t count;  // output pixels times channel groups
};

// V channels a thread: 16 bytes of T where the channel count allows, else one.
template <class T, int V>
__device__ __forceinline__ void load(const T* p, float (&out)[V]) {
  const Pack<T, V> vec = loadPack<T, V>(p, 0);
#pragma unroll
  for (int i = 0; i < V; ++i) out[i] = float(toCompute(vec.v[i]));
}

// V fp32 taps: whole 16-byte loads where V is a multiple of 4 (the taps of a vector of channels
// start on a multiple of V floats, and the filter on 256 bytes).
template <int V>
__device__ __forceinline__ void loadTaps(const float* p, float (&out)[V]) {
  if constexpr (V % 4 == 0) {
#pragma unroll
    for (int i = 0; i < V / 4; ++i) {
      const float4 q = reinterpret_cast<const float4*>(p)[i];
      out[4 * i] = q.x, out[4 * i + 1] = q.y, out[4 * i + 2] = q.z, out[4 * i + 3] = q.w;
    }
  } else {
#pragma unroll
    for (int i = 0; i < V; ++i) out[i] = p[i];
  }
}

template <class T, int V>
__global__ void depthwiseKernel(const T* __restrict__ x, const float* __restrict__ filter, const T* __restrict__ bias,
                                const T* __restrict__ residual, T* __restrict__ y, const __grid_constant__ Geometry g,
                                const __grid_constant__ DepthwiseEpilogue e) {
  const int32_t groups = g.channels / V;
  for (int32_t i = int32_t(blockIdx.x) * blockDim.x + threadIdx.x; i < g.count; i += int32_t(blockDim.x) * gridDim.x) {
    const int32_t pixel = int32_t(g.byGroups.divide(uint32_t(i)));
    const int32_t c = (i - pixel * groups) * V;
    const int32_t rows = int32_t(g.byOutW.divide(uint32_t(pixel)));
    const int32_t ow = pixel - rows * g.outW;
    const int32_t n = int32_t(g.byOutH.divide(uint32_t(rows)));
    const int32_t oh = rows - n * g.outH;
    float acc[V] = {};
    const int32_t h0 = oh * g.sH - g.padT, w0 = ow * g.sW - g.padL;
    for (int32_t kh = 0; kh < g.kH; ++kh) {
      const int32_t h = h0 + kh * g.dH;
      if (h < 0 || h >= g.inH) continue;
      const T* row = x + (int64_t(n * g.inH + h) * g.inW) * g.channels + c;
      const float* taps = filter + int64_t(kh * g.kW) * g.channels + c;
      for (int32_t kw = 0; kw < g.kW; ++kw) {
        const int32_t w = w0 + kw * g.dW;
        if (w < 0 || w >= g.inW) continue;
        float in[V], weights[V];
        load<T, V>(row + int64_t(w) * g.channels, in);
        loadTaps<V>(taps + int64_t(kw) * g.channels, weights);
#pragma unroll
        for (int v = 0; v < V; ++v) acc[v] = fmaf(in[v], weights[v], acc[v]);
      }
    }
    const int64_t at = int64_t(pixel) * g.channels + c;
    float before[V] = {}, after[V] = {};
    if (bias) load<T, V>(bias + c, before);
    if (residual) {
      float r[V];
      load<T, V>(residual + at, r);
#pragma unroll
      for (int v = 0; v < V; ++v) (e.residualBeforeActivation ? before : after)[v] += r[v];
    }
    Pack<T, V> out;
#pragma unroll
    for (int v = 0; v < V; ++v)
      out.v[v] = fromCompute<T>(fusedActivation(acc[v] + before[v], e.activation, e.alpha, e.beta) + after[v]);
    *reinterpret_cast<Pack<T, V>*>(y + at) = out;
  }
}

template <class T, int V>
cudaError_t launch(const DepthwiseConv2d& p, const void* x, const float* filter, const DepthwiseEpilogue& e, void* y,
                   cudaStream_t stream) {
  Geometry g;
  g.channels = int32_t(p.channels);
  g.inH = int32_t(p.inH), g.inW = int32_t(p.inW), g.outH = int32_t(p.outH), g.outW = int32_t(p.outW);
  g.kH = int32_t(p.kernelH), g.kW = int32_t(p.kernelW), g.sH = int32_t(p.strideH), g.sW = int32_t(p.strideW);
  g.dH = int32_t(p.dilationH), g.dW = int32_t(p.dilationW), g.padT = int32_t(p.padTop), g.padL = int32_t(p.padLeft);
  g.byGroups = FastDivider(uint32_t(p.channels / V));
  g.byOutW = FastDivider(uint32_t(p.outW));
  g.byOutH = FastDivider(uint32_t(p.outH));
  g.count = int32_t(p.batch * p.outH * p.outW * (p.channels / V));
  depthwiseKernel<T, V><<<gridFor(g.count), kThreadsPerBlock, 0, stream>>>(
      static_cast<const T*>(x), filter, static_cast<const T*>(e.bias), static_cast<const T*>(e.residual),
      static_cast<T*>(y), g, e);
  return launchStatus();
}

bool aligned(const void* p, uintptr_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

}  // namespace

bool depthwiseConvTakes(const DepthwiseConv2d& p) {
  const int64_t limit = std::numeric_limits<int32_t>::max();
  return p.batch * p.inH * p.inW * p.channels < limit && p.batch * p.outH * p.outW * p.channels < limit &&
         p.kernelH * p.kernelW * p.channels < limit && p.channels > 0;
}

cudaError_t depthwiseConv2dChannelsLast(const DepthwiseConv2d& p, const void* x, const float* filter,
                                        const DepthwiseEpilogue& e, void* y, ElementType type, cudaStream_t stream) {
  if (!depthwiseConvTakes(p)) return cudaErrorInvalidValue;
  if (p.batch * p.outH * p.outW * p.channels == 0) return cudaSuccess;
  return dispatchFloat(type, [&](auto tag) -> cudaError_t {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, double>) {
      return cudaErrorInvalidValue;
    } else {
      constexpr int kVector = 16 / int(sizeof(T));
      // The vector path needs whole vectors per pixel and every pointer on 16 bytes (filter: the
      // fp32 taps of kVector channels load as kVector floats, 4-byte aligned is enough).
      const bool vectors = p.channels % kVector == 0 && aligned(x, 16) && aligned(y, 16) && aligned(filter, 16) &&
                           (!e.bias || aligned(e.bias, 16)) && (!e.residual || aligned(e.residual, 16));
      return vectors ? launch<T, kVector>(p, x, filter, e, y, stream) : launch<T, 1>(p, x, filter, e, y, stream);
    }
  });
}

}  // namespace kiln::kernels::cuda
