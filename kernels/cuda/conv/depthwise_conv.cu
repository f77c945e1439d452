#include "depthwise_conv.h"

#include <kernels/cuda/common/device_types.cuh>
#include <kernels/cuda/common/launch.cuh>
#include <kernels/cuda/common/vector_pack.cuh>
#include <kernels/cuda/elementwise/fast_divider.h>
#include <kernels/cuda/elementwise/fused_activation.cuh>

#include <limits>

namespace kiln::kernels::cuda {
namespace {

// A thread's work is a vector of channels of `Columns` neighbouring output pixels of one row.
struct Geometry {
  FastDivider byGroups, byBlocks, byOutH;  // work index -> (row block, channel group) -> (row, column block) -> (n, oh)
  int32_t channels, inH, inW, outH, outW, kH, kW, sH, sW, dH, dW, padT, padL;
  int32_t blocks;  // column blocks per output row
  int32_t count;   // output rows times column blocks times channel groups (at most the output's vectors)
};

struct Work {
  int32_t n, oh, ow0, c;
};

// Channel group fastest, so the lanes of a warp read neighbouring 16-byte vectors of the same pixels.
template <int V, int Columns>
__device__ __forceinline__ Work workOf(const Geometry& g, uint32_t i) {
  const int32_t groups = g.channels / V;
  const int32_t rowBlock = int32_t(g.byGroups.divide(i));
  const int32_t row = int32_t(g.byBlocks.divide(uint32_t(rowBlock)));
  const int32_t n = int32_t(g.byOutH.divide(uint32_t(row)));
  return {n, row - n * g.outH, (rowBlock - row * g.blocks) * Columns, (int32_t(i) - rowBlock * groups) * V};
}

// V channels a thread: 16 bytes of T where the channel count allows, else one.
template <class T, int V>
__device__ __forceinline__ void load(const T* p, float (&out)[V]) {
  const Pack<T, V> vec = loadPack<T, V>(p, 0);
#pragma unroll
  for (int i = 0; i < V; ++i) out[i] = float(toCompute(vec.v[i]));
}

// V fp32 taps: whole 16-byte loads where V is a multiple of 4 (the taps of a vector of channels
// start on a multiple of V floats, and the filter on 16 bytes).
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

// The epilogue of the work's columns inside the row: act(acc + bias + residual) or
// act(acc + bias) + residual, rounded to T once. `activate` is the activation, fixed per call.
template <class T, int V, int Columns, class Activate>
__device__ __forceinline__ void finishWith(const Geometry& g, const Work& t, const float (&acc)[Columns][V],
                                           const T* __restrict__ bias, const T* __restrict__ residual,
                                           T* __restrict__ y, bool residualBefore, Activate activate) {
  float biasV[V] = {};
  if (bias) load<T, V>(bias + t.c, biasV);
  const int32_t first = ((t.n * g.outH + t.oh) * g.outW + t.ow0) * g.channels + t.c;
#pragma unroll
  for (int oc = 0; oc < Columns; ++oc) {
    if (t.ow0 + oc >= g.outW) break;
    const int32_t at = first + oc * g.channels;
    float before[V], after[V] = {};
#pragma unroll
    for (int v = 0; v < V; ++v) before[v] = biasV[v];
    if (residual) {
      float r[V];
      load<T, V>(residual + at, r);
      // Selects, not an array chosen at run time (which would live in local memory).
#pragma unroll
      for (int v = 0; v < V; ++v) {
        before[v] = residualBefore ? before[v] + r[v] : before[v];
        after[v] = residualBefore ? after[v] : after[v] + r[v];
      }
    }
    Pack<T, V> out;
#pragma unroll
    for (int v = 0; v < V; ++v) out.v[v] = fromCompute<T>(activate(acc[oc][v] + before[v]) + after[v]);
    *reinterpret_cast<Pack<T, V>*>(y + at) = out;
  }
}

// One switch on the activation a thread rather than one an element: MobileNet's and EfficientNet's
// activations get their own code, the others share fusedActivation's switch.
template <class T, int V, int Columns>
__device__ __forceinline__ void finish(const Geometry& g, const Work& t, const float (&acc)[Columns][V],
                                       const T* __restrict__ bias, const T* __restrict__ residual, T* __restrict__ y,
                                       const DepthwiseEpilogue& e) {
  const float alpha = e.alpha, beta = e.beta;
  auto with = [&](auto activation) {
    finishWith<T, V, Columns>(g, t, acc, bias, residual, y, e.residualBeforeActivation, activation);
  };
  switch (e.activation) {
    case Activation::kNone:
      return with([](float v) { return v; });
    case Activation::kRelu:
      return with([=](float v) { return fusedActivation(v, Activation::kRelu, alpha, beta); });
    case Activation::kClip:
      return with([=](float v) { return fusedActivation(v, Activation::kClip, alpha, beta); });
    case Activation::kSiLU:
      return with([=](float v) { return fusedActivation(v, Activation::kSiLU, alpha, beta); });
    case Activation::kHardSwish:
      return with([=](float v) { return fusedActivation(v, Activation::kHardSwish, alpha, beta); });
    default: {
      const Activation a = e.activation;
      return with([=](float v) { return fusedActivation(v, a, alpha, beta); });
    }
  }
}

// Output pixels a thread: 8 at stride 1 for fp32's 4 channels (32 accumulators) and for one
// channel a thread, else 4 (16-bit types' 8 channels: 8 pixels would spill at 128 registers, the
// most that lets 2 blocks share an SM).
constexpr int slidingColumns(int v, int strideW) { return strideW == 1 && v <= 4 ? 8 : 4; }
constexpr int kAnyWindowColumns = 4;

// A KxK window at horizontal stride SW, no horizontal dilation: the thread slides along its row,
// so each input pixel of a window row is loaded once for all the thread's columns (3x3 stride 1
// over 4 columns: 6 loads instead of 12), and a row's taps are loaded once for all of them. A
// 3x3's rows unroll too, so the loads of several rows can be in flight at once (a 5x5's would
// spill).
template <class T, int V, int K, int SW>
__global__ void __launch_bounds__(kThreadsPerBlock, 2)
    slidingKernel(const T* __restrict__ x, const float* __restrict__ filter, const T* __restrict__ bias,
                  const T* __restrict__ residual, T* __restrict__ y, const __grid_constant__ Geometry g,
                  const __grid_constant__ DepthwiseEpilogue e) {
  constexpr int kColumns = slidingColumns(V, SW);
  constexpr int kSpan = (kColumns - 1) * SW + K;  // input columns under the thread's windows
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < uint32_t(g.count); i += blockDim.x * gridDim.x) {
    const Work t = workOf<V, kColumns>(g, i);
    float acc[kColumns][V] = {};
    const int32_t h0 = t.oh * g.sH - g.padT, w0 = t.ow0 * SW - g.padL;
#pragma unroll(K == 3 ? 3 : 1)
    for (int kh = 0; kh < K; ++kh) {
      const int32_t h = h0 + kh * g.dH;
      if (h < 0 || h >= g.inH) continue;
      float taps[K][V];
#pragma unroll
      for (int kw = 0; kw < K; ++kw) loadTaps<V>(filter + (kh * K + kw) * g.channels + t.c, taps[kw]);
      const int32_t rowPixel = (t.n * g.inH + h) * g.inW;
#pragma unroll
      for (int j = 0; j < kSpan; ++j) {
        const int32_t w = w0 + j;
        float in[V] = {};  // a pad column adds zeros
        if (uint32_t(w) < uint32_t(g.inW)) load<T, V>(x + (rowPixel + w) * g.channels + t.c, in);
#pragma unroll
        for (int oc = 0; oc < kColumns; ++oc) {
          const int kw = j - oc * SW;  // constant after unrolling
          if (kw < 0 || kw >= K) continue;
#pragma unroll
          for (int v = 0; v < V; ++v) acc[oc][v] = fmaf(in[v], taps[kw][v], acc[oc][v]);
        }
      }
    }
    finish<T, V, kColumns>(g, t, acc, bias, residual, y, e);
  }
}

// Any window, stride and dilation: each tap's weights are loaded once for the thread's columns, each
// input as that tap of each column needs it.
template <class T, int V>
__global__ void __launch_bounds__(kThreadsPerBlock)
    anyWindowKernel(const T* __restrict__ x, const float* __restrict__ filter, const T* __restrict__ bias,
                    const T* __restrict__ residual, T* __restrict__ y, const __grid_constant__ Geometry g,
                    const __grid_constant__ DepthwiseEpilogue e) {
  constexpr int kColumns = kAnyWindowColumns;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < uint32_t(g.count); i += blockDim.x * gridDim.x) {
    const Work t = workOf<V, kColumns>(g, i);
    float acc[kColumns][V] = {};
    const int32_t h0 = t.oh * g.sH - g.padT, w0 = t.ow0 * g.sW - g.padL;
    for (int32_t kh = 0; kh < g.kH; ++kh) {
      const int32_t h = h0 + kh * g.dH;
      if (h < 0 || h >= g.inH) continue;
      const int32_t rowPixel = (t.n * g.inH + h) * g.inW;
      for (int32_t kw = 0; kw < g.kW; ++kw) {
        float taps[V];
        loadTaps<V>(filter + (kh * g.kW + kw) * g.channels + t.c, taps);
#pragma unroll
        for (int oc = 0; oc < kColumns; ++oc) {
          const int32_t w = w0 + oc * g.sW + kw * g.dW;
          if (uint32_t(w) >= uint32_t(g.inW)) continue;
          float in[V];
          load<T, V>(x + (rowPixel + w) * g.channels + t.c, in);
#pragma unroll
          for (int v = 0; v < V; ++v) acc[oc][v] = fmaf(in[v], taps[v], acc[oc][v]);
        }
      }
    }
    finish<T, V, kColumns>(g, t, acc, bias, residual, y, e);
  }
}

