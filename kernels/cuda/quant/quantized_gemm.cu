#include "quantized_gemm.h"

#include "quant_math.h"

#include <kernels/cuda/common/device_types.cuh>
#include <kernels/cuda/common/launch.cuh>
#include <kernels/cuda/common/vector_pack.cuh>
#include <kernels/cuda/elementwise/fast_divider.h>
#include <kernels/cuda/elementwise/fused_activation.cuh>

#include <algorithm>
#include <type_traits>

namespace kiln::kernels::cuda {
namespace {

// Launches index 32-bit (FastDivider): problems are cut into pieces of fewer elements.
constexpr int64_t kMaxLaunchElements = (int64_t(1) << 31) - 1;

// The operand byte of one activation element.
template <class X>
__device__ __forceinline__ uint8_t operandByte(X x, const OperandQuantization& q) {
  if constexpr (std::is_same_v<X, int8_t>) {
    return uint8_t(x);  // int8 quantization: the operand is q itself
  } else if constexpr (std::is_same_v<X, uint8_t>) {
    return q.fp8 ? x : uint8_t(int(x) - 128);  // fp8 codes as they are; uint8 enters as q - 128
  } else {
    const float v = float(toCompute(x));
    if (q.fp8) return encodeE4M3(v / q.scale, true);
    if (q.unsignedQ) return uint8_t(int(quantizeToInteger<uint8_t>(v, q.scale, uint8_t(q.zero))) - 128);
    return uint8_t(quantizeToInteger<int8_t>(v, q.scale, int8_t(q.zero)));
  }
}

// Dense operands (no padded columns): V elements a thread, one vector load and store each.
template <class X, int V>
__global__ void quantizeDenseKernel(const X* __restrict__ x, uint32_t packs, uint8_t* __restrict__ out,
                                    const __grid_constant__ OperandQuantization q) {
  for (uint32_t j = blockIdx.x * blockDim.x + threadIdx.x; j < packs; j += blockDim.x * gridDim.x) {
    const Pack<X, V> in = loadPack<X, V>(x, size_t(j) * V);
    Pack<uint8_t, V> o;
#pragma unroll
    for (int k = 0; k < V; ++k) o.v[k] = operandByte(in.v[k], q);
    *reinterpret_cast<Pack<uint8_t, V>*>(out + size_t(j) * V) = o;
  }
}

template <class X>
__global__ void quantizeOperandKernel(const X* __restrict__ x, uint32_t rows, uint32_t cols, FastDivider byPadded,
                                      uint8_t* __restrict__ out, const __grid_constant__ OperandQuantization q) {
  const uint32_t padded = byPadded.divisor, count = rows * padded;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += blockDim.x * gridDim.x) {
    const uint32_t r = byPadded.divide(i), c = i - r * padded;
    out[i] = c < cols ? operandByte(x[size_t(r) * cols + c], q) : uint8_t(0);
  }
}

struct Im2colIndex {
  FastDivider byChannels, byKernelW, byOutW, byOutH;
  int32_t channels, inH, inW, sH, sW, dH, dW, padT, padL, taps, columns;
  bool channelsLast;
};

// One warp a row (output pixel): its lanes walk the row's columns, so the writes are whole lines;
// V channels a lane (V = 8: channels-last input with channels a multiple of 8, vector accesses).
template <class X, int V>
__global__ void im2colKernel(const X* __restrict__ x, int64_t firstRow, uint32_t rows, uint8_t* __restrict__ out,
                             const __grid_constant__ Im2colIndex g, const __grid_constant__ OperandQuantization q) {
  const uint32_t lane = threadIdx.x & 31, warpsPerBlock = blockDim.x / 32;
  const uint8_t padding = q.fp8 ? uint8_t(0) : uint8_t(q.paddingValue());
  for (uint32_t local = blockIdx.x * warpsPerBlock + threadIdx.x / 32; local < rows;
       local += warpsPerBlock * gridDim.x) {
    const int64_t row = firstRow + local;
    // row = (n * outH + oh) * outW + ow: under 2^31 rows a launch, but the offset may not be.
    const int64_t pixelsOfImage = int64_t(g.byOutH.divisor) * g.byOutW.divisor;
    const int64_t n = row / pixelsOfImage;
    const uint32_t pixel = uint32_t(row - n * pixelsOfImage);
    const uint32_t oh = g.byOutW.divide(pixel), ow = pixel - oh * g.byOutW.divisor;
    const int32_t ih0 = int32_t(oh) * g.sH - g.padT, iw0 = int32_t(ow) * g.sW - g.padL;
    uint8_t* dst = out + size_t(local) * g.columns;
    const int32_t used = g.taps * g.channels;
    for (int32_t col = int32_t(lane) * V; col < g.columns; col += 32 * V) {
      Pack<uint8_t, V> v;
#pragma unroll
      for (int k = 0; k < V; ++k) v.v[k] = 0;
      if (col < used) {
        const uint32_t tap = g.byChannels.divide(uint32_t(col)), c = uint32_t(col) - tap * g.byChannels.divisor;
        const uint32_t kh = g.byKernelW.divide(tap), kw = tap - kh * g.byKernelW.divisor;
        const int32_t ih = ih0 + int32_t(kh) * g.dH, iw = iw0 + int32_t(kw) * g.dW;
        if (ih < 0 || ih >= g.inH || iw < 0 || iw >= g.inW) {
#pragma unroll
          for (int k = 0; k < V; ++k) v.v[k] = padding;
        } else if constexpr (V > 1) {  // channels-last: V neighbouring channels in one load
          const Pack<X, V> in = loadPack<X, V>(x, ((size_t(n) * g.inH + ih) * g.inW + iw) * g.channels + c);
#pragma unroll
          for (int k = 0; k < V; ++k) v.v[k] = operandByte(in.v[k], q);
        } else {
          const size_t at = g.channelsLast ? ((size_t(n) * g.inH + ih) * g.inW + iw) * g.channels + c
                                           : ((size_t(n) * g.channels + c) * g.inH + ih) * g.inW + iw;
          v.v[0] = operandByte(x[at], q);
        }
      }
      *reinterpret_cast<Pack<uint8_t, V>*>(dst + col) = v;
    }
  }
}

template <class Fn>
cudaError_t dispatchActivation(ElementType type, bool fp8, Fn&& fn) {
  switch (type) {
    case ElementType::kFloat32:
      return fn(float{});
    case ElementType::kFloat16:
      return fn(__half{});
    case ElementType::kBFloat16:
      return fn(__nv_bfloat16{});
    case ElementType::kInt8:
      return fp8 ? cudaErrorInvalidValue : fn(int8_t{});
    case ElementType::kUInt8:
      return fp8 ? cudaErrorInvalidValue : fn(uint8_t{});
    case ElementType::kFloat8E4M3:
      return fp8 ? fn(uint8_t{}) : cudaErrorInvalidValue;
    default:
      return cudaErrorInvalidValue;
  }
}

// Y is the output's device type; fp8 outputs are written as their uint8 codes (Fp8Out).
template <class Y, bool Fp8Out>
__device__ __forceinline__ Y storeValue(float v, const DequantizeEpilogue& e) {
  if constexpr (Fp8Out) {
    return quantizeToFloat8(v, e.outputScale, uint8_t(e.outputZero), Float8Kind::kE4M3, true);
  } else if constexpr (std::is_same_v<Y, int8_t> || std::is_same_v<Y, uint8_t>) {
    return quantizeToInteger<Y>(v, e.outputScale, Y(e.outputZero));
  } else {
    return fromCompute<Y>(v);
  }
}

template <int V>
__device__ __forceinline__ void loadResidual(const void* p, size_t at, ElementType type, float scale, float (&out)[V]) {
  if (type == ElementType::kInt8) {  // one rounding, never fused into the add that follows
    const Pack<int8_t, V> r = loadPack<int8_t, V>(p, at);
#pragma unroll
    for (int k = 0; k < V; ++k) out[k] = __fmul_rn(float(r.v[k]), scale);
  } else if (type == ElementType::kFloat16) {
    const Pack<__half, V> r = loadPack<__half, V>(p, at);
#pragma unroll
    for (int k = 0; k < V; ++k) out[k] = __half2float(r.v[k]);
  } else if (type == ElementType::kBFloat16) {
    const Pack<__nv_bfloat16, V> r = loadPack<__nv_bfloat16, V>(p, at);
#pragma unroll
    for (int k = 0; k < V; ++k) out[k] = __bfloat162float(r.v[k]);
  } else {
    const Pack<float, V> r = loadPack<float, V>(p, at);
#pragma unroll
    for (int k = 0; k < V; ++k) out[k] = r.v[k];
  }
}

// V consecutive channels of one row a thread (V > 1: channels-last tensors, vector accesses).
template <class Y, bool Fp8Out, int V>
__global__ void dequantizeKernel(uint32_t count, FastDivider byGroups, FastDivider byPlane, Y* __restrict__ y,
                                 const __grid_constant__ DequantizeEpilogue e) {
  const uint32_t channels = byGroups.divisor * V;
  for (uint32_t j = blockIdx.x * blockDim.x + threadIdx.x; j < count; j += blockDim.x * gridDim.x) {
    const uint32_t r = byGroups.divide(j), c0 = (j - r * byGroups.divisor) * V;
    const size_t sumAt = size_t(r) * e.sumStride + c0;
    float v[V];
    if (e.integerSums) {
      const Pack<int32_t, V> sums = loadPack<int32_t, V>(e.sums, sumAt);
      Pack<int32_t, V> correction{};
      if (e.correction) correction = loadPack<int32_t, V>(e.correction, c0);
#pragma unroll
      for (int k = 0; k < V; ++k) v[k] = float(sums.v[k] + correction.v[k]);
    } else {
      const Pack<float, V> sums = loadPack<float, V>(e.sums, sumAt);
#pragma unroll
      for (int k = 0; k < V; ++k) v[k] = sums.v[k];
    }
    // Two roundings, as the CPU takes them: the dequantized sum, then the bias onto it.
    const Pack<float, V> m = loadPack<float, V>(e.multipliers, c0);
#pragma unroll
    for (int k = 0; k < V; ++k) v[k] = __fmul_rn(v[k], m.v[k]);
    if (e.bias) {
      const Pack<float, V> b = loadPack<float, V>(e.bias, c0);
#pragma unroll
      for (int k = 0; k < V; ++k) v[k] = __fadd_rn(v[k], b.v[k]);
    }
    const size_t at = size_t(r) * channels + c0;  // channels-last
    size_t firstAt = at;                          // [n, channels, plane] for channels-first tensors (V = 1)
    if constexpr (V == 1) {
      if (e.channelsFirst || e.residualChannelsFirst) {
        const uint32_t n = byPlane.divide(r), p = r - n * byPlane.divisor;
        firstAt = (size_t(n) * channels + c0) * byPlane.divisor + p;
      }
    }
    float residual[V] = {};
    if (e.residual) {
      loadResidual<V>(e.residual, e.residualChannelsFirst ? firstAt : at, e.residualType, e.residualScale, residual);
      if (e.residualBeforeActivation)
#pragma unroll
        for (int k = 0; k < V; ++k) v[k] = __fadd_rn(v[k], residual[k]);
    }
    Pack<Y, V> out;
#pragma unroll
    for (int k = 0; k < V; ++k) {
      float a = fusedActivation(v[k], e.activation, e.alpha, e.beta);
      if (e.residual && !e.residualBeforeActivation) a = __fadd_rn(a, residual[k]);
      out.v[k] = storeValue<Y, Fp8Out>(a, e);
    }
    *reinterpret_cast<Pack<Y, V>*>(y + (e.channelsFirst ? firstAt : at)) = out;
  }
}

}  // namespace

