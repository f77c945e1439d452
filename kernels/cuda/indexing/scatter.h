#pragma once
// ScatterND and ScatterElements on the GPU (ONNX semantics): dst is data with updates written or
// combined at the indexed places. Indices are int32 or int64 (negative ones count from the end);
// an update whose index is out of range is skipped and sets *errorFlag (a device int, may be null)
// to 1. data may be dst (in place); otherwise data is first copied into dst on the stream.
//
// Duplicate indices: ONNX leaves reduction 'none' undefined for them. Given a workspace
// (...WorkspaceBytes), the last update in index order wins, as on the CPU, deterministically;
// without one, some update wins. The reductions combine with atomics: exact for integers, max and
// min; float add / mul results with duplicates depend on the order the atomics land in (rounding).
// Reduction 'none' takes any dtype (by size); the reductions take the numeric types.
// Asynchronous; no allocation; empty updates only copy data.
#include <kernels/cuda/common/element_type.h>

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kiln::kernels::cuda {

enum class ScatterReduction { kNone, kAdd, kMul, kMax, kMin };

// indices [..., k] (k <= data rank); updates are indexDims[:-1] + dataDims[k:].
cudaError_t scatterND(const void* data, const std::vector<int64_t>& dataDims, const void* indices,
                      const std::vector<int64_t>& indexDims, ElementType indexType, const void* updates, void* dst,
                      ScatterReduction reduction, ElementType type, void* workspace, size_t workspaceBytes,
                      int* errorFlag, cudaStream_t stream);
// Bytes of workspace that make reduction 'none' deterministic (0 when it needs none).
size_t scatterNDWorkspaceBytes(const std::vector<int64_t>& dataDims, const std::vector<int64_t>& indexDims,
                               ScatterReduction reduction);

// indices and updates have indexDims (the data's rank; no larger than data off the axis).
cudaError_t scatterElements(const void* data, const std::vector<int64_t>& dataDims, const void* indices,
                            const std::vector<int64_t>& indexDims, ElementType indexType, int axis, const void* updates,
                            void* dst, ScatterReduction reduction, ElementType type, void* workspace,
                            size_t workspaceBytes, int* errorFlag, cudaStream_t stream);
size_t scatterElementsWorkspaceBytes(const std::vector<int64_t>& dataDims, const std::vector<int64_t>& indexDims,
                                     ScatterReduction reduction);

}  // namespace kiln::kernels::cuda
