// LRN across channels: y = x / (bias + alpha / size * sum of x^2 over the channel window)^beta,
// the window [c - floor((size-1)/2), c + ceil((size-1)/2)] clipped to the channels, as the CPU
// computes it. One thread per element; windows are short (AlexNet's is 5), so each thread reads
// its own window rather than sharing a running sum.
#include "norm.h"

#include "kernels/cuda/common/device_types.cuh"
#include "kernels/cuda/common/launch.cuh"
#include "kernels/cuda/elementwise/math_functions.h"

namespace kiln::kernels::cuda {
namespace {

struct LrnShape {
  int64_t count, channels, spatial, before, after, size;
  float alpha, beta, bias;
};

template <class T>
__global__ void lrnKernel(const T* x, T* y, LrnShape s) {
  using A = ComputeType<T>;
  KILN_GRID_STRIDE_LOOP(i, s.count) {
    const int64_t plane = i / s.spatial, position = i - plane * s.spatial;
    const int64_t c = plane % s.channels, first = plane - c;  // first: channel 0 of this batch item
    const int64_t c0 = c - s.before < 0 ? 0 : c - s.before;
    const int64_t c1 = c + s.after > s.channels - 1 ? s.channels - 1 : c + s.after;
    A squares = A(0);
    for (int64_t k = c0; k <= c1; ++k) {
      const A v = toCompute(x[(first + k) * s.spatial + position]);
      squares += v * v;
    }
    const A denominator = math::powOf(A(s.bias) + A(s.alpha) / A(s.size) * squares, A(s.beta));
    y[i] = fromCompute<T>(A(toCompute(x[i])) / denominator);
  }
}

}  // namespace

cudaError_t launchLocalResponseNormalization(const void* x, int64_t batch, int64_t channels, int64_t spatial,
                                             int64_t size, float alpha, float beta, float bias, void* y,
                                             ElementType type, cudaStream_t stream) {
  if (batch < 0 || channels < 0 || spatial < 0 || size < 1) return cudaErrorInvalidValue;
  const int64_t count = batch * channels * spatial;
  const int64_t before = (size - 1) / 2;
  const LrnShape shape{count, channels, spatial, before, size - 1 - before, size, alpha, beta, bias};
  return dispatchFloat(type, [&](auto tag) {
    using T = decltype(tag);
    if (count == 0) return cudaSuccess;
    lrnKernel<<<gridFor(count), kThreadsPerBlock, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y), shape);
    return launchStatus();
  });
}

}  // namespace kiln::kernels::cuda
