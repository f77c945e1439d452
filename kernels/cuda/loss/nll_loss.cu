// NegativeLogLikelihoodLoss: a thread per position. kNone writes each position's loss; kSum and
// kMean fold (loss, weight) pairs in double, a fixed number of blocks for a given size writing one
// partial each, which a one-block kernel adds in order, so that a launch is deterministic.
#include "loss.h"

#include "kernels/cuda/common/device_types.cuh"
#include "kernels/cuda/common/launch.cuh"
#include "kernels/cuda/reduce/block_reduce.cuh"

#include <cmath>

namespace kiln::kernels::cuda {
namespace {

using kernels::LossReduction;

constexpr int kLossThreads = 256;
constexpr int64_t kMaxPartials = 256;
constexpr int64_t kPositionsPerThread = 16;  // before a size takes another block

struct LossShape {
  int64_t count, classes, spatial;
  bool ignores;
  int64_t ignoreIndex;
};

struct LossPair {
  double loss, weight;
};

struct AddPairs {
  __device__ LossPair operator()(LossPair a, LossPair b) const { return {a.loss + b.loss, a.weight + b.weight}; }
};

// Position p's -logProb[b, t, s] * weight[t] and weight[t] (0 and 0 when ignored, NaN when t is
// not a class), as the CPU computes them.
template <class T, class I>
__device__ LossPair positionLoss(const T* logProb, const I* target, const T* weight, const LossShape& s, int64_t p) {
  const int64_t t = int64_t(target[p]);
  if (s.ignores && t == s.ignoreIndex) return {0.0, 0.0};
  if (t < 0 || t >= s.classes) return {double(NAN), 0.0};
  const int64_t b = p / s.spatial, at = p % s.spatial;
  const double w = weight ? double(toCompute(weight[t])) : 1.0;
  return {-double(toCompute(logProb[(b * s.classes + t) * s.spatial + at])) * w, w};
}

template <class T, class I>
__global__ void nllPerPositionKernel(const T* logProb, const I* target, const T* weight, T* loss, LossShape s) {
  KILN_GRID_STRIDE_LOOP(p, s.count) {
    loss[p] = fromCompute<T>(ComputeType<T>(positionLoss(logProb, target, weight, s, p).loss));
  }
}

template <class T, class I>
__global__ void __launch_bounds__(kLossThreads)
    nllPartialsKernel(const T* logProb, const I* target, const T* weight, LossPair* partials, LossShape s) {
  __shared__ LossPair shared[kLossThreads];
  LossPair acc{0.0, 0.0};
  KILN_GRID_STRIDE_LOOP(p, s.count) acc = AddPairs{}(acc, positionLoss(logProb, target, weight, s, p));
  acc = blockFold(acc, shared, AddPairs{});
  if (threadIdx.x == 0) partials[blockIdx.x] = acc;
}

template <class T>
__global__ void nllFinishKernel(const LossPair* partials, int64_t count, T* loss, bool mean) {
  LossPair total{0.0, 0.0};
  for (int64_t i = 0; i < count; ++i) total = AddPairs{}(total, partials[i]);
  *loss = fromCompute<T>(ComputeType<T>(mean ? total.loss / total.weight : total.loss));
}

int64_t partialCount(int64_t positions) {
  const int64_t perBlock = int64_t(kLossThreads) * kPositionsPerThread;
  return std::clamp<int64_t>((positions + perBlock - 1) / perBlock, 1, kMaxPartials);
}

template <class T, class I>
cudaError_t runNll(const T* logProb, const I* target, const T* weight, T* loss, const LossShape& s,
                   LossReduction reduction, LossPair* partials, cudaStream_t stream) {
  if (reduction == LossReduction::kNone) {
    if (s.count == 0) return cudaSuccess;
    nllPerPositionKernel<<<gridFor(s.count), kThreadsPerBlock, 0, stream>>>(logProb, target, weight, loss, s);
    return launchStatus();
  }
  const int64_t blocks = partialCount(s.count);
  nllPartialsKernel<<<unsigned(blocks), kLossThreads, 0, stream>>>(logProb, target, weight, partials, s);
  if (const cudaError_t status = launchStatus(); status != cudaSuccess) return status;
  nllFinishKernel<<<1, 1, 0, stream>>>(partials, blocks, loss, reduction == LossReduction::kMean);
  return launchStatus();
}

}  // namespace

size_t nllLossWorkspaceBytes(int64_t batch, int64_t spatial, LossReduction reduction) {
  if (reduction == LossReduction::kNone || batch < 0 || spatial < 0) return 0;
  return size_t(partialCount(batch * spatial)) * sizeof(LossPair);
}

cudaError_t launchNllLoss(const void* logProb, const void* target, ElementType targetType, const void* weight,
                          void* loss, int64_t batch, int64_t classes, int64_t spatial, LossReduction reduction,
                          const int64_t* ignoreIndex, ElementType type, void* workspace, size_t workspaceBytes,
                          cudaStream_t stream) {
  if (batch < 0 || classes < 0 || spatial < 0) return cudaErrorInvalidValue;
  if (targetType != ElementType::kInt32 && targetType != ElementType::kInt64) return cudaErrorInvalidValue;
  const size_t needed = nllLossWorkspaceBytes(batch, spatial, reduction);
  if (workspaceBytes < needed || (needed > 0 && workspace == nullptr)) return cudaErrorInvalidValue;
  const LossShape shape{batch * spatial, classes, spatial > 0 ? spatial : 1, ignoreIndex != nullptr,
                        ignoreIndex ? *ignoreIndex : 0};
  LossPair* partials = static_cast<LossPair*>(workspace);
  return dispatchFloat(type, [&](auto tag) {
    using T = decltype(tag);
    const T* x = static_cast<const T*>(logProb);
    const T* w = static_cast<const T*>(weight);
    T* y = static_cast<T*>(loss);
    if (targetType == ElementType::kInt32)
      return runNll(x, static_cast<const int32_t*>(target), w, y, shape, reduction, partials, stream);
    return runNll(x, static_cast<const int64_t*>(target), w, y, shape, reduction, partials, stream);
  });
}

}  // namespace kiln::kernels::cuda
