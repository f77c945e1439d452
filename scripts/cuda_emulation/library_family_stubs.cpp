// The CUDA backend's library families (cuBLASLt matmuls and recurrent input projections, cuDNN
// convolutions) register nothing in the emulated backend (run_backend.sh): their layers run on the
// CPU there, except the convolutions Kiln's small-channel kernel takes (fp16 / bf16, static dims,
// at most 8 input channels: ResNet's stem), which have only that tactic. kiln.Attention has only
// its fused flash tactics (fp16 / bf16 / tf32; its two-product step is cuBLASLt's): fp32 layers run
// on the CPU.
#include "backends/cuda/cuda_ops.h"

#include <cublasLt.h>
#include <cudnn.h>
#include "backends/cuda/ops/cuda_flash_attention.h"
#include "backends/cuda/ops/conv_plan.h"
#include "backends/cuda/ops/small_channel_conv.h"
#include "ops/fused.h"

// The backend names the libraries' versions (timing-cache keys); none is linked here.
extern "C" size_t cublasLtGetVersion() { return 0; }
extern "C" size_t cudnnGetVersion() { return 0; }

namespace kiln::cuda {
void registerMatMulCudaOps(CudaOpRegistry&) {}
void registerConvCudaOps(CudaOpRegistry& registry) {
  auto inputsOf = [](const LayerSignature& signature) {
    LayerInputs inputs;
    for (const Tensor* t : signature.inputs) {
      inputs.types.push_back(t ? t->dtype : DataType::kUndefined);
      inputs.dims.push_back(t && t->shape.hasRank() && t->shape.isFullyKnown() ? t->shape.knownDims()
                                                                               : std::vector<int64_t>{});
    }
    inputs.weights = signature.weights();
    return inputs;
  };
  CudaOp op;
  op.supports = [inputsOf](const Layer& layer, Precision precision, const LayerSignature& signature) -> SupportVerdict {
    if (smallChannelConvTactics(layer, precision, inputsOf(signature)).empty())
      return {false, "the emulated backend runs only the small-channel convolution tactic"};
    return {};
  };
  op.instantiate = makeSmallChannelConvStep;
  op.tactics = [](const Layer& layer, Precision precision, const LayerInputs& inputs, CudaDevice&) {
    return smallChannelConvTactics(layer, precision, inputs);
  };
  op.channelsLastInputs = [](const Layer&, const std::string&) -> std::vector<size_t> { return {kConvX}; };
  registry.add("Conv", op);
  registry.add(fused::kDomain, fused::kFusedConv, op);
  registry.add(fused::kDomain, fused::kFusedConvPool, op);  // the small-channel kernel pools too
}
void registerRecurrentCudaOps(CudaOpRegistry&) {}
void registerAttentionCudaOps(CudaOpRegistry& registry) {
  CudaOp op;
  op.supports = [](const Layer&, Precision precision, const LayerSignature&) -> SupportVerdict {
    if (precision == Precision::kFP16 || precision == Precision::kBF16 || precision == Precision::kTF32) return {};
    return {false, "the emulated backend runs only the flash tactics (fp16, bf16, tf32)"};
  };
  op.instantiate = makeFlashAttentionStep;
  op.tactics = flashAttentionTactics;
  registry.add(fused::kDomain, fused::kAttention, op);
}
}  // namespace kiln::cuda
