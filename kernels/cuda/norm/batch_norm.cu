// BatchNormalization with given statistics: y = x * a + b per channel, a = scale / sqrt(variance +
// epsilon), b = bias - mean * a, as the CPU computes them (in the compute type). One thread per
// element; the channel comes from two magic-number divisions.
#include "norm.h"

#include "kernels/cuda/common/device_types.cuh"
#include "kernels/cuda/common/launch.cuh"
#include "kernels/cuda/elementwise/fast_divider.h"
#include "kernels/cuda/elementwise/math_functions.h"

namespace kiln::kernels::cuda {
namespace {

struct BatchNormShape {
  int64_t count, channels, spatial;
  FastDivider bySpatial, byChannels;
  bool narrow;  // count below 2^31
  const float *scale, *bias, *mean, *variance;
  float epsilon;
};

template <class T>
__global__ void batchNormKernel(const T* x, T* y, BatchNormShape s) {
  using A = ComputeType<T>;
  KILN_GRID_STRIDE_LOOP(i, s.count) {
    int64_t c;
    if (s.narrow) {
      const uint32_t plane = s.bySpatial.divide(uint32_t(i));
      c = int64_t(plane - s.byChannels.divide(plane) * uint32_t(s.channels));
    } else {
      c = (i / s.spatial) % s.channels;
    }
    const A a = A(s.scale[c]) / math::sqrtOf(A(s.variance[c]) + A(s.epsilon));
    const A b = A(s.bias[c]) - A(s.mean[c]) * a;
    y[i] = fromCompute<T>(A(toCompute(x[i])) * a + b);
  }
}

}  // namespace

cudaError_t launchBatchNormalization(const void* x, const float* scale, const float* bias, const float* mean,
                                     const float* variance, int64_t batch, int64_t channels, int64_t spatial,
                                     float epsilon, void* y, ElementType type, cudaStream_t stream) {
  if (batch < 0 || channels < 0 || spatial < 0) return cudaErrorInvalidValue;
  const int64_t count = batch * channels * spatial;
  const bool narrow = count < (int64_t(1) << 31);
  const BatchNormShape shape{count, channels, spatial, FastDivider(narrow ? uint32_t(spatial) : 1u),
                             FastDivider(narrow ? uint32_t(channels) : 1u), narrow, scale, bias, mean, variance,
                             epsilon};
  return dispatchFloat(type, [&](auto tag) {
    using T = decltype(tag);
    if (count == 0) return cudaSuccess;
    if (!scale || !bias || !mean || !variance) return cudaErrorInvalidValue;
    batchNormKernel<<<gridFor(count), kThreadsPerBlock, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y),
                                                                    shape);
    return launchStatus();
  });
}

}  // namespace kiln::kernels::cuda
