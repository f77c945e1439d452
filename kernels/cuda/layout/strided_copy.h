#pragma once
// Dense-from-strided copies on the GPU: the workhorse behind Transpose, Slice, Expand, Tile,
// DepthToSpace and SpaceToDepth. Every dtype is moved by its size (bool and fp8 included). All
// functions are asynchronous on `stream`, allocate nothing, return cudaErrorInvalidValue for
// arguments the op does not take and the launch status otherwise; an empty output is a no-op.
// Dims and strides are in elements; src and dst are device pointers.
#include "strided_plan.h"

#include <kernels/cuda/common/element_type.h>

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

namespace kiln::kernels::cuda {

// dst is dense row-major with `dims`; its element (i0..in) is src[sum(i_d * srcStrides[d])].
// Strides may be zero (broadcast) or negative (reversed); src points at element (0, ..., 0).
cudaError_t copyStrided(const void* src, void* dst, const std::vector<int64_t>& dims,
                        const std::vector<int64_t>& srcStrides, ElementType type, cudaStream_t stream);
cudaError_t copyStrided(const void* src, void* dst, const StridedView& view, ElementType type, cudaStream_t stream);

// Output axis d is input axis perm[d].
cudaError_t transpose(const void* src, void* dst, const std::vector<int64_t>& dims, const std::vector<int64_t>& perm,
                      ElementType type, cudaStream_t stream);
// Resolved Slice (see sliceView): starts and steps per axis, steps may be negative.
cudaError_t slice(const void* src, void* dst, const std::vector<int64_t>& inDims, const std::vector<int64_t>& starts,
                  const std::vector<int64_t>& steps, const std::vector<int64_t>& outDims, ElementType type,
                  cudaStream_t stream);
cudaError_t expand(const void* src, void* dst, const std::vector<int64_t>& inDims, const std::vector<int64_t>& outDims,
                   ElementType type, cudaStream_t stream);
cudaError_t tile(const void* src, void* dst, const std::vector<int64_t>& inDims, const std::vector<int64_t>& repeats,
                 ElementType type, cudaStream_t stream);
// 4-D NCHW input [n, c, h, w] -> [n, c / b^2, h * b, w * b].
cudaError_t depthToSpace(const void* src, void* dst, const std::vector<int64_t>& inDims, int64_t blocksize,
                         DepthToSpaceMode mode, ElementType type, cudaStream_t stream);
// 4-D NCHW input [n, c, h, w] -> [n, c * b^2, h / b, w / b].
cudaError_t spaceToDepth(const void* src, void* dst, const std::vector<int64_t>& inDims, int64_t blocksize,
                         ElementType type, cudaStream_t stream);

}  // namespace kiln::kernels::cuda
