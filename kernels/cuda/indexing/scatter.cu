#include "atomic_combine.cuh"
#include "index_geometry.h"
#include "scatter.h"

#include <kernels/cuda/common/device_types.cuh>
#include <kernels/cuda/common/launch.cuh>
#include <kernels/cuda/layout/copy_unit.cuh>

namespace kiln::kernels::cuda {
namespace {

// Where update unit u goes: its offset in dst (in units), the slot that decides duplicates, and the
// claimant (the update's position in index order). offset < 0: out-of-range index.
struct Target {
  int64_t offset, slot, claimant;
};

// ScatterND: claimant = tuple; slot = the data slice it replaces.
struct TupleTargets {
  TupleGeometry g;
  int64_t sliceUnits = 1, elementsPerUnit = 1;

  __device__ int64_t units() const { return g.tupleCount * sliceUnits; }
  __device__ int64_t claimants() const { return g.tupleCount; }
  __device__ int64_t slotOf(int64_t t, IndexReader indices) const {
    const int64_t from = g.sliceOffset(t, indices);
    return from < 0 ? -1 : from / g.sliceElements;
  }
  __device__ Target locate(int64_t u, IndexReader indices) const {
    const int64_t t = u / sliceUnits, from = g.sliceOffset(t, indices);
    if (from < 0) return {-1, -1, t};
    return {from / elementsPerUnit + (u - t * sliceUnits), from / g.sliceElements, t};
  }
};

// ScatterElements: every update is its own claimant; slot = the element it writes.
struct AxisTargets {
  AxisGeometry g;
  int64_t count = 0;

