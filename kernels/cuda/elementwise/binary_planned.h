#pragma once
// The typed halves of launchBinary, split by op kind so that each .cu compiles in reasonable time:
// arithmetic in binary.cu, comparisons and logic in compare.cu. The plan is already made.
#include "broadcast_indexer.h"
#include "kernels/cpu/elementwise/binary.h"
#include "kernels/cuda/common/element_type.h"

#include <cuda_runtime.h>

namespace kiln::kernels::cuda {

cudaError_t launchArithmetic(kernels::BinaryOp op, const void* a, const void* b, void* out,
                             const BroadcastPlan<2>& plan, ElementType type, cudaStream_t stream);
cudaError_t launchPredicate(kernels::BinaryOp op, const void* a, const void* b, void* out,
                            const BroadcastPlan<2>& plan, ElementType type, cudaStream_t stream);

}  // namespace kiln::kernels::cuda
