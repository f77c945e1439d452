#pragma once
// Softmax, LogSoftmax and Hardmax on the GPU along the middle axis of [outer, n, inner], with the
// CPU kernels' enum and semantics (kernels/cpu/softmax/softmax.h). Opset 13 and later normalise one
// axis (outer = product of the dims before it, inner = after); older opsets flatten [axis, rank)
// into one, so inner = 1 and n = the product of those dims, as the CPU's splitAtAxis. Float types
// (float16/bfloat16 compute in float, float64 in double); numerically stable (the row's maximum is
// subtracted first). Dense device tensors; asynchronous on `stream`; an empty tensor does nothing.
// `out` may be `in`: each element is read by the thread that writes it, after its line's reductions
// (kiln.Attention normalises its scores in place).
#include "kernels/cpu/softmax/softmax.h"
#include "kernels/cuda/common/element_type.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace kiln::kernels::cuda {

// Hardmax writes 1 at the first maximum of each line (NaN skipped; index 0 when the line has no
// value above -infinity) and 0 elsewhere.
cudaError_t launchSoftmax(kernels::SoftmaxKind kind, const void* in, void* out, int64_t outer, int64_t n,
                          int64_t inner, ElementType type, cudaStream_t stream);

}  // namespace kiln::kernels::cuda