template <class T>
using KernelFn = void (*)(const T*, const float*, const T*, const T*, T*, Geometry, DepthwiseEpilogue);

template <class T, int V>
cudaError_t launch(const DepthwiseConv2d& p, const void* x, const float* filter, const DepthwiseEpilogue& e, void* y,
                   cudaStream_t stream) {
  // 3x3 and 5x5 at horizontal stride 1 or 2 (MobileNet's and EfficientNet's layers) slide.
  KernelFn<T> kernel = anyWindowKernel<T, V>;
  int columns = kAnyWindowColumns;
  if (p.kernelH == p.kernelW && (p.kernelW == 3 || p.kernelW == 5) && p.dilationW == 1 &&
      (p.strideW == 1 || p.strideW == 2)) {
    columns = slidingColumns(V, int(p.strideW));
    if (p.kernelW == 3) kernel = p.strideW == 1 ? slidingKernel<T, V, 3, 1> : slidingKernel<T, V, 3, 2>;
    if (p.kernelW == 5) kernel = p.strideW == 1 ? slidingKernel<T, V, 5, 1> : slidingKernel<T, V, 5, 2>;
  }
  Geometry g;
  g.channels = int32_t(p.channels);
  g.inH = int32_t(p.inH), g.inW = int32_t(p.inW), g.outH = int32_t(p.outH), g.outW = int32_t(p.outW);
  g.kH = int32_t(p.kernelH), g.kW = int32_t(p.kernelW), g.sH = int32_t(p.strideH), g.sW = int32_t(p.strideW);
  g.dH = int32_t(p.dilationH), g.dW = int32_t(p.dilationW), g.padT = int32_t(p.padTop), g.padL = int32_t(p.padLeft);
  g.blocks = int32_t((p.outW + columns - 1) / columns);
  g.byGroups = FastDivider(uint32_t(p.channels / V));
  g.byBlocks = FastDivider(uint32_t(g.blocks));
  g.byOutH = FastDivider(uint32_t(p.outH));
  g.count = int32_t(p.batch * p.outH * g.blocks * (p.channels / V));
  kernel<<<gridFor(g.count), kThreadsPerBlock, 0, stream>>>(
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
