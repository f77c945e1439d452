#pragma once
// Normalisations on the GPU with the CPU kernels' semantics (kernels/cpu/norm/norm.h). x and y
// are dense device tensors of a float type (float16/bfloat16 compute in float, float64 in double);
// per-channel parameters and statistics are float32 device arrays, as on the CPU (the engine
// prepares them once: broadcast to the normalised shape, converted to float). Statistics are two
// passes in the compute type (mean, then mean squared deviation). Every call enqueues on `stream`
// and returns the launch status, or cudaErrorInvalidValue for arguments it does not take; empty
// tensors do nothing.
#include "kernels/cpu/norm/norm.h"
#include "kernels/cuda/common/element_type.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

namespace kiln::kernels::cuda {

// Normalises each of `rows` contiguous rows of `rowSize` to zero mean and unit variance, then
// applies `affine` (the CPU's RowAffine: device pointers, bias optional). With `residual` (same
// shape as x, may be null) the row normalised is x + residual rounded to the type, and `sumOut`
// (may be null; may alias x or residual) receives that sum: the fused "add, then normalise" of
// pre-norm transformer layers. rowMean / rowInvStdDev (may be null) receive each row's mean and
// 1 / sqrt(variance + epsilon).
cudaError_t launchNormalizeRows(int64_t rows, int64_t rowSize, const void* x, const void* residual, void* sumOut,
                                const kernels::RowAffine& affine, float epsilon, void* y, float* rowMean,
                                float* rowInvStdDev, ElementType type, cudaStream_t stream);

// LayerNormalization of x[outer, inner] (inner: the product of the dims from `axis` on); scale and
// bias (bias may be null) have `inner` elements; mean and invStdDev (may be null) `outer`.
cudaError_t launchLayerNormalization(const void* x, const void* residual, void* sumOut, const float* scale,
                                     const float* bias, int64_t outer, int64_t inner, float epsilon, void* y,
                                     float* mean, float* invStdDev, ElementType type, cudaStream_t stream);

// InstanceNormalization of x[batch, channels, spatial]; scale and bias per channel.
cudaError_t launchInstanceNormalization(const void* x, const float* scale, const float* bias, int64_t batch,
                                        int64_t channels, int64_t spatial, float epsilon, void* y, ElementType type,
                                        cudaStream_t stream);

// GroupNormalization of x[batch, channels, spatial] in `groups` groups (channels divisible by
// groups); scale and bias per channel (spread opset 18's per-group parameters over their channels).
cudaError_t launchGroupNormalization(const void* x, const float* scale, const float* bias, int64_t batch,
                                     int64_t channels, int64_t spatial, int64_t groups, float epsilon, void* y,
                                     ElementType type, cudaStream_t stream);

// BatchNormalization (inference) of x[batch, channels, spatial] with given statistics.
cudaError_t launchBatchNormalization(const void* x, const float* scale, const float* bias, const float* mean,
                                     const float* variance, int64_t batch, int64_t channels, int64_t spatial,
                                     float epsilon, void* y, ElementType type, cudaStream_t stream);

// LRN across the channels of x[batch, channels, spatial] (size >= 1: the window length).
cudaError_t launchLocalResponseNormalization(const void* x, int64_t batch, int64_t channels, int64_t spatial,
                                             int64_t size, float alpha, float beta, float bias, void* y,
                                             ElementType type, cudaStream_t stream);

// LpNormalization: x[outer, axis, inner] divided by its L1 (p = 1) or L2 (p = 2) norm along the
// middle axis; a zero norm gives 0.
cudaError_t launchLpNormalization(const void* x, int64_t outer, int64_t axis, int64_t inner, int64_t p, void* y,
                                  ElementType type, cudaStream_t stream);

// MeanVarianceNormalization: y = (x - mean) / (sqrt(variance) + 1e-9), statistics over the dims
// where reduced[d] is true.
cudaError_t launchMeanVarianceNormalization(const void* x, const std::vector<int64_t>& dims,
                                            const std::vector<bool>& reduced, void* y, ElementType type,
                                            cudaStream_t stream);

}  // namespace kiln::kernels::cuda