  __device__ int64_t units() const { return count; }
  __device__ int64_t claimants() const { return count; }
  __device__ int64_t slotOf(int64_t u, IndexReader indices) const { return g.dataOffset(u, indices); }
  __device__ Target locate(int64_t u, IndexReader indices) const {
    const int64_t to = g.dataOffset(u, indices);
    return {to, to, u};
  }
};

// Every claimant records itself in its slot; the highest (the last in index order) stays.
template <class Targets>
__global__ void claimKernel(const __grid_constant__ Targets targets, IndexReader indices, int32_t* winners,
                            int* errorFlag) {
  KILN_GRID_STRIDE_LOOP(c, targets.claimants()) {
    const int64_t slot = targets.slotOf(c, indices);
    if (slot < 0)
      reportBadIndex(errorFlag);
    else
      atomicMax(winners + slot, int32_t(c));
  }
}

// Writes each update (only the winner of its slot when `winners` is given).
template <class Unit, class Targets>
__global__ void writeKernel(const Unit* __restrict__ updates, Unit* __restrict__ dst,
                            const __grid_constant__ Targets targets, IndexReader indices,
                            const int32_t* __restrict__ winners, int* errorFlag) {
  KILN_GRID_STRIDE_LOOP(u, targets.units()) {
    const Target t = targets.locate(u, indices);
    if (t.offset < 0) {
      if (!winners) reportBadIndex(errorFlag);  // else the claim kernel reported it
      continue;
    }
    if (!winners || winners[t.slot] == int32_t(t.claimant)) dst[t.offset] = updates[u];
  }
}

template <class T, class Targets>
__global__ void reduceKernel(const T* __restrict__ updates, T* dst, const __grid_constant__ Targets targets,
                             IndexReader indices, ScatterReduction reduction, int* errorFlag) {
  KILN_GRID_STRIDE_LOOP(u, targets.units()) {
    const Target t = targets.locate(u, indices);
    if (t.offset < 0)
      reportBadIndex(errorFlag);
    else
      atomicCombine(dst + t.offset, updates[u], reduction);
  }
}

int64_t countOf(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

// Slots the workspace needs for a deterministic 'none': one int32 per slot, while claimant
// numbers fit in int32.
int64_t winnerSlots(int64_t slots, int64_t claimants, ScatterReduction reduction) {
  if (reduction != ScatterReduction::kNone || claimants == 0 || claimants > INT32_MAX) return 0;
  return slots;
}

// data -> dst, then the updates. `unitTargets` places units of unitBytes (reduction 'none');
// `elementTargets` places elements (the reductions).
template <class Targets>
cudaError_t runScatter(const void* data, int64_t dataBytes, const void* updates, void* dst, IndexReader indices,
                       ScatterReduction reduction, ElementType type, const Targets& unitTargets, int unitBytes,
                       const Targets& elementTargets, int64_t updateCount, int64_t slots, void* workspace,
                       size_t workspaceBytes, int* errorFlag, cudaStream_t stream) {
  if (data != dst && dataBytes > 0)
    if (const cudaError_t status = cudaMemcpyAsync(dst, data, size_t(dataBytes), cudaMemcpyDeviceToDevice, stream);
        status != cudaSuccess)
      return status;
  if (updateCount == 0) return cudaSuccess;
  if (reduction != ScatterReduction::kNone) {
    return dispatchNumeric(type, [&](auto tag) {
      using T = decltype(tag);
      reduceKernel<T, Targets><<<gridFor(updateCount), kThreadsPerBlock, 0, stream>>>(
          static_cast<const T*>(updates), static_cast<T*>(dst), elementTargets, indices, reduction, errorFlag);
      return launchStatus();
    });
  }
  int32_t* winners = nullptr;
  const int64_t winnerBytes = slots * int64_t(sizeof(int32_t));
  if (workspace && slots > 0) {
    if (workspaceBytes < size_t(winnerBytes)) return cudaErrorInvalidValue;
    winners = static_cast<int32_t*>(workspace);
    if (const cudaError_t status = cudaMemsetAsync(winners, 0xFF, size_t(winnerBytes), stream); status != cudaSuccess)
      return status;  // every slot starts at -1: unclaimed
    claimKernel<Targets>
        <<<gridFor(updateCount), kThreadsPerBlock, 0, stream>>>(unitTargets, indices, winners, errorFlag);
    if (const cudaError_t status = launchStatus(); status != cudaSuccess) return status;
  }
  return dispatchCopyUnit(unitBytes, [&](auto tag) {
    using Unit = decltype(tag);
    writeKernel<Unit, Targets><<<gridFor(updateCount), kThreadsPerBlock, 0, stream>>>(
        static_cast<const Unit*>(updates), static_cast<Unit*>(dst), unitTargets, indices, winners, errorFlag);
    return launchStatus();
  });
}

bool reductionTakes(ScatterReduction reduction, ElementType type) {
  return reduction == ScatterReduction::kNone ||
         (type != ElementType::kBool && type != ElementType::kFloat8E4M3 && type != ElementType::kFloat8E5M2);
}

}  // namespace

size_t scatterNDWorkspaceBytes(const std::vector<int64_t>& dataDims, const std::vector<int64_t>& indexDims,
                               ScatterReduction reduction) {
  const auto g = tupleGeometry(dataDims, indexDims, 0);
  if (!g || g->sliceElements == 0) return 0;
  return size_t(winnerSlots(countOf(dataDims) / g->sliceElements, g->tupleCount, reduction)) * sizeof(int32_t);
}

size_t scatterElementsWorkspaceBytes(const std::vector<int64_t>& dataDims, const std::vector<int64_t>& indexDims,
                                     ScatterReduction reduction) {
  return size_t(winnerSlots(countOf(dataDims), countOf(indexDims), reduction)) * sizeof(int32_t);
}

cudaError_t scatterND(const void* data, const std::vector<int64_t>& dataDims, const void* indices,
                      const std::vector<int64_t>& indexDims, ElementType indexType, const void* updates, void* dst,
                      ScatterReduction reduction, ElementType type, void* workspace, size_t workspaceBytes,
                      int* errorFlag, cudaStream_t stream) {
  const auto g = tupleGeometry(dataDims, indexDims, 0);
  if (!g || !isIndexType(indexType) || !reductionTakes(reduction, type)) return cudaErrorInvalidValue;
  const int64_t e = int64_t(elementBytes(type)), dataCount = countOf(dataDims);
  TupleTargets elements{*g, g->sliceElements, 1}, units = elements;
  const int unit = copyUnitBytes(int(e), {g->sliceElements * e, addressOf(updates), addressOf(dst)});
  units.elementsPerUnit = unit / e;
  units.sliceUnits = g->sliceElements / units.elementsPerUnit;
  const int64_t updateCount =
      g->tupleCount * (reduction == ScatterReduction::kNone ? units.sliceUnits : g->sliceElements);
  const int64_t slots = g->sliceElements > 0 ? winnerSlots(dataCount / g->sliceElements, g->tupleCount, reduction) : 0;
  return runScatter(data, dataCount * e, updates, dst, indexReader(indices, indexType), reduction, type, units, unit,
                    elements, updateCount, slots, workspace, workspaceBytes, errorFlag, stream);
}

cudaError_t scatterElements(const void* data, const std::vector<int64_t>& dataDims, const void* indices,
                            const std::vector<int64_t>& indexDims, ElementType indexType, int axis, const void* updates,
                            void* dst, ScatterReduction reduction, ElementType type, void* workspace,
                            size_t workspaceBytes, int* errorFlag, cudaStream_t stream) {
  const auto g = axisGeometry(dataDims, indexDims, axis);
  if (!g || !isIndexType(indexType) || !reductionTakes(reduction, type)) return cudaErrorInvalidValue;
  const int64_t e = int64_t(elementBytes(type)), dataCount = countOf(dataDims), count = countOf(indexDims);
  const AxisTargets targets{*g, count};
  return runScatter(data, dataCount * e, updates, dst, indexReader(indices, indexType), reduction, type, targets,
                    int(e), targets, count, winnerSlots(dataCount, count, reduction), workspace, workspaceBytes,
                    errorFlag, stream);
}

}  // namespace kiln::kernels::cuda
