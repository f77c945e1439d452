#pragma once
// Reductions on the GPU with the CPU kernels' enums and semantics (kernels/cpu/reduce/reduce.h):
// ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSum/LogSumExp/SumSquare over any set of axes, ArgMax and
// ArgMin, CumSum and TopK. Dense tensors on the device, any numeric type (float16 and bfloat16
// accumulate in float, float64 in double, integers in their own type with wrap-around). Every call
// enqueues on `stream` and returns the launch status, or cudaErrorInvalidValue for a type or
// arguments it does not take. Nothing is allocated: a launch that needs scratch takes a workspace
// of at least the size its query returns (the query may answer 0; the pointer may then be null).
#include "kernels/cpu/reduce/reduce.h"
#include "kernels/cuda/common/element_type.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kiln::kernels::cuda {

// out[kept dims] = reduction of in over the dims where reduced[d] is true, the kept dims in order
// (keepdims only changes the shape the caller reports; noop_with_empty_axes is the caller's copy).
// An empty reduction gives the identity (0, 1, lowest, highest; LogSum/LogSumExp -inf). Few
// outputs of long reductions are split over many blocks, which takes a workspace.
size_t reduceWorkspaceBytes(kernels::ReduceKind kind, const std::vector<int64_t>& dims,
                            const std::vector<bool>& reduced, ElementType type);
cudaError_t launchReduce(kernels::ReduceKind kind, const void* in, void* out, const std::vector<int64_t>& dims,
                         const std::vector<bool>& reduced, ElementType type, void* workspace, size_t workspaceBytes,
                         cudaStream_t stream);

// int64 index of the largest (or smallest) element along the middle axis of [outer, n, inner]
// (n >= 1), written as [outer, inner]. Ties go to the first index, or the last with selectLast;
// as on the CPU, NaN is skipped except at index 0, where it wins.
cudaError_t launchArgExtreme(const void* in, int64_t* out, int64_t outer, int64_t n, int64_t inner, bool largest,
                             bool selectLast, ElementType type, cudaStream_t stream);

// Running sums along the middle axis of [outer, n, inner]; `exclusive` leaves out the element
// itself, `reverse` sums from the end.
cudaError_t launchCumSum(const void* in, void* out, int64_t outer, int64_t n, int64_t inner, bool exclusive,
                         bool reverse, ElementType type, cudaStream_t stream);

// The k (<= n) largest or smallest elements along the middle axis of [outer, n, inner], sorted
// (largest: descending), ties to the lower index, NaN above every number (as NumPy and the CPU
// kernel); values [outer, k, inner] of `type`, indices int64.
size_t topKWorkspaceBytes(int64_t outer, int64_t n, int64_t inner, int64_t k);
cudaError_t launchTopK(const void* in, void* values, int64_t* indices, int64_t outer, int64_t n, int64_t inner,
                       int64_t k, bool largest, ElementType type, void* workspace, size_t workspaceBytes,
                       cudaStream_t stream);

}  // namespace kiln::kernels::cuda
