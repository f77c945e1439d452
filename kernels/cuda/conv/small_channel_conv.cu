#include "small_channel_conv.h"

#include <kernels/cuda/common/device_types.cuh>
#include <kernels/cuda/common/launch.cuh>
#include <kernels/cuda/common/warp_matrix.cuh>
#include <kernels/cuda/elementwise/fused_activation.cuh>

#include <algorithm>
#include <cstring>
#include <type_traits>

namespace kiln::kernels::cuda {
namespace {

constexpr int kColumns = 64;        // output channels a block: a warp's 8 mma tiles of 8
constexpr int kMaxSegment = 112;    // output pixels a segment: 7 warps of 16 (ResNet stem's output row)
constexpr int kStagingStride = 72;  // halves a staged pixel: 64 + 8, so a warp's 4-byte writes hit distinct banks
constexpr int64_t kIndexLimit = int64_t(1) << 31;
constexpr int64_t kMaxSharedBytes = 200 * 1024;

struct Args {
  const uint16_t* x;
  const float* w;
  const uint16_t* bias;
  uint16_t* y;
  int32_t channels, inH, inW, outH, outW, outChannels, kernelH, kernelW, strideH, strideW, dilationH, dilationW;
  int32_t padTop, padLeft;
  int32_t reduction, paddedReduction;            // R·S·C; rounded up to 16
  int32_t segments, segmentWidth;                // a row's segments; pixels of all but maybe the last
  int32_t windowCols, windowElements, zeroTail;  // window: [C][R][windowCols], then zeroTail zeros
  int32_t work;                                  // N·P·segments
  bool xChannelsLast, yChannelsLast;
  Activation activation;
  float alpha, beta;
};

struct SharedLayout {
  int64_t filter, offsets, bias, region;  // bytes of each part
  int64_t total() const { return filter + offsets + bias + region; }
};

SharedLayout sharedLayout(int64_t paddedReduction, int64_t windowHalves, int64_t warps) {
  const int64_t staging = warps * 16 * kStagingStride;
  return {kColumns * (paddedReduction + 8) * 2, paddedReduction * 4, kColumns * 4,
          (std::max(windowHalves, staging) * 2 + 15) / 16 * 16};
}

__device__ __forceinline__ int smaller(int a, int b) { return a < b ? a : b; }

template <class T>
__device__ __forceinline__ uint16_t bitsOf(float v) {
  const T h = fromCompute<T>(v);
  uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}

template <class T>
__device__ __forceinline__ float valueOf(uint16_t b) {
  T h;
  std::memcpy(&h, &b, 2);
  return float(toCompute(h));
}

// Block (b, column block): the segments b, b + gridDim.x, ... (segment s: output row s / segments of
// the batch's N·P rows, its part s % segments) for output channels 64 · column block on. 4 blocks of
// 7 warps an SM: 72 registers a thread, no spills (sm_90).
template <class T>
__global__ void __launch_bounds__(32 * kMaxSegment / 16, 4) smallChannelConvKernel(const __grid_constant__ Args p) {
#if (defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800) || defined(KILN_CUDA_EMULATION)
  extern __shared__ uint4 shared[];
  const int kp = p.paddedReduction, filterStride = kp + 8;
  uint16_t* const filter = reinterpret_cast<uint16_t*>(shared);
  int* const offsets = reinterpret_cast<int*>(filter + kColumns * filterStride);
  float* const bias = reinterpret_cast<float*>(offsets + kp);
  uint16_t* const region = reinterpret_cast<uint16_t*>(bias + kColumns);  // the window, then the staged tile
  const int tid = int(threadIdx.x), threads = int(blockDim.x), lane = tid % 32, warp = tid / 32;
  const int g = lane / 4, t = lane % 4;
  const int n0 = int(blockIdx.y) * kColumns, columns = smaller(kColumns, p.outChannels - n0);

  // The block's filter rows [64][kp] in T, zero past K and past R·S·C (the padded k then adds 0).
  for (int i = tid; i < kColumns * kp; i += threads) {
    const int row = i / kp, k = i - row * kp;
    const float v = row < columns && k < p.reduction ? p.w[(n0 + row) * p.reduction + k] : 0.0f;
    filter[row * filterStride + k] = bitsOf<T>(v);
  }
  // k = (c·R + r)·S + s reads window element (c·R + r)·windowCols + s·dilationW (+ the pixel's
  // column); a padded k reads the zero tail. Stored so that lane t's k 2t, 2t+1, 2t+8, 2t+9 of a
  // k-step are one 16-byte read.
  for (int i = tid; i < kp; i += threads) {
    const int step = i / 16, at = i % 16, j = at % 4;
    const int k = step * 16 + 2 * (at / 4) + (j & 1) + (j >= 2 ? 8 : 0);
    offsets[i] = k < p.reduction ? k / p.kernelW * p.windowCols + k % p.kernelW * p.dilationW : p.windowElements;
  }
  for (int i = tid; i < kColumns; i += threads) bias[i] = p.bias && i < columns ? valueOf<T>(p.bias[n0 + i]) : 0.0f;
  const int tilesN = columns / 8;  // K is a multiple of 8
  const int windowRows = p.channels * p.kernelH;

  for (int item = int(blockIdx.x); item < p.work; item += int(gridDim.x)) {
    const int part = item % p.segments, outRow = item / p.segments;
    const int n = outRow / p.outH, oh = outRow - n * p.outH;
    const int ow0 = part * p.segmentWidth, width = smaller(p.segmentWidth, p.outW - ow0);
    __syncthreads();  // the setup above, or the last segment's staged tile, has been read
    // The window: input rows oh·strideH - padTop + r·dilationH, columns from ow0·strideW - padLeft.
    const int ihBase = oh * p.strideH - p.padTop, iwBase = ow0 * p.strideW - p.padLeft;
    // A warp a window row, a lane a column: no division an element, reads along an input row (NCHW)
    // or a pixel's channels together (NHWC).
    const int warps = threads / 32;
    if (p.xChannelsLast) {
      for (int r = warp; r < p.kernelH; r += warps) {
        const int ih = ihBase + r * p.dilationH;
        const bool rowInside = unsigned(ih) < unsigned(p.inH);
        const uint16_t* const source = p.x + size_t(n * p.inH + (rowInside ? ih : 0)) * p.inW * p.channels;
        for (int col = lane; col < p.windowCols; col += 32) {
          const int iw = iwBase + col;
          const bool inside = rowInside && unsigned(iw) < unsigned(p.inW);
          for (int c = 0; c < p.channels; ++c)
            region[(c * p.kernelH + r) * p.windowCols + col] = inside ? source[iw * p.channels + c] : uint16_t(0);
        }
      }
    } else {
      for (int row = warp; row < windowRows; row += warps) {
        const int c = row / p.kernelH, r = row - c * p.kernelH, ih = ihBase + r * p.dilationH;
        uint16_t* const target = region + row * p.windowCols;
        if (unsigned(ih) >= unsigned(p.inH)) {
          for (int col = lane; col < p.windowCols; col += 32) target[col] = 0;
          continue;
        }
        const uint16_t* const source = p.x + (size_t(n * p.channels + c) * p.inH + ih) * p.inW;
        for (int col = lane; col < p.windowCols; col += 32) {
          const int iw = iwBase + col;
          target[col] = unsigned(iw) < unsigned(p.inW) ? source[iw] : uint16_t(0);
        }
      }
    }
    for (int e = tid; e < p.zeroTail; e += threads) region[p.windowElements + e] = 0;
    __syncthreads();

    // The warp's 16 pixels (past the segment's end: its last, stored nowhere) x the block's channels.
    float acc[kColumns / 8][4];
#pragma unroll
    for (int tn = 0; tn < kColumns / 8; ++tn)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[tn][e] = 0.0f;
    const int pixel0 = smaller(warp * 16 + g, width - 1) * p.strideW,
              pixel1 = smaller(warp * 16 + g + 8, width - 1) * p.strideW;
    const uint16_t* const row0 = region + pixel0;
    const uint16_t* const row1 = region + pixel1;
    for (int step = 0; step < kp / 16; ++step) {
      const int4 o = reinterpret_cast<const int4*>(offsets)[step * 4 + t];
      const uint32_t a[4] = {
          uint32_t(row0[o.x]) | uint32_t(row0[o.y]) << 16, uint32_t(row1[o.x]) | uint32_t(row1[o.y]) << 16,
          uint32_t(row0[o.z]) | uint32_t(row0[o.w]) << 16, uint32_t(row1[o.z]) | uint32_t(row1[o.w]) << 16};
#pragma unroll
      for (int tp = 0; tp < kColumns / 16; ++tp) {
        if (2 * tp >= tilesN) break;
        // Matrices: channels 0-7 k 0-7, channels 0-7 k 8-15, channels 8-15 k 0-7, 8-15 k 8-15.
        uint32_t b[4];
        loadMatrices(b, filter + (tp * 16 + lane % 8 + lane / 16 * 8) * filterStride + step * 16 + lane / 8 % 2 * 8);
        mma16816<T>(acc[2 * tp], a, b[0], b[1]);
        if (2 * tp + 1 < tilesN) mma16816<T>(acc[2 * tp + 1], a, b[2], b[3]);
      }
    }
    __syncthreads();  // every warp is done with the window

    // Epilogue: act(sum + bias) rounded once, staged as [pixel][channel], then stored in 16 bytes.
    uint16_t* const staging = region;
#pragma unroll
    for (int tn = 0; tn < kColumns / 8; ++tn) {
      const int column = tn * 8 + 2 * t;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float v0 = fusedActivation(acc[tn][2 * h] + bias[column], p.activation, p.alpha, p.beta);
        const float v1 = fusedActivation(acc[tn][2 * h + 1] + bias[column + 1], p.activation, p.alpha, p.beta);
        *reinterpret_cast<uint32_t*>(staging + (warp * 16 + g + 8 * h) * kStagingStride + column) =
            uint32_t(bitsOf<T>(v0)) | uint32_t(bitsOf<T>(v1)) << 16;
      }
    }
    __syncthreads();
    if (p.yChannelsLast) {  // the segment's pixels are contiguous: whole 16-byte vectors side by side
      const int vectors = columns / 8;
      uint16_t* const y = p.y + (size_t(outRow) * size_t(p.outW) + size_t(ow0)) * size_t(p.outChannels) + n0;
      for (int i = tid; i < width * vectors; i += threads) {
        const int j = i / vectors, v = i - j * vectors;
        *reinterpret_cast<uint4*>(y + size_t(j) * size_t(p.outChannels) + v * 8) =
            *reinterpret_cast<const uint4*>(staging + j * kStagingStride + v * 8);
      }
    } else {  // a channel's pixels are contiguous
      const size_t plane = size_t(p.outH) * size_t(p.outW);
      uint16_t* const y = p.y + (size_t(n) * size_t(p.outChannels) + n0) * plane + size_t(oh) * p.outW + ow0;
      for (int i = tid; i < width * columns; i += threads) {
        const int c = i / width, j = i - c * width;
        y[size_t(c) * plane + j] = staging[j * kStagingStride + c];
      }
    }
  }
#endif
}

// Blocks resident on the whole device at once: the grid (they loop over the segments), so that no
// second wave of blocks starts late and finishes alone.
template <class Kernel>
int residentBlocks(Kernel kernel, int threads, int64_t sharedBytes) {
  static int smCounts[64] = {};
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= 64) device = 0;
  if (smCounts[device] == 0) {
    cudaDeviceProp prop;
    smCounts[device] =
        cudaGetDeviceProperties(&prop, device) == cudaSuccess ? std::max(1, prop.multiProcessorCount) : 1;
  }
  int perSm = 1;
#if !defined(KILN_CUDA_EMULATION)
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, kernel, threads, size_t(sharedBytes)) != cudaSuccess)
    perSm = 1;
