// ArgMax and ArgMin: the reduction kernel's layout (reduce_plan.h) with (value, index) candidates
// instead of accumulators; unsplit, so one long line runs on one block.
#include "arg_ops.h"
#include "block_reduce.cuh"
#include "reduce.h"
#include "reduce_plan.h"

#include "kernels/cuda/common/device_types.cuh"
#include "kernels/cuda/common/launch.cuh"

namespace kiln::kernels::cuda {
namespace {

struct ArgShape {
  int64_t outputs, n, inner;
  bool rowMode;
};

template <class T>
__global__ void __launch_bounds__(kReduceBlockThreads) argExtremeKernel(const T* in, int64_t* out, ArgShape shape,
                                                                         ArgOrder order) {
  using A = ComputeType<T>;
  using Candidate = ArgCandidate<A>;
  __shared__ Candidate shared[kReduceBlockThreads];
  const bool row = shape.rowMode;
  const int lanes = row ? blockDim.x : blockDim.y, lane = row ? threadIdx.x : threadIdx.y;
  const int outputLanes = row ? blockDim.y : blockDim.x, outputLane = row ? threadIdx.y : threadIdx.x;
  const int groupBase = row ? threadIdx.y * blockDim.x : threadIdx.x, laneStride = row ? 1 : blockDim.x;
  const int64_t o = int64_t(blockIdx.x) * outputLanes + outputLane;
  const bool active = o < shape.outputs;
  // Output o = (outer, j) reads in[(outer * n + i) * inner + j].
  const T* origin = in + (active ? (o / shape.inner) * shape.n * shape.inner + o % shape.inner : 0);
  Candidate best{A(0), -1};
  if (active)
    for (int64_t i = lane; i < shape.n; i += lanes) best = order(best, argCandidate(A(toCompute(origin[i * shape.inner])), i));
  best = groupFold(best, shared, groupBase, lane, lanes, laneStride, order);
  if (lane == 0 && active) out[o] = argResult(best, A(toCompute(origin[0])));
}

}  // namespace

cudaError_t launchArgExtreme(const void* in, int64_t* out, int64_t outer, int64_t n, int64_t inner, bool largest,
                             bool selectLast, ElementType type, cudaStream_t stream) {
  if (outer < 0 || n < 0 || inner < 0) return cudaErrorInvalidValue;
  const int64_t outputs = outer * inner;
  if (outputs == 0) return cudaSuccess;
  if (n == 0) return cudaErrorInvalidValue;
  const ReducePlan plan = planReduce({outer, n, inner}, {false, true, false});
  ReduceGeometry g = reduceGeometry(plan);
  if (g.blocks > int64_t(INT32_MAX)) return cudaErrorInvalidValue;
  const ArgShape shape{outputs, n, inner, g.rowMode};
  const dim3 block = g.rowMode ? dim3(g.lanes, g.outputLanes) : dim3(g.outputLanes, g.lanes);
  return dispatchNumeric(type, [&](auto tag) {
    using T = decltype(tag);
    argExtremeKernel<<<unsigned(g.blocks), block, 0, stream>>>(static_cast<const T*>(in), out, shape,
                                                               ArgOrder{largest, selectLast});
    return launchStatus();
  });
}

}  // namespace kiln::kernels::cuda
