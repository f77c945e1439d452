// Softmax, LogSoftmax and Hardmax. Contiguous lines (inner == 1) take a warp each up to
// kWarpLineLimit elements and a block each beyond; strided lines take a thread each (neighbouring
// threads read neighbouring elements). Every line is read three times: maximum, sum of
// exponentials, output; the re-reads of a short line hit the cache.
#include "softmax.h"

#include "kernels/cuda/common/device_types.cuh"
#include "kernels/cuda/common/launch.cuh"
#include "kernels/cuda/elementwise/math_functions.h"
#include "kernels/cuda/reduce/arg_ops.h"
#include "kernels/cuda/reduce/block_reduce.cuh"

namespace kiln::kernels::cuda {
namespace {

constexpr int kWarpLineLimit = 1024;
constexpr int kBlockThreads = 256;

struct MaxFn {
  template <class A>
  __device__ A operator()(A a, A b) const { return b > a ? b : a; }  // skips NaN
};
struct SumFn {
  template <class A>
  __device__ A operator()(A a, A b) const { return a + b; }
};

// Hardmax's index from the line's folded candidate: index 0 when no value beats -infinity.
template <class A>
__device__ int64_t hardmaxIndex(const ArgCandidate<A>& best) {
  return best.index < 0 || !(best.value > A(-INFINITY)) ? 0 : best.index;
}

template <class A>
__device__ ArgCandidate<A> shuffleCandidate(ArgCandidate<A> c, int offset) {
  return {__shfl_xor_sync(0xFFFFFFFFu, c.value, offset), __shfl_xor_sync(0xFFFFFFFFu, (long long)c.index, offset)};
}

// Writes line `line` (elements at `stride` apart) given its maximum and sum of exp(x - max), or
// its Hardmax index; lanes `lane` of `lanes` share the writes.
template <class T, class A>
__device__ void writeLine(SoftmaxKind kind, const T* x, T* y, int64_t n, int64_t stride, int lane, int lanes, A max,
                          A sum, int64_t hardmax) {
  if (kind == SoftmaxKind::kHardmax) {
    for (int64_t i = lane; i < n; i += lanes) y[i * stride] = fromCompute<T>(A(i == hardmax ? 1 : 0));
  } else if (kind == SoftmaxKind::kSoftmax) {
    const A scale = A(1) / sum;
    for (int64_t i = lane; i < n; i += lanes)
      y[i * stride] = fromCompute<T>(math::expOf(A(toCompute(x[i * stride])) - max) * scale);
  } else {
    const A logSum = math::logOf(sum);
    for (int64_t i = lane; i < n; i += lanes) y[i * stride] = fromCompute<T>((A(toCompute(x[i * stride])) - max) - logSum);
  }
}

// A warp per contiguous line.
template <class T>
__global__ void __launch_bounds__(kBlockThreads) softmaxWarpKernel(SoftmaxKind kind, const T* in, T* out,
                                                                    int64_t lines, int64_t n) {
  using A = ComputeType<T>;
  const int lane = threadIdx.x % 32;
  const int64_t warps = int64_t(gridDim.x) * (blockDim.x / 32);
  for (int64_t line = int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32; line < lines; line += warps) {
    const T* x = in + line * n;
    T* y = out + line * n;
    A max = A(-INFINITY), sum = A(0);
    int64_t hardmax = 0;
    if (kind == SoftmaxKind::kHardmax) {
      ArgCandidate<A> best{A(0), -1};
      const ArgOrder order{true, false};
      for (int64_t i = lane; i < n; i += 32) best = order(best, argCandidate(A(toCompute(x[i])), i));
      for (int offset = 16; offset > 0; offset /= 2) best = order(best, shuffleCandidate(best, offset));
      hardmax = hardmaxIndex(best);
    } else {
      for (int64_t i = lane; i < n; i += 32) max = MaxFn{}(max, A(toCompute(x[i])));
      max = warpFold(max, MaxFn{});
      for (int64_t i = lane; i < n; i += 32) sum += math::expOf(A(toCompute(x[i])) - max);
      sum = warpFold(sum, SumFn{});
    }
    writeLine(kind, x, y, n, 1, lane, 32, max, sum, hardmax);
  }
}

// A block per contiguous line.
template <class T>
__global__ void __launch_bounds__(kBlockThreads) softmaxBlockKernel(SoftmaxKind kind, const T* in, T* out,
                                                                     int64_t lines, int64_t n) {
  using A = ComputeType<T>;
  __shared__ A shared[kBlockThreads];
  __shared__ ArgCandidate<A> candidates[kBlockThreads];
  const int lane = threadIdx.x, lanes = blockDim.x;
  for (int64_t line = blockIdx.x; line < lines; line += gridDim.x) {
    const T* x = in + line * n;
    T* y = out + line * n;
    A max = A(-INFINITY), sum = A(0);
    int64_t hardmax = 0;
    if (kind == SoftmaxKind::kHardmax) {
      ArgCandidate<A> best{A(0), -1};
      const ArgOrder order{true, false};
      for (int64_t i = lane; i < n; i += lanes) best = order(best, argCandidate(A(toCompute(x[i])), i));
      hardmax = hardmaxIndex(blockFold(best, candidates, order));
    } else {
      for (int64_t i = lane; i < n; i += lanes) max = MaxFn{}(max, A(toCompute(x[i])));
      max = blockFold(max, shared, MaxFn{});
      for (int64_t i = lane; i < n; i += lanes) sum += math::expOf(A(toCompute(x[i])) - max);
      sum = blockFold(sum, shared, SumFn{});
    }
    writeLine(kind, x, y, n, 1, lane, lanes, max, sum, hardmax);
  }
}

// A thread per strided line: line (o, j) has elements at ((o * n + i) * inner + j).
template <class T>
__global__ void softmaxStridedKernel(SoftmaxKind kind, const T* in, T* out, int64_t outer, int64_t n, int64_t inner) {
  using A = ComputeType<T>;
  KILN_GRID_STRIDE_LOOP(line, outer * inner) {
    const int64_t origin = (line / inner) * n * inner + line % inner;
    const T* x = in + origin;
    T* y = out + origin;
    A max = A(-INFINITY), sum = A(0);
    int64_t hardmax = 0;
    if (kind == SoftmaxKind::kHardmax) {
      A best = A(-INFINITY);
      for (int64_t i = 0; i < n; ++i) {
        const A v = toCompute(x[i * inner]);
        if (v > best) best = v, hardmax = i;  // the CPU's loop
      }
    } else {
      for (int64_t i = 0; i < n; ++i) max = MaxFn{}(max, A(toCompute(x[i * inner])));
      for (int64_t i = 0; i < n; ++i) sum += math::expOf(A(toCompute(x[i * inner])) - max);
    }
    writeLine(kind, x, y, n, inner, 0, 1, max, sum, hardmax);
  }
}

}  // namespace

cudaError_t launchSoftmax(SoftmaxKind kind, const void* in, void* out, int64_t outer, int64_t n, int64_t inner,
                          ElementType type, cudaStream_t stream) {
  if (outer < 0 || n < 0 || inner < 0) return cudaErrorInvalidValue;
  if (kind != SoftmaxKind::kSoftmax && kind != SoftmaxKind::kLogSoftmax && kind != SoftmaxKind::kHardmax)
    return cudaErrorInvalidValue;
  return dispatchFloat(type, [&](auto tag) {
    using T = decltype(tag);
    if (outer * n * inner == 0) return cudaSuccess;
    const T* x = static_cast<const T*>(in);
    T* y = static_cast<T*>(out);
    const int64_t lines = outer * inner;
    if (inner > 1) {
      softmaxStridedKernel<<<gridFor(lines), kThreadsPerBlock, 0, stream>>>(kind, x, y, outer, n, inner);
    } else if (n <= kWarpLineLimit) {
      constexpr int kWarpsPerBlock = kBlockThreads / 32;
      const unsigned blocks = unsigned(std::min<int64_t>((lines + kWarpsPerBlock - 1) / kWarpsPerBlock, 65535 * 8));
      softmaxWarpKernel<<<blocks, kBlockThreads, 0, stream>>>(kind, x, y, lines, n);
    } else {
      softmaxBlockKernel<<<unsigned(std::min<int64_t>(lines, 65535 * 8)), kBlockThreads, 0, stream>>>(kind, x, y,
                                                                                                      lines, n);
    }
    return launchStatus();
  });
}

}  // namespace kiln::kernels::cuda