#else
  (void)kernel, (void)threads, (void)sharedBytes;
#endif
  return smCounts[device] * std::max(1, perSm);
}

struct Geometry {
  int64_t segments, segmentWidth, warps, windowCols, windowElements, zeroTail, paddedReduction;
};

Geometry geometryOf(const SmallChannelConvProblem& p) {
  Geometry g;
  g.segments = (p.outW + kMaxSegment - 1) / kMaxSegment;
  g.segmentWidth = (p.outW + g.segments - 1) / std::max<int64_t>(1, g.segments);
  g.warps = (g.segmentWidth + 15) / 16;
  g.windowCols = (g.segmentWidth - 1) * p.strideW + (p.kernelW - 1) * p.dilationW + 1;
  g.windowElements = p.channels * p.kernelH * g.windowCols;
  g.zeroTail = (g.segmentWidth - 1) * p.strideW + 1;
  g.paddedReduction = (p.kernelH * p.kernelW * p.channels + 15) / 16 * 16;
  return g;
}

bool aligned(const void* p, uintptr_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

}  // namespace

const char* smallChannelConvRefusal(const SmallChannelConvProblem& p) {
  if (p.type != ElementType::kFloat16 && p.type != ElementType::kBFloat16) return "its type is not float16 or bfloat16";
  if (p.channels < 1 || p.channels > kSmallConvMaxChannels) return "its input has more than 8 channels (or none)";
  if (p.outChannels < 8 || p.outChannels % 8 != 0) return "its output channels are not a positive multiple of 8";
  if (p.batch < 0 || p.inH < 1 || p.inW < 1 || p.outH < 0 || p.outW < 0) return "a dim is not positive";
  if (p.kernelH < 1 || p.kernelW < 1 || p.strideH < 1 || p.strideW < 1 || p.dilationH < 1 || p.dilationW < 1 ||
      p.padTop < 0 || p.padLeft < 0)
    return "its window is not positive";
  if (p.kernelH * p.kernelW * p.channels > kSmallConvMaxReduction) return "its window has more than 512 taps";
  if (p.batch * p.channels * p.inH * p.inW >= kIndexLimit) return "its input has 2^31 elements or more";
  if (p.batch * p.outH * p.outW * p.outChannels >= kIndexLimit) return "its output has 2^31 elements or more";
  if (p.outChannels * p.kernelH * p.kernelW * p.channels >= kIndexLimit) return "its filter has 2^31 elements or more";
  if (p.outH * p.strideH + p.kernelH * p.dilationH + p.inH >= (int64_t(1) << 29) ||
      p.outW * p.strideW + p.kernelW * p.dilationW + p.inW >= (int64_t(1) << 29))
    return "its window reaches past 2^29";
  if (p.outW > 0) {
    const Geometry g = geometryOf(p);
    if (sharedLayout(g.paddedReduction, g.windowElements + g.zeroTail, g.warps).total() > kMaxSharedBytes)
      return "its input window does not fit in shared memory";
  }
  return nullptr;
}

