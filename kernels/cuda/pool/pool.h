#pragma once
// Pooling on the GPU with the CPU kernels' semantics (kernels/cpu/pool): MaxPool (optional int64
// Indices, storage_order), AveragePool (count_include_pad), LpPool, and the global pools; any
// kernel, stride, dilation and asymmetric padding (makePoolWindow applies auto_pad and ceil_mode);
// 1-, 2- and 3-D; channels-first (NCHW) or channels-last (NHWC) tensors. float16 and bfloat16
// accumulate in float, float64 in double. Asynchronous; no allocation; empty outputs are a no-op.
#include "pool_window.h"

#include <kernels/cuda/common/element_type.h>

#include <cuda_runtime.h>

#include <cstdint>

namespace kiln::kernels::cuda {

// x is [batch, channels, D, H, W] (channels-first) or [batch, D, H, W, channels] (channels-last)
// with the window's input dims; y likewise with its output dims. Types: float32, float16,
// bfloat16, float64, and int8 / uint8 for MaxPool. `indices` (may be null) receives, per output and
// in y's order, the flat index of the chosen element in the logical NC(D)HW input: row-major, or
// column-major within a plane when columnMajorIndices (storage_order = 1). A window with no tap in
// the image gives the type's lowest value and index plane * inSize, as on the CPU.
cudaError_t maxPool(const void* x, void* y, int64_t* indices, bool columnMajorIndices, int64_t batch, int64_t channels,
                    const PoolWindow& window, PoolLayout layout, ElementType type, cudaStream_t stream);

// Mean over the window; the divisor counts padding taps too when countIncludePad.
cudaError_t averagePool(const void* x, void* y, int64_t batch, int64_t channels, const PoolWindow& window,
                        bool countIncludePad, PoolLayout layout, ElementType type, cudaStream_t stream);

// (sum |x|^p)^(1/p) over the in-image taps.
cudaError_t lpPool(const void* x, void* y, int64_t batch, int64_t channels, const PoolWindow& window, float p,
                   PoolLayout layout, ElementType type, cudaStream_t stream);

enum class GlobalPoolKind { kAverage, kMax, kLp };

// One value per (batch, channel) over `spatial` elements: y is [batch, channels] in either layout.
// Types: float32, float16, bfloat16, float64. With `workspace` of globalPoolWorkspaceBytes (16-byte
// aligned), a launch that would have few blocks (few images) splits each image's positions over
// more blocks and adds their partial results in a second kernel; without it, it runs unsplit.
cudaError_t globalPool(GlobalPoolKind kind, const void* x, void* y, int64_t batch, int64_t channels, int64_t spatial,
                       float p, PoolLayout layout, ElementType type, cudaStream_t stream, void* workspace = nullptr,
                       uint64_t workspaceBytes = 0);
// The workspace globalPool can use at these dims: 0 where it would not split.
uint64_t globalPoolWorkspaceBytes(int64_t batch, int64_t channels, int64_t spatial, PoolLayout layout,
                                  ElementType type);

// Sums of channels-last x [batch, spatial, channels] over its positions, left unfinished in fp32 as
// [splits][batch][channels] for a kernel that finishes them itself (squeeze_excitation.h): the
// average pool's packed kernel without its finishing pass. globalSumSplits gives the splits it
// takes at these dims (its choice; 0 where the packed kernel does not take them: float64, channels
// not whole 16-byte vectors); globalSumPartials needs x 16-byte aligned and exactly those splits.
int64_t globalSumSplits(int64_t batch, int64_t channels, int64_t spatial, ElementType type);
cudaError_t globalSumPartials(const void* x, float* partials, int64_t batch, int64_t channels, int64_t spatial,
                              int64_t splits, ElementType type, cudaStream_t stream);

}  // namespace kiln::kernels::cuda
