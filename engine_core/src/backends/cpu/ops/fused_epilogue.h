#pragma once
// Reading a fused layer's epilogue (kiln.FusedConv / kiln.FusedMatMul attributes, residual input),
// shared by the fused kernels and the convolution tactics.
#include <kernels/cpu/fused/epilogue.h>

#include "../cpu_kernel.h"

namespace kiln {

// Input i as float32 data with `expectedCount` elements; fails naming `what` otherwise.
const float* float32Input(const KernelContext& ctx, size_t i, int64_t expectedCount, const char* what);

// The activation and residual (input 3) of a fused layer whose output is `out`; the bias is the
// caller's (its layout depends on the base op).
kernels::Epilogue readEpilogue(const KernelContext& ctx, const HostTensor& out);
// The same with the residual's float32 values given (null: input 3 as it is), e.g. a quantized
// layer's int8 residual dequantized.
kernels::Epilogue readEpilogue(const KernelContext& ctx, const HostTensor& out, const float* residualValues);

}  // namespace kiln
