#pragma once
// kiln.FusedConvPool (a few-channel FusedConv and the MaxPool after it) on the GPU: Kiln's
// small-channel kernel with the pool in its epilogue where it takes the layer (fp16 / bf16), else
// the split form "cuda.convpool.split.<precision>": the FusedConv's cuDNN step into the workspace,
// then the pool kernel, both NCHW.
#include "../cuda_ops.h"

namespace kiln::cuda {

// The op for kiln.FusedConvPool, given the op kiln.FusedConv runs on (its cuDNN step is the split
// form's convolution).
CudaOp convPoolOp(const CudaOp& fusedConv);

}  // namespace kiln::cuda
