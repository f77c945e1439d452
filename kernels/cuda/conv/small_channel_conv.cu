#include "small_channel_conv.h"

#include <kernels/cuda/common/device_types.cuh>
#include <kernels/cuda/common/half_bits.cuh>
#include <kernels/cuda/common/launch.cuh>
#include <kernels/cuda/common/resident_blocks.cuh>
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
  int32_t reduction, paddedReduction;  // R·S·C; rounded up to 16
  int32_t segments, segmentWidth;      // a row's segments; pixels of all but maybe the last
  // The window buffer: windowRows rows (C·R of one channel's pixels for NCHW input, R of C-channel
  // pixels for NHWC) of rowStride halves, element e of a row being the input row's element
  // segment start - lead + e; the staged tile over it; zeros at zeroAt (what the padded k read).
  int32_t windowRows, rowStride, rowElements, vector, bufferHalves, zeroAt, zeroTail;
  int32_t items;  // N·P·segments, or with a pool N·strips
  // The fused pool (poolKernelH 0: none) and its strips of stripRows pooled rows.
  int32_t poolKernelH, poolKernelW, poolStrideH, poolStrideW, poolPadTop, poolPadLeft, pooledH, pooledW;
  int32_t stripRows, strips, poolSlots;
  bool xChannelsLast, yChannelsLast;
  Activation activation;
  float alpha, beta;
};

struct SharedLayout {
  int64_t filter, offsets, bias, buffers, pool;  // bytes of each part
  int64_t total() const { return filter + offsets + bias + buffers + pool; }
};

SharedLayout sharedLayout(int64_t paddedReduction, int64_t bufferHalves, int64_t poolHalves) {
  return {kColumns * (paddedReduction + 8) * 2, paddedReduction * 4, kColumns * 4, 2 * bufferHalves * 2,
          poolHalves * 2};
}

__device__ __forceinline__ int smaller(int a, int b) { return a < b ? a : b; }
__device__ __forceinline__ int larger(int a, int b) { return a > b ? a : b; }
// Floor division for a negative numerator too (b > 0).
__device__ __forceinline__ int floorDiv(int a, int b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// `vector` halves (2, 4 or 8: 4, 8 or 16 bytes) global -> shared without waiting, zeros where
// !valid (nothing read: the source only has to be an address).
__device__ __forceinline__ void copyVector(uint16_t* shared, const uint16_t* global, bool valid, int vector) {
#if defined(KILN_CUDA_EMULATION)
  if (valid)
    std::memcpy(shared, global, size_t(vector) * 2);
  else
    std::memset(shared, 0, size_t(vector) * 2);
#else
  const uint32_t to = sharedAddress(shared), bytes = valid ? uint32_t(vector) * 2 : 0;
  if (vector == 8)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(to), "l"(global), "r"(bytes) : "memory");
  else if (vector == 4)
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(to), "l"(global), "r"(bytes) : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(to), "l"(global), "r"(bytes) : "memory");
#endif
}

// One output row segment a block computes: image n, output row oh, pixels ow0 .. ow0 + width - 1.
struct Task {
  int item, n, oh, ohEnd, ow0, width;
};

// The first row of `item` (a segment of one row, or with a pool the rows a strip of pooled rows reads).
__device__ __forceinline__ Task taskOf(const Args& p, int item) {
  Task k;
  k.item = item;
  if (p.poolKernelH == 0) {
    const int part = item % p.segments, outRow = item / p.segments;
    k.n = outRow / p.outH, k.oh = k.ohEnd = outRow - k.n * p.outH;
    k.ow0 = part * p.segmentWidth, k.width = smaller(p.segmentWidth, p.outW - k.ow0);
    return k;
  }
  k.n = item / p.strips;
  const int ph0 = (item - k.n * p.strips) * p.stripRows, ph1 = smaller(ph0 + p.stripRows, p.pooledH) - 1;
  k.oh = larger(0, ph0 * p.poolStrideH - p.poolPadTop);
  k.ohEnd = smaller(p.outH - 1, ph1 * p.poolStrideH - p.poolPadTop + p.poolKernelH - 1);
  k.ow0 = 0, k.width = p.outW;
  return k;
}