cudaError_t quantizeGemmOperand(const void* x, ElementType xType, int64_t rows, int64_t cols, int64_t paddedCols,
                                const OperandQuantization& q, void* operand, cudaStream_t stream) {
  if (rows <= 0 || paddedCols <= 0) return cudaSuccess;
  if (cols > paddedCols || paddedCols > kMaxLaunchElements) return cudaErrorInvalidValue;
  const int64_t rowsPerLaunch = kMaxLaunchElements / paddedCols;
  return dispatchActivation(xType, q.fp8, [&](auto tag) {
    using X = decltype(tag);
    constexpr int V = 8;
    const int64_t count = rows * cols;
    if (cols == paddedCols && cols % V == 0 && count / V <= kMaxLaunchElements && alignedTo(x, sizeof(X) * V) &&
        alignedTo(operand, V)) {
      quantizeDenseKernel<X, V><<<gridFor(count / V), kThreadsPerBlock, 0, stream>>>(
          static_cast<const X*>(x), uint32_t(count / V), static_cast<uint8_t*>(operand), q);
      return launchStatus();
    }
    for (int64_t first = 0; first < rows; first += rowsPerLaunch) {
      const int64_t n = std::min(rowsPerLaunch, rows - first);
      quantizeOperandKernel<X><<<gridFor(n * paddedCols), kThreadsPerBlock, 0, stream>>>(
          static_cast<const X*>(x) + first * cols, uint32_t(n), uint32_t(cols), FastDivider(uint32_t(paddedCols)),
          static_cast<uint8_t*>(operand) + first * paddedCols, q);
      if (cudaError_t status = launchStatus(); status != cudaSuccess) return status;
    }
    return cudaSuccess;
  });
}

