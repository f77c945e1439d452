#pragma once
// NonZero, Compress, Unique and NonMaxSuppression on the GPU: the ops whose output size follows
// from the values they read. Each has a launch that counts on the device (the caller copies the
// count to the host, sizes the outputs, then launches the write) and orders its results as the CPU
// kernels do (kernels/cpu/layout/select, kernels/cpu/detection): positions in input order, stable
// sorts. No atomics; every launch is asynchronous and takes its scratch from the caller.
#include <kernels/cuda/common/element_type.h>

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

namespace kiln::kernels::cuda {

// --- NonZero: the coordinates of x's non-zero elements (NaN counts; -0.0 does not).
size_t nonZeroWorkspaceBytes(int64_t n);
// *count (device int64) = the non-zero elements among the n of x.
cudaError_t nonZeroCount(const void* x, ElementType type, int64_t n, void* workspace, int64_t* count,
                         cudaStream_t stream);
// After nonZeroCount with the same workspace: out[d * count + k] = coordinate d of the k-th
// non-zero element of x (dims; a scalar passes {1}), int64.
cudaError_t nonZeroWrite(const void* x, ElementType type, const std::vector<int64_t>& dims, int64_t count,
                         void* workspace, int64_t* out, cudaStream_t stream);

// --- Compress: the positions [0, n) whose condition byte is true, ascending.
size_t selectTrueWorkspaceBytes(int64_t n);
// selected[0, *count) = those positions (selected has room for n), *count on the device.
cudaError_t selectTrue(const bool* condition, int64_t n, void* workspace, int64_t* selected, int64_t* count,
                       cudaStream_t stream);

// --- Unique over slices along an axis: x seen as [outer, slices, inner]; slices compare
// lexicographically over (outer, inner) with the element type's order (bool as a byte, half and
// bfloat16 as float).
struct UniqueShape {
  int64_t outer = 1, slices = 0, inner = 1;
};
size_t uniqueWorkspaceBytes(const UniqueShape& shape);
// Sorts and groups the slices in the workspace; *groups (device int64) = the distinct slices.
cudaError_t uniqueGroup(const void* x, ElementType type, const UniqueShape& shape, bool sorted, void* workspace,
                        int64_t* groups, cudaStream_t stream);
// After uniqueGroup, with the group count on the host: first[groups] (the first occurrence of each
// output slice; may be null, then kept in the workspace), inverse[slices] and counts[groups] (each
// may be null), and y = the output slices, [outer, groups, inner].
cudaError_t uniqueWrite(const void* x, ElementType type, const UniqueShape& shape, int64_t groups, void* workspace,
                        int64_t* first, int64_t* inverse, int64_t* counts, void* y, cudaStream_t stream);

// --- NonMaxSuppression over boxes [batches, boxes, 4] and scores [batches, classes, boxes]
// (float32). maxPerClass, iouThreshold and scoreThreshold are device scalars (int64, float,
// float) and may be null (no boxes, 0, no threshold).
struct NmsShape {
  int64_t batches = 0, classes = 0, boxes = 0;
  bool centerPointBox = false;
};
size_t nmsWorkspaceBytes(const NmsShape& shape);
// Selects per batch and class in the workspace; *selected (device int64) = the triples in all.
cudaError_t nmsSelect(const float* boxes, const float* scores, const NmsShape& shape, const int64_t* maxPerClass,
                      const float* iouThreshold, const float* scoreThreshold, void* workspace, int64_t* selected,
                      cudaStream_t stream);
// After nmsSelect: out[selected, 3] = (batch, class, box), batch-major, then class, then selection order.
cudaError_t nmsWrite(const NmsShape& shape, void* workspace, int64_t* out, cudaStream_t stream);

}  // namespace kiln::kernels::cuda
