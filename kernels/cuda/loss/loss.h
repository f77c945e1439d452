#pragma once
// NegativeLogLikelihoodLoss on the GPU with the CPU kernel's enum and semantics
// (kernels/cpu/softmax/softmax.h): logProb [batch, classes, spatial], target [batch, spatial]
// (int32 or int64), an optional per-class weight; kNone writes the loss of every position, kSum
// and kMean one value (kMean divides by the total weight; both sum in double, in a fixed order).
// The CPU fails on a target that is neither a class index nor ignoreIndex; a kernel cannot, so
// such a position's loss is NaN (and so is a sum or mean over it) and nothing out of range is read.
// Float types (float16/bfloat16 read into float, float64 stays double); dense device tensors;
// asynchronous on `stream`. SoftmaxCrossEntropyLoss is launchSoftmax's kLogSoftmax over the
// classes, then this.
#include "kernels/cpu/softmax/softmax.h"
#include "kernels/cuda/common/element_type.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace kiln::kernels::cuda {

// Scratch for the partial sums of kSum and kMean (0 for kNone).
size_t nllLossWorkspaceBytes(int64_t batch, int64_t spatial, kernels::LossReduction reduction);

// `weight` may be null (every class weighs 1) and is of `type`; `ignoreIndex` is a host pointer or
// null. `workspace` holds at least nllLossWorkspaceBytes.
cudaError_t launchNllLoss(const void* logProb, const void* target, ElementType targetType, const void* weight,
                          void* loss, int64_t batch, int64_t classes, int64_t spatial,
                          kernels::LossReduction reduction, const int64_t* ignoreIndex, ElementType type,
                          void* workspace, size_t workspaceBytes, cudaStream_t stream);

}  // namespace kiln::kernels::cuda