__device__ __forceinline__ Task nextTask(const Args& p, const Task& k) {
  if (k.oh < k.ohEnd) {
    Task next = k;
    ++next.oh;
    return next;
  }
  return taskOf(p, k.item + int(gridDim.x));
}

// The window's first element in its input row (segment start · stride - pad, times C for NHWC)
// and how far below it the aligned copies start.
__device__ __forceinline__ int windowStart(const Args& p, const Task& k) {
  return (k.ow0 * p.strideW - p.padLeft) * (p.xChannelsLast ? p.channels : 1);
}
__device__ __forceinline__ int leadOf(const Args& p, int start) { return ((start % p.vector) + p.vector) % p.vector; }

// Starts copying the task's window into `window` (or copies it, 2 bytes at a time, where the rows
// allow no wider copies). A warp a window row, a lane a vector: no division an element.
__device__ __forceinline__ void loadWindow(const Args& p, const Task& k, uint16_t* window, int warp, int warps,
                                           int lane) {
  const int start = windowStart(p, k), lead = leadOf(p, start), first = start - lead;
  const int rowLength = p.xChannelsLast ? p.inW * p.channels : p.inW;
  const int ihBase = k.oh * p.strideH - p.padTop;
  for (int row = warp; row < p.windowRows; row += warps) {
    const int c = p.xChannelsLast ? 0 : row / p.kernelH, r = p.xChannelsLast ? row : row - c * p.kernelH;
    const int ih = ihBase + r * p.dilationH;
    const bool rowInside = unsigned(ih) < unsigned(p.inH);
    const uint16_t* const source =
        p.x + size_t((k.n * (p.xChannelsLast ? 1 : p.channels) + c) * p.inH + (rowInside ? ih : 0)) * rowLength;
    uint16_t* const target = window + row * p.rowStride;
    if (p.vector == 1) {
      for (int e = lane; e < p.rowElements; e += 32) {
        const int at = first + e;
        target[e] = rowInside && unsigned(at) < unsigned(rowLength) ? source[at] : uint16_t(0);
      }
    } else {
      for (int e = lane * p.vector; e < p.rowElements + lead; e += 32 * p.vector) {
        const int at = first + e;  // a multiple of the vector, as the row's length is: all inside or none
        const bool inside = rowInside && unsigned(at) < unsigned(rowLength);
        copyVector(target + e, inside ? source + at : p.x, inside, p.vector);
      }
    }
  }
}