cudaError_t quantizedIm2col(const void* x, ElementType xType, const Im2col& g, const OperandQuantization& q,
                            void* operand, cudaStream_t stream) {
  const int64_t rows = g.rows(), taps = g.kernelH * g.kernelW;
  if (rows <= 0 || g.columns <= 0) return cudaSuccess;
  if (g.columns < taps * g.channels || g.columns > kMaxLaunchElements || g.outH * g.outW > kMaxLaunchElements)
    return cudaErrorInvalidValue;
  Im2colIndex index{FastDivider(uint32_t(g.channels)),
                    FastDivider(uint32_t(g.kernelW)),
                    FastDivider(uint32_t(g.outW)),
                    FastDivider(uint32_t(g.outH)),
                    int32_t(g.channels),
                    int32_t(g.inH),
                    int32_t(g.inW),
                    int32_t(g.strideH),
                    int32_t(g.strideW),
                    int32_t(g.dilationH),
                    int32_t(g.dilationW),
                    int32_t(g.padTop),
                    int32_t(g.padLeft),
                    int32_t(taps),
                    int32_t(g.columns),
                    g.channelsLast};
  const int64_t rowsPerLaunch = kMaxLaunchElements;  // a warp a row: the row count is the index space
  constexpr int kWarps = kThreadsPerBlock / 32;
  return dispatchActivation(xType, q.fp8, [&](auto tag) {
    using X = decltype(tag);
    const bool vectors = g.channelsLast && g.channels % 8 == 0 && g.columns % 8 == 0 && alignedTo(x, sizeof(X) * 8) &&
                         alignedTo(operand, 8);
    for (int64_t first = 0; first < rows; first += rowsPerLaunch) {
      const int64_t n = std::min(rowsPerLaunch, rows - first);
      const unsigned blocks = unsigned(std::clamp<int64_t>((n + kWarps - 1) / kWarps, 1, int64_t(65535) * 8));
      uint8_t* rowsOut = static_cast<uint8_t*>(operand) + first * g.columns;
      if (vectors)
        im2colKernel<X, 8>
            <<<blocks, kThreadsPerBlock, 0, stream>>>(static_cast<const X*>(x), first, uint32_t(n), rowsOut, index, q);
      else
        im2colKernel<X, 1>
            <<<blocks, kThreadsPerBlock, 0, stream>>>(static_cast<const X*>(x), first, uint32_t(n), rowsOut, index, q);
      if (cudaError_t status = launchStatus(); status != cudaSuccess) return status;
    }
    return cudaSuccess;
  });
}

