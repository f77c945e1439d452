// LpNormalization and MeanVarianceNormalization: statistics over a set of axes, then every element
// rescaled in place of its statistics. The reduction plan (reduce_plan.h) lays out the lines:
// groups of lanes along the reduced elements when they are innermost, along the lines otherwise;
// one group per line (unsplit), so a line's statistics stay in its block.
#include "norm.h"

#include "kernels/cuda/common/device_types.cuh"
#include "kernels/cuda/common/launch.cuh"
#include "kernels/cuda/elementwise/math_functions.h"
#include "kernels/cuda/reduce/block_reduce.cuh"
#include "kernels/cuda/reduce/reduce_plan.h"

#include <stdexcept>

namespace kiln::kernels::cuda {
namespace {

struct LineShape {
  int64_t lines, length;
  BroadcastIndexer<1> kept, folded;  // line -> offset of its first element; element -> offset from there
  bool rowMode;
};

struct SumFn {
  template <class A>
  __device__ A operator()(A a, A b) const { return a + b; }
};

// The lanes of one group and the line they serve.
struct LineLanes {
  int lanes, lane, groupBase, laneStride;
  int64_t line;
  bool active;

  __device__ LineLanes(const LineShape& s) {
    const bool row = s.rowMode;
    lanes = row ? blockDim.x : blockDim.y;
    lane = row ? threadIdx.x : threadIdx.y;
    groupBase = row ? threadIdx.y * blockDim.x : threadIdx.x;
    laneStride = row ? 1 : blockDim.x;
    line = int64_t(blockIdx.x) * (row ? blockDim.y : blockDim.x) + (row ? threadIdx.y : threadIdx.x);
    active = line < s.lines;
  }
};

__device__ __forceinline__ int64_t elementOffset(const LineShape& s, int64_t i) {
  if (s.folded.rank <= 1) return s.folded.rank == 1 ? i * s.folded.strides[0][0] : 0;
  int64_t offset[1];
  s.folded.offsets(i, offset);
  return offset[0];
}

template <class T>
__global__ void __launch_bounds__(kReduceBlockThreads)
    lpNormKernel(const T* x, T* y, const __grid_constant__ LineShape s, bool l1) {
  using A = ComputeType<T>;
  __shared__ A shared[kReduceBlockThreads];
  const LineLanes g(s);
  int64_t origin = 0;
  if (g.active) {
    int64_t offset[1];
    s.kept.offsets(g.line, offset);
    origin = offset[0];
  }
  const int64_t n = g.active ? s.length : 0;
  A norm = A(0);
  for (int64_t i = g.lane; i < n; i += g.lanes) {
    const A v = toCompute(x[origin + elementOffset(s, i)]);
    norm += l1 ? math::absOf(v) : v * v;
  }
  norm = groupFold(norm, shared, g.groupBase, g.lane, g.lanes, g.laneStride, SumFn{});
  if (!l1) norm = math::sqrtOf(norm);
  for (int64_t i = g.lane; i < n; i += g.lanes) {
    const int64_t at = origin + elementOffset(s, i);
    y[at] = fromCompute<T>(norm != A(0) ? A(toCompute(x[at])) / norm : A(0));
  }
}

template <class T>
__global__ void __launch_bounds__(kReduceBlockThreads)
    meanVarianceKernel(const T* x, T* y, const __grid_constant__ LineShape s) {
  using A = ComputeType<T>;
  __shared__ A shared[kReduceBlockThreads];
  const LineLanes g(s);
  int64_t origin = 0;
  if (g.active) {
    int64_t offset[1];
    s.kept.offsets(g.line, offset);
    origin = offset[0];
  }
  const int64_t n = g.active ? s.length : 0;
  A sum = A(0);
  for (int64_t i = g.lane; i < n; i += g.lanes) sum += A(toCompute(x[origin + elementOffset(s, i)]));
  const A mean = groupFold(sum, shared, g.groupBase, g.lane, g.lanes, g.laneStride, SumFn{}) / A(s.length);
  A squares = A(0);
  for (int64_t i = g.lane; i < n; i += g.lanes) {
    const A d = A(toCompute(x[origin + elementOffset(s, i)])) - mean;
    squares += d * d;
  }
  const A variance = groupFold(squares, shared, g.groupBase, g.lane, g.lanes, g.laneStride, SumFn{}) / A(s.length);
  const A denominator = math::sqrtOf(variance) + A(1e-9);
  for (int64_t i = g.lane; i < n; i += g.lanes) {
    const int64_t at = origin + elementOffset(s, i);
    y[at] = fromCompute<T>((A(toCompute(x[at])) - mean) / denominator);
  }
}

// Launches kernel(x, y, shape, extra...) over the lines of `plan`.
template <class Launch>
cudaError_t forLines(const ReducePlan& plan, Launch&& launch) {
  if (plan.outputs == 0 || plan.reduced == 0) return cudaSuccess;
  const ReduceGeometry g = reduceGeometry(plan);
  if (g.blocks > int64_t(INT32_MAX)) return cudaErrorInvalidValue;
  const LineShape shape{plan.outputs, plan.reduced, indexerFor(plan.kept, plan.outputs),
                        indexerFor(plan.folded, plan.reduced), g.rowMode};
  const dim3 block = g.rowMode ? dim3(g.lanes, g.outputLanes) : dim3(g.outputLanes, g.lanes);
  launch(unsigned(g.blocks), block, shape);
  return launchStatus();
}

}  // namespace

cudaError_t launchLpNormalization(const void* x, int64_t outer, int64_t axis, int64_t inner, int64_t p, void* y,
                                  ElementType type, cudaStream_t stream) {
  if (outer < 0 || axis < 0 || inner < 0 || (p != 1 && p != 2)) return cudaErrorInvalidValue;
  const ReducePlan plan = planReduce({outer, axis, inner}, {false, true, false});
  return dispatchFloat(type, [&](auto tag) {
    using T = decltype(tag);
    return forLines(plan, [&](unsigned blocks, dim3 block, const LineShape& shape) {
      lpNormKernel<<<blocks, block, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y), shape, p == 1);
    });
  });
}

cudaError_t launchMeanVarianceNormalization(const void* x, const std::vector<int64_t>& dims,
                                            const std::vector<bool>& reduced, void* y, ElementType type,
                                            cudaStream_t stream) {
  ReducePlan plan;
  try {
    plan = planReduce(dims, reduced);
  } catch (const std::invalid_argument&) {
    return cudaErrorInvalidValue;
  }
  return dispatchFloat(type, [&](auto tag) {
    using T = decltype(tag);
    return forLines(plan, [&](unsigned blocks, dim3 block, const LineShape& shape) {
      meanVarianceKernel<<<blocks, block, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y), shape);
    });
  });
}

}  // namespace kiln::kernels::cuda