// Block (b, column block): the items b, b + gridDim.x, ... for output channels 64 · column block on.
// Without a pool an item is one row segment (s: output row s / segments of the batch's N·P rows,
// its part s % segments); with one, the output rows of a strip of pooled rows. 4 blocks of 7 warps
// an SM (sm_90, no spills).
template <class T, int kActivation, bool kPool>
__global__ void __launch_bounds__(32 * kMaxSegment / 16, 4) smallChannelConvKernel(const __grid_constant__ Args p) {
#if (defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800) || defined(KILN_CUDA_EMULATION)
  extern __shared__ uint4 shared[];
  const int kp = p.paddedReduction, filterStride = kp + 8;
  uint16_t* const filter = reinterpret_cast<uint16_t*>(shared);
  int* const offsets = reinterpret_cast<int*>(filter + kColumns * filterStride);
  float* const bias = reinterpret_cast<float*>(offsets + kp);
  uint16_t* const buffers = reinterpret_cast<uint16_t*>(bias + kColumns);  // 2 windows, each the staged tile after
  uint16_t* const pooled = buffers + 2 * p.bufferHalves;  // poolSlots pooled rows [pooledW][64] in flight
  const int tid = int(threadIdx.x), threads = int(blockDim.x), lane = tid % 32, warp = tid / 32, warps = threads / 32;
  const int g = lane / 4, t = lane % 4;
  const int n0 = int(blockIdx.y) * kColumns, columns = smaller(kColumns, p.outChannels - n0);
  if (int(blockIdx.x) >= p.items) return;

  Task task = taskOf(p, int(blockIdx.x));
  loadWindow(p, task, buffers, warp, warps, lane);
  commitCopies();
  // The block's filter rows [64][kp] in T, zero past K and past R·S·C (the padded k then adds 0).
  for (int i = tid; i < kColumns * kp; i += threads) {
    const int row = i / kp, k = i - row * kp;
    const float v = row < columns && k < p.reduction ? p.w[(n0 + row) * p.reduction + k] : 0.0f;
    filter[row * filterStride + k] = bitsOf<T>(v);
  }
  // k = (c·R + r)·S + s reads window element (c·R + r)·rowStride + s·dilationW (NHWC: r·rowStride +
  // s·dilationW·C + c) from the pixel's; a padded k reads the zeros. Stored so that lane t's k 2t,
  // 2t+1, 2t+8, 2t+9 of a k-step are one 16-byte read.
  for (int i = tid; i < kp; i += threads) {
    const int step = i / 16, at = i % 16, j = at % 4;
    const int k = step * 16 + 2 * (at / 4) + (j & 1) + (j >= 2 ? 8 : 0);
    const int c = k / (p.kernelH * p.kernelW), r = k / p.kernelW % p.kernelH, s = k % p.kernelW;
    offsets[i] = k >= p.reduction  ? p.zeroAt
                 : p.xChannelsLast ? r * p.rowStride + s * p.dilationW * p.channels + c
                                   : (c * p.kernelH + r) * p.rowStride + s * p.dilationW;
  }
  for (int i = tid; i < kColumns; i += threads) bias[i] = p.bias && i < columns ? valueOf<T>(p.bias[n0 + i]) : 0.0f;
  for (int e = tid; e < p.zeroTail; e += threads) buffers[p.zeroAt + e] = buffers[p.bufferHalves + p.zeroAt + e] = 0;
  const int tilesN = columns / 8;  // K is a multiple of 8
  const int pixelStep = p.strideW * (p.xChannelsLast ? p.channels : 1);

  for (int round = 0; task.item < p.items; ++round) {
    uint16_t* const window = buffers + (round & 1) * p.bufferHalves;
    const Task next = nextTask(p, task);
    __syncthreads();  // the setup, or the tile staged in the other buffer two rounds ago, has been read
    if (next.item < p.items) loadWindow(p, next, buffers + ((round + 1) & 1) * p.bufferHalves, warp, warps, lane);
    commitCopies();
    waitCopies<1>();  // this thread's copies of the task's window have landed
    __syncthreads();  // and everyone's

    // The warp's 16 pixels (past the segment's end: its last, stored nowhere) x the block's channels.
    float acc[kColumns / 8][4];
#pragma unroll
    for (int tn = 0; tn < kColumns / 8; ++tn)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[tn][e] = 0.0f;
    const int lead = leadOf(p, windowStart(p, task));
    const uint16_t* const row0 = window + lead + smaller(warp * 16 + g, task.width - 1) * pixelStep;
    const uint16_t* const row1 = window + lead + smaller(warp * 16 + g + 8, task.width - 1) * pixelStep;
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

    // Epilogue: act(sum + bias) rounded once, staged over the window as [pixel][channel].
    uint16_t* const staging = window;
#pragma unroll
    for (int tn = 0; tn < kColumns / 8; ++tn) {
      const int column = tn * 8 + 2 * t;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float v0 = fusedActivationOf<kActivation>(acc[tn][2 * h] + bias[column], p.activation, p.alpha, p.beta);
        const float v1 =
            fusedActivationOf<kActivation>(acc[tn][2 * h + 1] + bias[column + 1], p.activation, p.alpha, p.beta);
        *reinterpret_cast<uint32_t*>(staging + (warp * 16 + g + 8 * h) * kStagingStride + column) =
            uint32_t(bitsOf<T>(v0)) | uint32_t(bitsOf<T>(v1)) << 16;
      }
    }
    __syncthreads();
    const int vectors = columns / 8;
    if constexpr (kPool) {
      // Each pooled pixel's 8-channel vectors: the max over the staged row's columns in its window,
      // folded into the pooled rows this row belongs to; a pooled row goes out after its last row.
      // A thread keeps the same (pixel, vector) every row, so the pooled rows need no barrier.
      const int phFirst = larger(0, floorDiv(task.oh + p.poolPadTop - p.poolKernelH, p.poolStrideH) + 1);
      const int phLast = smaller(p.pooledH - 1, floorDiv(task.oh + p.poolPadTop, p.poolStrideH));
      const int stripFirst = task.item % p.strips * p.stripRows;
      const int stripLast = smaller(stripFirst + p.stripRows, p.pooledH) - 1;
      for (int i = tid; i < p.pooledW * vectors; i += threads) {
        const int pw = i / vectors, v = i - pw * vectors;
        const int c0 = pw * p.poolStrideW - p.poolPadLeft;
        float m[8];
        for (int e = 0; e < 8; ++e) m[e] = -INFINITY;
        for (int col = larger(c0, 0); col < smaller(c0 + p.poolKernelW, p.outW); ++col) {
          const uint4 vec = *reinterpret_cast<const uint4*>(staging + col * kStagingStride + v * 8);
          const uint16_t* h = reinterpret_cast<const uint16_t*>(&vec);
          for (int e = 0; e < 8; ++e) m[e] = fmaxf(m[e], valueOf<T>(h[e]));
        }
        for (int ph = larger(phFirst, stripFirst); ph <= smaller(phLast, stripLast); ++ph) {
          const int top = ph * p.poolStrideH - p.poolPadTop;
          uint16_t* const slot = pooled + ((ph % p.poolSlots) * p.pooledW + pw) * kColumns + v * 8;
          uint4 out;
          uint16_t* const o = reinterpret_cast<uint16_t*>(&out);
          const uint4 before = *reinterpret_cast<const uint4*>(slot);
          const uint16_t* const b = reinterpret_cast<const uint16_t*>(&before);
          const bool firstRow = task.oh == larger(0, top);
          for (int e = 0; e < 8; ++e) o[e] = bitsOf<T>(firstRow ? m[e] : fmaxf(m[e], valueOf<T>(b[e])));
          if (task.oh < smaller(p.outH - 1, top + p.poolKernelH - 1)) {
            *reinterpret_cast<uint4*>(slot) = out;
          } else if (p.yChannelsLast) {
            *reinterpret_cast<uint4*>(p.y + ((size_t(task.n) * p.pooledH + ph) * p.pooledW + pw) * p.outChannels + n0 +
                                      v * 8) = out;
          } else {
            const size_t plane = size_t(p.pooledH) * size_t(p.pooledW);
            uint16_t* const y =
                p.y + (size_t(task.n) * p.outChannels + n0 + v * 8) * plane + size_t(ph) * p.pooledW + pw;
            for (int e = 0; e < 8; ++e) y[size_t(e) * plane] = o[e];
          }
        }
      }
    } else if (p.yChannelsLast) {  // the segment's pixels are contiguous: whole 16-byte vectors side by side
      uint16_t* const y =
          p.y + ((size_t(task.n) * p.outH + task.oh) * size_t(p.outW) + size_t(task.ow0)) * size_t(p.outChannels) + n0;
      for (int i = tid; i < task.width * vectors; i += threads) {
        const int j = i / vectors, v = i - j * vectors;
        *reinterpret_cast<uint4*>(y + size_t(j) * size_t(p.outChannels) + v * 8) =
            *reinterpret_cast<const uint4*>(staging + j * kStagingStride + v * 8);
      }
    } else {  // a channel's pixels are contiguous
      const size_t plane = size_t(p.outH) * size_t(p.outW);
      uint16_t* const y =
          p.y + (size_t(task.n) * size_t(p.outChannels) + n0) * plane + size_t(task.oh) * p.outW + task.ow0;
      for (int i = tid; i < task.width * columns; i += threads) {
        const int c = i / task.width, j = i - c * task.width;
        y[size_t(c) * plane + j] = staging[j * kStagingStride + c];
      }
    }
    task = next;
  }
