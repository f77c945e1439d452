// Reductions over any set of axes: one kernel per (type, combine), the map and finish of each
// ReduceKind chosen at run time (they cost little next to the loads). See reduce_plan.h for how the
// lanes of a block cover the input.
#include "block_reduce.cuh"
#include "reduce.h"
#include "reduce_ops.h"
#include "reduce_plan.h"

#include "kernels/cuda/common/device_types.cuh"
#include "kernels/cuda/common/launch.cuh"

#include <stdexcept>

namespace kiln::kernels::cuda {
namespace {

constexpr size_t kWorkspaceAlignment = 256;

size_t alignUp(size_t bytes) { return (bytes + kWorkspaceAlignment - 1) / kWorkspaceAlignment * kWorkspaceAlignment; }

struct ReduceShape {
  int64_t outputs, reduced;
  BroadcastIndexer<1> kept, folded;
  bool rowMode;
  int64_t chunk, splits;
};

// Lane `lane` of `lanes` folds reduction indices [begin, end) of the output at `origin`; four
// accumulators keep four loads in flight.
template <Combine C, class T>
__device__ ComputeType<T> foldRange(const T* origin, int64_t begin, int64_t end, int lane, int lanes,
                                    const BroadcastIndexer<1>& folded, ReduceMap map, ComputeType<T> shift) {
  using A = ComputeType<T>;
  A acc[4] = {combineIdentity<C, A>(), combineIdentity<C, A>(), combineIdentity<C, A>(), combineIdentity<C, A>()};
  int64_t r = begin + lane;
  if (folded.rank <= 1) {
    const int64_t stride = folded.rank == 1 ? folded.strides[0][0] : 0;
    for (; r + 3 * lanes < end; r += 4 * int64_t(lanes)) {
      A x[4];
#pragma unroll
      for (int k = 0; k < 4; ++k) x[k] = toCompute(origin[(r + k * lanes) * stride]);
#pragma unroll
      for (int k = 0; k < 4; ++k) acc[k] = combine<C>(acc[k], reduceMap(map, x[k], shift));
    }
    for (; r < end; r += lanes) acc[0] = combine<C>(acc[0], reduceMap(map, A(toCompute(origin[r * stride])), shift));
  } else {
    for (; r < end; r += lanes) {
      int64_t offset[1];
      folded.offsets(r, offset);
      acc[0] = combine<C>(acc[0], reduceMap(map, A(toCompute(origin[offset[0]])), shift));
    }
  }
  return combine<C>(combine<C>(acc[0], acc[1]), combine<C>(acc[2], acc[3]));
}

template <Combine C>
struct CombineFn {
  template <class A>
  __device__ A operator()(A a, A b) const { return combine<C>(a, b); }
};

// One group of lanes per output; grid y splits long reductions. With `partials` the group writes
// its chunk's accumulator there, else the finished output. LogSumExp takes its shift from
// `shifts` (split second pass) or, unsplit, finds the maximum first.
template <class T, Combine C>
__global__ void __launch_bounds__(kReduceBlockThreads)
    reduceKernel(const T* in, T* out, ComputeType<T>* partials, const ComputeType<T>* shifts,
                 const __grid_constant__ ReduceShape shape, ReduceKind kind) {
  using A = ComputeType<T>;
  __shared__ A shared[kReduceBlockThreads];
  const bool row = shape.rowMode;
  const int lanes = row ? blockDim.x : blockDim.y, lane = row ? threadIdx.x : threadIdx.y;
  const int outputLanes = row ? blockDim.y : blockDim.x, outputLane = row ? threadIdx.y : threadIdx.x;
  const int groupBase = row ? threadIdx.y * blockDim.x : threadIdx.x, laneStride = row ? 1 : blockDim.x;
  const int64_t o = int64_t(blockIdx.x) * outputLanes + outputLane;
  const bool active = o < shape.outputs;
  const int64_t begin = int64_t(blockIdx.y) * shape.chunk;
  const int64_t end = begin + shape.chunk < shape.reduced ? begin + shape.chunk : shape.reduced;
  const T* origin = in;
  if (active) {
    int64_t offset[1];
    shape.kept.offsets(o, offset);
    origin += offset[0];
  }
  const ReduceMap map = mapOf(kind);
  A shift = A(0);
  if (kind == ReduceKind::kLogSumExp) {
    if (shifts) {
      shift = active ? shifts[o] : A(0);
    } else {
      A maximum = combineIdentity<Combine::kMax, A>();
      if (active)
        maximum = foldRange<Combine::kMax>(origin, begin, end, lane, lanes, shape.folded, ReduceMap::kIdentity, A(0));
      shift = logSumExpShift(groupFold(maximum, shared, groupBase, lane, lanes, laneStride, CombineFn<Combine::kMax>{}));
    }
  }
  A acc = combineIdentity<C, A>();
  if (active) acc = foldRange<C>(origin, begin, end, lane, lanes, shape.folded, map, shift);
  acc = groupFold(acc, shared, groupBase, lane, lanes, laneStride, CombineFn<C>{});
  if (lane != 0 || !active) return;
  if (partials) partials[o * shape.splits + blockIdx.y] = acc;
  else out[o] = fromCompute<T>(reduceFinish(kind, acc, shape.reduced, shift));
}

// Combines each output's split partials; writes LogSumExp's shift (the first pass, a maximum) to
// `shiftOut`, else the finished output.
template <class T, Combine C>
__global__ void finishSplitsKernel(const ComputeType<T>* partials, T* out, ComputeType<T>* shiftOut,
                                   const ComputeType<T>* shifts, int64_t outputs, int64_t splits, int64_t reduced,
                                   ReduceKind kind) {
  using A = ComputeType<T>;
  KILN_GRID_STRIDE_LOOP(o, outputs) {
    A acc = combineIdentity<C, A>();
    for (int64_t s = 0; s < splits; ++s) acc = combine<C>(acc, partials[o * splits + s]);
    if (shiftOut) shiftOut[o] = logSumExpShift(acc);
    else out[o] = fromCompute<T>(reduceFinish(kind, acc, reduced, shifts ? shifts[o] : A(0)));
  }
}

template <class T, Combine C>
cudaError_t runReduce(ReduceKind kind, const T* in, T* out, const ReducePlan& plan, const ReduceGeometry& g,
                      ComputeType<T>* partials, ComputeType<T>* shiftOut, const ComputeType<T>* shifts,
                      cudaStream_t stream) {
  const ReduceShape shape{plan.outputs, plan.reduced, indexerFor(plan.kept, plan.outputs),
                          indexerFor(plan.folded, plan.reduced), g.rowMode, g.chunk, g.splits};
  const dim3 block = g.rowMode ? dim3(g.lanes, g.outputLanes) : dim3(g.outputLanes, g.lanes);
  const dim3 grid(unsigned(g.blocks), unsigned(g.splits));
  const bool split = g.splits > 1;
  reduceKernel<T, C><<<grid, block, 0, stream>>>(in, out, split ? partials : nullptr, shifts, shape, kind);
  if (!split) return launchStatus();
  if (const cudaError_t status = launchStatus(); status != cudaSuccess) return status;
  finishSplitsKernel<T, C><<<gridFor(plan.outputs), kThreadsPerBlock, 0, stream>>>(
      partials, out, shiftOut, shifts, plan.outputs, g.splits, plan.reduced, kind);
  return launchStatus();
}

size_t accumulatorBytes(ElementType type) {
  switch (type) {
    case ElementType::kFloat16: case ElementType::kBFloat16: return sizeof(float);
    default: return elementBytes(type);
  }
}

bool isNumeric(ElementType type) {
  return type != ElementType::kBool && type != ElementType::kFloat8E4M3 && type != ElementType::kFloat8E5M2 &&
         uint8_t(type) <= uint8_t(ElementType::kFloat8E5M2);
}

// Bytes of the partials (then, for LogSumExp, of the shifts) a split launch uses.
size_t workspaceFor(ReduceKind kind, const ReducePlan& plan, const ReduceGeometry& g, ElementType type) {
  if (g.splits < 2) return 0;
  const size_t a = accumulatorBytes(type);
  size_t bytes = alignUp(size_t(plan.outputs) * size_t(g.splits) * a);
  if (kind == ReduceKind::kLogSumExp) bytes += alignUp(size_t(plan.outputs) * a);
  return bytes;
}

}  // namespace

size_t reduceWorkspaceBytes(ReduceKind kind, const std::vector<int64_t>& dims, const std::vector<bool>& reduced,
                            ElementType type) {
  try {
    const ReducePlan plan = planReduce(dims, reduced);
    return workspaceFor(kind, plan, reduceGeometry(plan), type);
  } catch (const std::invalid_argument&) {
    return 0;
  }
}

cudaError_t launchReduce(ReduceKind kind, const void* in, void* out, const std::vector<int64_t>& dims,
                         const std::vector<bool>& reduced, ElementType type, void* workspace, size_t workspaceBytes,
                         cudaStream_t stream) {
  if (!isNumeric(type)) return cudaErrorInvalidValue;
  ReducePlan plan;
  try {
    plan = planReduce(dims, reduced);
  } catch (const std::invalid_argument&) {
    return cudaErrorInvalidValue;
  }
  if (plan.outputs == 0) return cudaSuccess;
  const ReduceGeometry g = reduceGeometry(plan);
  if (g.blocks > int64_t(INT32_MAX)) return cudaErrorInvalidValue;
  const size_t needed = workspaceFor(kind, plan, g, type);
  if (workspaceBytes < needed || (needed > 0 && workspace == nullptr)) return cudaErrorInvalidValue;
  return dispatchNumeric(type, [&](auto tag) {
    using T = decltype(tag);
    using A = ComputeType<T>;
    const T* x = static_cast<const T*>(in);
    T* y = static_cast<T*>(out);
    A* partials = static_cast<A*>(workspace);
    switch (combineOf(kind)) {
      case Combine::kProd: return runReduce<T, Combine::kProd>(kind, x, y, plan, g, partials, nullptr, nullptr, stream);
      case Combine::kMax: return runReduce<T, Combine::kMax>(kind, x, y, plan, g, partials, nullptr, nullptr, stream);
      case Combine::kMin: return runReduce<T, Combine::kMin>(kind, x, y, plan, g, partials, nullptr, nullptr, stream);
      case Combine::kSum: break;
    }
    if (kind != ReduceKind::kLogSumExp || g.splits < 2)
      return runReduce<T, Combine::kSum>(kind, x, y, plan, g, partials, nullptr, nullptr, stream);
    // Split LogSumExp: the maxima first (into the shifts), then the shifted sums.
    A* shifts = reinterpret_cast<A*>(static_cast<char*>(workspace) +
                                     alignUp(size_t(plan.outputs) * size_t(g.splits) * sizeof(A)));
    if (const cudaError_t status =
            runReduce<T, Combine::kMax>(ReduceKind::kMax, x, y, plan, g, partials, shifts, nullptr, stream);
        status != cudaSuccess)
      return status;
    return runReduce<T, Combine::kSum>(kind, x, y, plan, g, partials, nullptr, shifts, stream);
  });
}

}  // namespace kiln::kernels::cuda