cudaError_t dequantizeEpilogue(const DequantizeEpilogue& e, void* y, ElementType yType, cudaStream_t stream) {
  if (e.rows <= 0 || e.channels <= 0) return cudaSuccess;
  if (e.channels > kMaxLaunchElements || e.plane <= 0 || !e.multipliers) return cudaErrorInvalidValue;
  if (e.residual && e.residualType != ElementType::kFloat32 && e.residualType != ElementType::kFloat16 &&
      e.residualType != ElementType::kBFloat16 && e.residualType != ElementType::kInt8)
    return cudaErrorInvalidValue;
  const bool anyChannelsFirst = e.channelsFirst || (e.residual && e.residualChannelsFirst);
  if (anyChannelsFirst && e.rows % e.plane != 0) return cudaErrorInvalidValue;
  const int64_t sumStride = e.sumStride ? e.sumStride : e.channels;
  if (sumStride < e.channels) return cudaErrorInvalidValue;
  // A channels-first launch covers whole images, so its output offsets stay those of its rows.
  int64_t rowsPerLaunch = kMaxLaunchElements / e.channels;
  if (anyChannelsFirst) rowsPerLaunch = std::max<int64_t>(e.plane, rowsPerLaunch / e.plane * e.plane);
  if (anyChannelsFirst && rowsPerLaunch * e.channels > kMaxLaunchElements) return cudaErrorInvalidValue;
  auto run = [&](auto tag, auto fp8Out) -> cudaError_t {
    using Y = decltype(tag);
    constexpr bool kFp8 = decltype(fp8Out)::value;
    for (int64_t first = 0; first < e.rows; first += rowsPerLaunch) {
      const int64_t n = std::min(rowsPerLaunch, e.rows - first);
      DequantizeEpilogue part = e;
      part.rows = n;
      part.sumStride = sumStride;
      part.sums = static_cast<const char*>(e.sums) + size_t(first * sumStride) * sizeof(int32_t);  // 4-byte sums
      const size_t offset = size_t(first * e.channels);  // rows are whole images when channels-first
      if (e.residual) part.residual = static_cast<const char*>(e.residual) + offset * elementBytes(e.residualType);
      const int64_t count = n * e.channels;
      Y* out = static_cast<Y*>(y) + offset;
      constexpr int V = 8;  // channels a thread where every access can be a vector
      const bool vectors = !anyChannelsFirst && e.channels % V == 0 && sumStride % V == 0 &&
                           alignedTo(part.sums, 4 * V) && alignedTo(out, sizeof(Y) * V) &&
                           (!e.residual || alignedTo(part.residual, elementBytes(e.residualType) * V)) &&
                           alignedTo(e.multipliers, 4 * V) && (!e.bias || alignedTo(e.bias, 4 * V)) &&
                           (!e.correction || alignedTo(e.correction, 4 * V));
      if (vectors)
        dequantizeKernel<Y, kFp8, V><<<gridFor(count / V), kThreadsPerBlock, 0, stream>>>(
            uint32_t(count / V), FastDivider(uint32_t(e.channels / V)), FastDivider(uint32_t(e.plane)), out, part);
      else
        dequantizeKernel<Y, kFp8, 1><<<gridFor(count), kThreadsPerBlock, 0, stream>>>(
            uint32_t(count), FastDivider(uint32_t(e.channels)), FastDivider(uint32_t(e.plane)), out, part);
      if (cudaError_t status = launchStatus(); status != cudaSuccess) return status;
    }
    return cudaSuccess;
  };
  switch (yType) {
    case ElementType::kFloat32:
      return run(float{}, std::false_type{});
    case ElementType::kFloat16:
      return run(__half{}, std::false_type{});
    case ElementType::kBFloat16:
      return run(__nv_bfloat16{}, std::false_type{});
    case ElementType::kInt8:
      return run(int8_t{}, std::false_type{});
    case ElementType::kUInt8:
      return run(uint8_t{}, std::false_type{});
    case ElementType::kFloat8E4M3:
      return run(uint8_t{}, std::true_type{});
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace kiln::kernels::cuda