#endif
}

struct Geometry {
  int64_t segments, segmentWidth, warps, windowRows, rowElements, rowStride, zeroAt, zeroTail, bufferHalves;
  int64_t paddedReduction, poolSlots, poolHalves;
};

int64_t roundUp(int64_t v, int64_t to) { return (v + to - 1) / to * to; }

// The sizes the kernel's shared memory is laid out by (rows wide enough for 16-byte copies, so the
// layout does not depend on the copies' width).
Geometry geometryOf(const SmallChannelConvProblem& p) {
  Geometry g;
  g.segments = (p.outW + kMaxSegment - 1) / kMaxSegment;
  g.segmentWidth = (p.outW + g.segments - 1) / std::max<int64_t>(1, g.segments);
  g.warps = (g.segmentWidth + 15) / 16;
  const int64_t pixelChannels = p.xChannelsLast ? p.channels : 1;
  g.windowRows = p.xChannelsLast ? p.kernelH : p.channels * p.kernelH;
  g.rowElements = ((g.segmentWidth - 1) * p.strideW + (p.kernelW - 1) * p.dilationW + 1) * pixelChannels;
  g.rowStride = roundUp(g.rowElements + 7, 8);
  g.zeroAt = roundUp(std::max(g.windowRows * g.rowStride, g.warps * 16 * kStagingStride), 8);
  g.zeroTail = roundUp((g.segmentWidth - 1) * p.strideW * pixelChannels + 8, 8);
  g.bufferHalves = g.zeroAt + g.zeroTail;
  g.paddedReduction = (p.kernelH * p.kernelW * p.channels + 15) / 16 * 16;
  g.poolSlots = p.pool ? (p.pool->kernelH + p.pool->strideH - 1) / p.pool->strideH : 0;
  g.poolHalves = p.pool ? g.poolSlots * p.pool->outW * kColumns : 0;
  return g;
}