cudaError_t smallChannelConv(const SmallChannelConvProblem& p, const void* x, const float* filter, const void* bias,
                             void* y, cudaStream_t stream) {
  if (smallChannelConvRefusal(p)) return cudaErrorInvalidValue;
  if (!x || !filter || !y || !aligned(y, 16) || !aligned(x, 2) || (bias && !aligned(bias, 2)))
    return cudaErrorInvalidValue;
  if (p.batch * p.outH * p.outW == 0) return cudaSuccess;
  const Geometry g = geometryOf(p);
  Args a{};
  a.x = static_cast<const uint16_t*>(x), a.w = filter, a.bias = static_cast<const uint16_t*>(bias);
  a.y = static_cast<uint16_t*>(y);
  a.channels = int32_t(p.channels), a.inH = int32_t(p.inH), a.inW = int32_t(p.inW);
  a.outH = int32_t(p.outH), a.outW = int32_t(p.outW), a.outChannels = int32_t(p.outChannels);
  a.kernelH = int32_t(p.kernelH), a.kernelW = int32_t(p.kernelW), a.strideH = int32_t(p.strideH);
  a.strideW = int32_t(p.strideW), a.dilationH = int32_t(p.dilationH), a.dilationW = int32_t(p.dilationW);
  a.padTop = int32_t(p.padTop), a.padLeft = int32_t(p.padLeft);
  a.reduction = int32_t(p.kernelH * p.kernelW * p.channels), a.paddedReduction = int32_t(g.paddedReduction);
  a.segments = int32_t(g.segments), a.segmentWidth = int32_t(g.segmentWidth);
  a.windowCols = int32_t(g.windowCols), a.windowElements = int32_t(g.windowElements), a.zeroTail = int32_t(g.zeroTail);
  a.work = int32_t(p.batch * p.outH * g.segments);
  a.xChannelsLast = p.xChannelsLast, a.yChannelsLast = p.yChannelsLast;
  a.activation = p.activation, a.alpha = p.alpha, a.beta = p.beta;
  const int threads = int(32 * g.warps);
  const int64_t sharedBytes = sharedLayout(g.paddedReduction, g.windowElements + g.zeroTail, g.warps).total();
  auto kernel =
      p.type == ElementType::kFloat16 ? smallChannelConvKernel<__half> : smallChannelConvKernel<__nv_bfloat16>;
#if !defined(KILN_CUDA_EMULATION)
  // Above 48 KiB a block's dynamic shared memory has to be asked for (per device: every launch).
  if (sharedBytes > 48 * 1024)
    if (const cudaError_t status =
            cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(sharedBytes));
        status != cudaSuccess)
      return status;
#endif
  const int64_t columnBlocks = (p.outChannels + kColumns - 1) / kColumns;
  // The resident blocks shared among the column blocks (layers of more than 64 output channels).
  const int64_t blocks =
      std::min<int64_t>(a.work, std::max<int64_t>(1, residentBlocks(kernel, threads, sharedBytes) / columnBlocks));
  kernel<<<dim3(unsigned(blocks), unsigned(columnBlocks)), threads, size_t(sharedBytes), stream>>>(a);
  return launchStatus();
}

}  // namespace kiln::kernels::cuda
