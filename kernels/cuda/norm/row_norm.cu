// Row normalisation (LayerNormalization, InstanceNormalization, GroupNormalization): a group of
// lanes per row (rows of up to 256 elements share a block, longer rows take one each), two-pass
// statistics in the compute type, the CPU's RowAffine for the scale and bias, and an optional
// residual added (and written out) first.
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