int64_t sharedBytesOf(const Geometry& g) {
  return sharedLayout(g.paddedReduction, g.bufferHalves, g.poolHalves).total();
}

bool aligned(const void* p, uintptr_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

// The widest copy (halves) the window rows allow: rows of a multiple of it, from an aligned X.
int vectorOf(const SmallChannelConvProblem& p, const void* x) {
  const int64_t rowLength = p.xChannelsLast ? p.inW * p.channels : p.inW;
  for (int v : {8, 4, 2})
    if (rowLength % v == 0 && aligned(x, uintptr_t(v) * 2)) return v;
  return 1;
}

// Why the fused pool does not fit the convolution's output, or null.
const char* poolRefusal(const SmallChannelConvProblem& p) {
  const FusedMaxPool& q = *p.pool;
  if (q.kernelH < 1 || q.kernelW < 1 || q.strideH < 1 || q.strideW < 1 || q.padTop < 0 || q.padLeft < 0 ||
      q.padTop >= q.kernelH || q.padLeft >= q.kernelW || q.outH < 1 || q.outW < 1)
    return "its pool window is not positive (or a pad is not below the window)";
  if (p.outW > kMaxSegment) return "its output rows are wider than the 112 pixels a fused pool takes";
  // Every pooled window starts inside the output (as a pool's output size makes it).
  if ((q.outH - 1) * q.strideH - q.padTop >= p.outH || (q.outW - 1) * q.strideW - q.padLeft >= p.outW)
    return "its pooled size reaches past the convolution's output";
  if (p.batch * q.outH * q.outW * p.outChannels >= kIndexLimit) return "its pooled output has 2^31 elements or more";
  return nullptr;
}

template <class T, bool kPool>
auto kernelFor(Activation a) {
  if (a == Activation::kNone) return smallChannelConvKernel<T, int(Activation::kNone), kPool>;
  if (a == Activation::kRelu) return smallChannelConvKernel<T, int(Activation::kRelu), kPool>;
  // EfficientNet's stem: through the runtime switch it took 0.37 ms on the H200 where ReLU's took 0.14.
  if (a == Activation::kSiLU) return smallChannelConvKernel<T, int(Activation::kSiLU), kPool>;
  return smallChannelConvKernel<T, kRuntimeActivation, kPool>;
}

// The pooled rows a strip: the fewest rounds of the resident blocks times the rows a strip computes
// (a strip's last window overlaps the next strip's first: those rows are computed twice).
int64_t stripRowsOf(const SmallChannelConvProblem& p, int64_t blocks) {
  const FusedMaxPool& q = *p.pool;
  int64_t best = q.outH, bestCost = -1;
  for (int64_t rows = q.outH; rows >= 1; --rows) {
    const int64_t items = p.batch * ((q.outH + rows - 1) / rows);
    const int64_t computed = std::min(p.outH, (rows - 1) * q.strideH + q.kernelH);
    const int64_t cost = (items + blocks - 1) / blocks * computed;
    if (bestCost < 0 || cost < bestCost) best = rows, bestCost = cost;
  }
  return best;
}

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
      (p.outW * p.strideW + p.kernelW * p.dilationW + p.inW) * p.channels >= (int64_t(1) << 29))
    return "its window reaches past 2^29";
  if (p.pool && (p.outH < 1 || p.outW < 1)) return "its output to pool is empty";
  if (p.pool)
    if (const char* why = poolRefusal(p)) return why;
  if (p.outW > 0 && sharedBytesOf(geometryOf(p)) > kMaxSharedBytes)
    return "its input window does not fit in shared memory";
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
  a.windowRows = int32_t(g.windowRows), a.rowStride = int32_t(g.rowStride), a.rowElements = int32_t(g.rowElements);
  a.vector = vectorOf(p, x), a.bufferHalves = int32_t(g.bufferHalves), a.zeroAt = int32_t(g.zeroAt);
  a.zeroTail = int32_t(g.zeroTail);
  a.xChannelsLast = p.xChannelsLast, a.yChannelsLast = p.yChannelsLast;
  a.activation = p.activation, a.alpha = p.alpha, a.beta = p.beta;
  const int threads = int(32 * g.warps);
  const int64_t sharedBytes = sharedBytesOf(g);
  const bool half = p.type == ElementType::kFloat16;
  auto kernel = p.pool
                    ? (half ? kernelFor<__half, true>(p.activation) : kernelFor<__nv_bfloat16, true>(p.activation))
                    : (half ? kernelFor<__half, false>(p.activation) : kernelFor<__nv_bfloat16, false>(p.activation));
  if (const cudaError_t status = allowSharedBytes(kernel, sharedBytes); status != cudaSuccess) return status;
  const int64_t columnBlocks = (p.outChannels + kColumns - 1) / kColumns;
  // The resident blocks shared among the column blocks (layers of more than 64 output channels).
  const int64_t resident = std::max<int64_t>(1, residentBlocks(kernel, threads, sharedBytes) / columnBlocks);
  if (p.pool) {
    const FusedMaxPool& q = *p.pool;
    a.poolKernelH = int32_t(q.kernelH), a.poolKernelW = int32_t(q.kernelW), a.poolStrideH = int32_t(q.strideH);
    a.poolStrideW = int32_t(q.strideW), a.poolPadTop = int32_t(q.padTop), a.poolPadLeft = int32_t(q.padLeft);
    a.pooledH = int32_t(q.outH), a.pooledW = int32_t(q.outW), a.poolSlots = int32_t(g.poolSlots);
    a.stripRows = int32_t(stripRowsOf(p, resident));
    a.strips = int32_t((q.outH + a.stripRows - 1) / a.stripRows);
    a.items = int32_t(p.batch * a.strips);
  } else {
    a.items = int32_t(p.batch * p.outH * g.segments);
  }
  const int64_t blocks = std::min<int64_t>(a.items, resident);
  kernel<<<dim3(unsigned(blocks), unsigned(columnBlocks)), threads, size_t(sharedBytes), stream>>>(a);
  return launchStatus();
}

}  // namespace kiln::kernels::cuda
