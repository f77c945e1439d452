#pragma once
// Block-level folds for the reduce, softmax and norm kernels. A block holds groups of `lanes`
// threads (a power of two) that fold one value each; lanes of a group sit `laneStride` apart in
// the block's thread order (1 when they run along x, blockDim.x when along y). Every thread of the
// block must call, since the fold synchronises the block.
#include <cuda_runtime.h>

namespace kiln::kernels::cuda {

// Folds `value` over the group with op; every lane gets the result. `shared` holds one slot per
// thread of the block.
template <class V, class Op>
__device__ V groupFold(V value, V* shared, int groupBase, int lane, int lanes, int laneStride, Op op) {
  const int slot = groupBase + lane * laneStride;
  shared[slot] = value;
  __syncthreads();
  for (int half = lanes / 2; half > 0; half /= 2) {
    if (lane < half) shared[slot] = op(shared[slot], shared[slot + half * laneStride]);
    __syncthreads();
  }
  const V result = shared[groupBase];
  __syncthreads();  // the slots are free again when this returns
  return result;
}

// Folds over all threads of a one-dimensional block (a power of two threads); every thread gets
// the result.
template <class V, class Op>
__device__ V blockFold(V value, V* shared, Op op) {
  return groupFold(value, shared, 0, int(threadIdx.x), int(blockDim.x), 1, op);
}

// Folds over the 32 lanes of a warp (all active); every lane gets the result. V is a type
// __shfl_xor_sync takes (int, unsigned, long long, float, double, ...).
template <class V, class Op>
__device__ __forceinline__ V warpFold(V value, Op op) {
  for (int offset = 16; offset > 0; offset /= 2) value = op(value, __shfl_xor_sync(0xFFFFFFFFu, value, offset));
  return value;
}

}  // namespace kiln::kernels::cuda
