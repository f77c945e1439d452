// Row normalisation (LayerNormalization, InstanceNormalization, GroupNormalization): a group of
// lanes per row (rows of up to 256 elements share a block, longer rows take one each), two-pass
// statistics in the compute type, the CPU's RowAffine for the scale and bias, and an optional
// residual added (and written out) first. LayerNormalization rows of float types up to 2048
// elements take a faster path: a warp per row held in registers (one read of x, 16-byte accesses,
// shuffles instead of shared memory), the same two-pass arithmetic.
#include "norm.h"

#include "kernels/cuda/common/device_types.cuh"
#include "kernels/cuda/common/launch.cuh"
#include "kernels/cuda/elementwise/fast_divider.h"
#include "kernels/cuda/elementwise/math_functions.h"
#include "kernels/cuda/reduce/block_reduce.cuh"
#include "kernels/cuda/reduce/reduce_plan.h"

namespace kiln::kernels::cuda {
namespace {

constexpr int kThreads = 256;

struct RowNormShape {
  int64_t rows, rowSize;
  const float* scale;
  const float* bias;
  int64_t rowsPerCycle, channelsPerRow, elementsPerChannel;
  FastDivider channelOf;  // j / elementsPerChannel, for rows below 2^31 elements
  bool narrow;
  float epsilon;
};

struct SumFn {
  template <class A>
  __device__ A operator()(A a, A b) const { return a + b; }
};

template <class T>
__global__ void __launch_bounds__(kThreads) normalizeRowsKernel(const T* x, const T* residual, T* sumOut, T* y,
                                                                 float* rowMean, float* rowInvStdDev, RowNormShape s) {
  using A = ComputeType<T>;
  __shared__ A shared[kThreads];
  const int lanes = blockDim.x, lane = threadIdx.x, groupBase = threadIdx.y * blockDim.x;
  const int64_t rowsPerRound = int64_t(gridDim.x) * blockDim.y;
  for (int64_t first = int64_t(blockIdx.x) * blockDim.y; first < s.rows; first += rowsPerRound) {
    const int64_t r = first + threadIdx.y;
    const bool active = r < s.rows;
    const int64_t n = active ? s.rowSize : 0;
    const T* xr = x + r * s.rowSize;
    const T* rr = residual ? residual + r * s.rowSize : nullptr;
    T* sr = sumOut ? sumOut + r * s.rowSize : nullptr;
    // The value normalised: x, or x + residual rounded to T (read back from sumOut after pass 1).
    auto value = [&](int64_t j, bool firstPass) -> A {
      if (!rr) return toCompute(xr[j]);
      if (sr && !firstPass) return toCompute(sr[j]);
      return toCompute(fromCompute<T>(A(toCompute(xr[j])) + A(toCompute(rr[j]))));
    };
    A sum = A(0);
    for (int64_t j = lane; j < n; j += lanes) {
      const A v = value(j, true);
      if (sr) sr[j] = fromCompute<T>(v);
      sum += v;
    }
    sum = groupFold(sum, shared, groupBase, lane, lanes, 1, SumFn{});  // also orders the sumOut writes
    const A mean = s.rowSize > 0 ? sum / A(s.rowSize) : A(0);
    A squares = A(0);
    for (int64_t j = lane; j < n; j += lanes) {
      const A d = value(j, false) - mean;
      squares += d * d;
    }
    squares = groupFold(squares, shared, groupBase, lane, lanes, 1, SumFn{});
    const A variance = s.rowSize > 0 ? squares / A(s.rowSize) : A(0);
    const A invStd = A(1) / math::sqrtOf(variance + A(s.epsilon));
    if (!active) continue;
    if (lane == 0 && rowMean) rowMean[r] = float(mean);
    if (lane == 0 && rowInvStdDev) rowInvStdDev[r] = float(invStd);
    const int64_t base = (r % s.rowsPerCycle) * s.channelsPerRow;
    T* yr = y + r * s.rowSize;
    if (s.elementsPerChannel == 1) {  // a scale per element (LayerNormalization)
      for (int64_t j = lane; j < n; j += lanes) {
        const A v = (value(j, false) - mean) * invStd * A(s.scale[base + j]);
        yr[j] = fromCompute<T>(s.bias ? v + A(s.bias[base + j]) : v);
      }
    } else {
      for (int64_t j = lane; j < n; j += lanes) {
        const int64_t channel = base + (s.narrow ? int64_t(s.channelOf.divide(uint32_t(j))) : j / s.elementsPerChannel);
        const A a = invStd * A(s.scale[channel]);
        const A b = (s.bias ? A(s.bias[channel]) : A(0)) - mean * a;
        yr[j] = fromCompute<T>(value(j, false) * a + b);
      }
    }
  }
}


// The register path: a warp per row, kVectors 16-byte vectors per lane. Rows must be whole
// vectors long and every pointer 16-byte aligned (launchNormalizeRows checks).
constexpr int kWarpRowMaxVectors = 8;
constexpr int kWarpRowThreads = 128;

template <class T>
constexpr int kLanesPerVector = 16 / int(sizeof(T));

template <class T, int kVectors>
__global__ void __launch_bounds__(kWarpRowThreads) normalizeRowsInRegistersKernel(
    const T* x, const T* residual, T* sumOut, T* y,  // sumOut and y may alias x or residual
    const float* __restrict__ scale, const float* __restrict__ bias, float* rowMean, float* rowInvStdDev,
    int64_t rows, int rowVectors, float epsilon) {
  constexpr int kWidth = kLanesPerVector<T>;
  const int64_t row = int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = int(threadIdx.x % 32);
  if (row >= rows) return;  // whole warps leave together: the shuffles below see all 32 lanes
  const int64_t rowStart = row * int64_t(rowVectors) * kWidth;
  const uint4* xv = reinterpret_cast<const uint4*>(x + rowStart);
  float v[kVectors][kWidth];
  // Statistics in double, as the CPU kernel takes them: the loads, not the arithmetic, bound this
  // kernel, and a row's sum in float drifts by its length's rounding errors.
  double sum = 0.0;
#pragma unroll
  for (int i = 0; i < kVectors; ++i) {
    const int at = lane + i * 32;
    if (at >= rowVectors) continue;
    uint4 packed = xv[at];
    const T* e = reinterpret_cast<const T*>(&packed);
    if (residual) {
      uint4 other = reinterpret_cast<const uint4*>(residual + rowStart)[at];
      const T* r = reinterpret_cast<const T*>(&other);
      uint4 rounded;
      T* out = reinterpret_cast<T*>(&rounded);
#pragma unroll
      for (int k = 0; k < kWidth; ++k) {
        out[k] = fromCompute<T>(float(toCompute(e[k])) + float(toCompute(r[k])));  // rounded as Add rounds
        v[i][k] = float(toCompute(out[k]));
      }
      if (sumOut) reinterpret_cast<uint4*>(sumOut + rowStart)[at] = rounded;
    } else {
#pragma unroll
      for (int k = 0; k < kWidth; ++k) v[i][k] = float(toCompute(e[k]));
    }
#pragma unroll
    for (int k = 0; k < kWidth; ++k) sum += double(v[i][k]);
  }
  const double n = double(rowVectors) * kWidth;
  const double mean = warpFold(sum, SumFn{}) / n;
  double squares = 0.0;
#pragma unroll
  for (int i = 0; i < kVectors; ++i) {
    if (lane + i * 32 >= rowVectors) continue;
#pragma unroll
    for (int k = 0; k < kWidth; ++k) {
      const double d = double(v[i][k]) - mean;
      squares += d * d;
    }
  }
  const double invStd = 1.0 / sqrt(warpFold(squares, SumFn{}) / n + double(epsilon));
  const float meanF = float(mean), invStdF = float(invStd);
  if (lane == 0 && rowMean) rowMean[row] = meanF;
  if (lane == 0 && rowInvStdDev) rowInvStdDev[row] = invStdF;
  uint4* yv = reinterpret_cast<uint4*>(y + rowStart);
#pragma unroll
  for (int i = 0; i < kVectors; ++i) {
    const int at = lane + i * 32;
    if (at >= rowVectors) continue;
    uint4 packed;
    T* out = reinterpret_cast<T*>(&packed);
#pragma unroll
    for (int k = 0; k < kWidth; k += 4) {
      const float4 g = reinterpret_cast<const float4*>(scale)[(at * kWidth + k) / 4];
      const float4 b = bias ? reinterpret_cast<const float4*>(bias)[(at * kWidth + k) / 4] : make_float4(0, 0, 0, 0);
      const float gs[4] = {g.x, g.y, g.z, g.w}, bs[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const float normalised = (v[i][k + u] - meanF) * invStdF * gs[u];  // the CPU kernel's arithmetic
        out[k + u] = fromCompute<T>(bias ? normalised + bs[u] : normalised);
      }
    }
    yv[at] = packed;
  }
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

// Whether the register path takes this normalisation; its launch if so.
template <class T>
bool launchInRegisters(int64_t rows, int64_t rowSize, const T* x, const T* residual, T* sumOut,
                       const kernels::RowAffine& affine, float epsilon, T* y, float* rowMean, float* rowInvStdDev,
                       cudaStream_t stream) {
  constexpr int kWidth = kLanesPerVector<T>;
  if constexpr (sizeof(T) > 4) {
    return false;
  } else {
    const bool layerNorm = affine.rowsPerCycle == 1 && affine.elementsPerChannel == 1 && affine.channelsPerRow == rowSize;
    if (!layerNorm || rowSize == 0 || rowSize % kWidth != 0 || rowSize > int64_t(kWarpRowMaxVectors) * 32 * kWidth)
      return false;
    for (const void* p : {static_cast<const void*>(x), static_cast<const void*>(residual), static_cast<const void*>(sumOut),
                          static_cast<const void*>(y), static_cast<const void*>(affine.scale),
                          static_cast<const void*>(affine.bias)})
      if (!aligned16(p)) return false;
    const int rowVectors = int(rowSize / kWidth);
    const int vectorsPerLane = (rowVectors + 31) / 32;
    // Few rows: a warp a block spreads them over more multiprocessors.
    const int threads = rows >= 4096 ? kWarpRowThreads : 32;
    const int64_t blocks = (rows + threads / 32 - 1) / (threads / 32);
    if (blocks > int64_t(INT32_MAX)) return false;
    auto launch = [&](auto kernel) {
      kernel<<<unsigned(blocks), threads, 0, stream>>>(x, residual, sumOut, y, affine.scale, affine.bias, rowMean,
                                                       rowInvStdDev, rows, rowVectors, epsilon);
    };
    switch (vectorsPerLane) {
      case 1: launch(normalizeRowsInRegistersKernel<T, 1>); break;
      case 2: launch(normalizeRowsInRegistersKernel<T, 2>); break;
      case 3: launch(normalizeRowsInRegistersKernel<T, 3>); break;
      case 4: launch(normalizeRowsInRegistersKernel<T, 4>); break;
      case 5: launch(normalizeRowsInRegistersKernel<T, 5>); break;
      case 6: launch(normalizeRowsInRegistersKernel<T, 6>); break;
      case 7: launch(normalizeRowsInRegistersKernel<T, 7>); break;
      default: launch(normalizeRowsInRegistersKernel<T, 8>); break;
    }
    return true;
  }
}

}  // namespace

cudaError_t launchNormalizeRows(int64_t rows, int64_t rowSize, const void* x, const void* residual, void* sumOut,
                                const kernels::RowAffine& affine, float epsilon, void* y, float* rowMean,
                                float* rowInvStdDev, ElementType type, cudaStream_t stream) {
  if (rows < 0 || rowSize < 0 || affine.rowsPerCycle < 1 || affine.channelsPerRow < 0 ||
      affine.elementsPerChannel < 1 || (rowSize > 0 && affine.scale == nullptr))
    return cudaErrorInvalidValue;
  const bool narrow = rowSize < (int64_t(1) << 31) && affine.elementsPerChannel < (int64_t(1) << 31);
  const RowNormShape shape{rows, rowSize, affine.scale, affine.bias, affine.rowsPerCycle, affine.channelsPerRow,
                           affine.elementsPerChannel,
                           FastDivider(narrow ? uint32_t(affine.elementsPerChannel) : 1u), narrow, epsilon};
  return dispatchFloat(type, [&](auto tag) {
    using T = decltype(tag);
    if (rows == 0) return cudaSuccess;
    if (launchInRegisters<T>(rows, rowSize, static_cast<const T*>(x), static_cast<const T*>(residual),
                             static_cast<T*>(sumOut), affine, epsilon, static_cast<T*>(y), rowMean, rowInvStdDev,
                             stream))
      return launchStatus();
    const int lanes = int(powerOfTwoCeil(rowSize, kThreads));
    const int rowsPerBlock = int(powerOfTwoCeil(rows, kThreads / lanes));
    const unsigned blocks = unsigned(std::min<int64_t>((rows + rowsPerBlock - 1) / rowsPerBlock, 65535 * 8));
    normalizeRowsKernel<<<blocks, dim3(lanes, rowsPerBlock), 0, stream>>>(
        static_cast<const T*>(x), static_cast<const T*>(residual), static_cast<T*>(sumOut), static_cast<T*>(y),
        rowMean, rowInvStdDev, shape);
    return launchStatus();
  });
}

cudaError_t launchLayerNormalization(const void* x, const void* residual, void* sumOut, const float* scale,
                                     const float* bias, int64_t outer, int64_t inner, float epsilon, void* y,
                                     float* mean, float* invStdDev, ElementType type, cudaStream_t stream) {
  return launchNormalizeRows(outer, inner, x, residual, sumOut, {scale, bias, 1, inner, 1}, epsilon, y, mean,
                             invStdDev, type, stream);
}

cudaError_t launchInstanceNormalization(const void* x, const float* scale, const float* bias, int64_t batch,
                                        int64_t channels, int64_t spatial, float epsilon, void* y, ElementType type,
                                        cudaStream_t stream) {
  if (batch < 0 || channels < 0 || spatial < 0) return cudaErrorInvalidValue;
  if (batch * channels == 0) return dispatchFloat(type, [](auto) { return cudaSuccess; });
  return launchNormalizeRows(batch * channels, spatial, x, nullptr, nullptr,
                             {scale, bias, channels, 1, std::max<int64_t>(spatial, 1)}, epsilon, y, nullptr, nullptr,
                             type, stream);
}

cudaError_t launchGroupNormalization(const void* x, const float* scale, const float* bias, int64_t batch,
                                     int64_t channels, int64_t spatial, int64_t groups, float epsilon, void* y,
                                     ElementType type, cudaStream_t stream) {
  if (batch < 0 || groups < 1 || channels % groups != 0 || spatial < 0) return cudaErrorInvalidValue;
  const int64_t perGroup = channels / groups;
  return launchNormalizeRows(batch * groups, perGroup * spatial, x, nullptr, nullptr,
                             {scale, bias, groups, perGroup, std::max<int64_t>(spatial, 1)}, epsilon, y, nullptr,
                             nullptr, type, stream);
}

}  // namespace kiln::kernels::cuda
