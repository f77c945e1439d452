// The CUDA backend's library families (cuBLASLt matmuls, cuDNN convolutions, attention) register
// nothing in the emulated backend (run_backend.sh): their layers run on the CPU there.
#include "backends/cuda/cuda_ops.h"

namespace kiln::cuda {
void registerMatMulCudaOps(CudaOpRegistry&) {}
void registerConvCudaOps(CudaOpRegistry&) {}
void registerAttentionCudaOps(CudaOpRegistry&) {}
}  // namespace kiln::cuda
