// The CUDA backend's library families (cuBLASLt matmuls and recurrent input projections, cuDNN
// convolutions) register nothing in the emulated backend (run_backend.sh): their layers run on the
// CPU there. kiln.Attention has only
// its fused flash tactics (fp16 / bf16; its two-product step is cuBLASLt's): fp32 layers run on the
// CPU.
#include "backends/cuda/cuda_ops.h"

#include <cublasLt.h>
#include <cudnn.h>
#include "backends/cuda/ops/cuda_flash_attention.h"
#include "ops/fused.h"

// The backend names the libraries' versions (timing-cache keys); none is linked here.
extern "C" size_t cublasLtGetVersion() { return 0; }
extern "C" size_t cudnnGetVersion() { return 0; }

namespace kiln::cuda {
void registerMatMulCudaOps(CudaOpRegistry&) {}
void registerConvCudaOps(CudaOpRegistry&) {}
void registerRecurrentCudaOps(CudaOpRegistry&) {}
void registerAttentionCudaOps(CudaOpRegistry& registry) {
  CudaOp op;
  op.supports = [](const Layer&, Precision precision, const LayerSignature&) -> SupportVerdict {
    if (precision == Precision::kFP16 || precision == Precision::kBF16) return {};
    return {false, "the emulated backend runs only the flash tactics (fp16, bf16)"};
  };
  op.instantiate = makeFlashAttentionStep;
  op.tactics = flashAttentionTactics;
  registry.add(fused::kDomain, fused::kAttention, op);
}
}  // namespace kiln::cuda
