#pragma once
// Gather, GatherElements and GatherND on the GPU (ONNX semantics). Any data dtype, moved by size;
// indices int32 or int64, negative ones counting from the end. An index still out of range reads
// nothing: its output elements are written as zero and *errorFlag (a device int, may be null) is
// set to 1. Asynchronous; no allocation; empty outputs are a no-op.
#include <kernels/cuda/common/element_type.h>

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

namespace kiln::kernels::cuda {

// Gather along `axis`: output is data.dims[:axis] + indices.dims + data.dims[axis+1:]; indexCount
// is the element count of indices.
cudaError_t gather(const void* data, const std::vector<int64_t>& dataDims, const void* indices, int64_t indexCount,
                   ElementType indexType, int axis, void* dst, ElementType type, int* errorFlag, cudaStream_t stream);

// GatherElements: output has indexDims (same rank as data; no larger than data off the axis).
cudaError_t gatherElements(const void* data, const std::vector<int64_t>& dataDims, const void* indices,
                           const std::vector<int64_t>& indexDims, ElementType indexType, int axis, void* dst,
                           ElementType type, int* errorFlag, cudaStream_t stream);

// GatherND with batch_dims: output is indexDims[:-1] + dataDims[batchDims + indexDims[-1]:].
cudaError_t gatherND(const void* data, const std::vector<int64_t>& dataDims, const void* indices,
                     const std::vector<int64_t>& indexDims, ElementType indexType, int batchDims, void* dst,
                     ElementType type, int* errorFlag, cudaStream_t stream);

}  // namespace kiln::kernels::cuda
