#pragma once
// kiln.WeightOnlyMatMul's CUDA tactics: the packed weights dequantized into the workspace, then
// cuBLASLt (cuda_weight_only.cpp, which registers the op), and the fused int4 GEMM that
// dequantizes in its prologue (cuda_int4_fused_gemm.cpp; fp16 / bf16 on sm_80 on). The builder
// times both. Shared here: the layer's inputs and dims, and the check of its constant weights.
#include "../../backend.h"
#include "../cuda_device.h"

#include <kiln/host_tensor.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace kiln::cuda {

// Inputs 0-3 as kiln.FusedMatMul's (ops/weight_only.h): A, the packed weights, bias, residual.
inline constexpr size_t kInt4A = 0, kInt4Packed = 1, kInt4Bias = 2, kInt4Residual = 3;

struct Int4Dims {
  int64_t k = 0, n = 0, groupSize = 0;
};
Int4Dims int4DimsOf(const Layer& layer);

// Throws kInvalidArgument naming the layer unless the packed weights, scales and (when the layer
// has them) zero points are the constant uint8, float32 and int8 tensors K, N and the group size
// call for.
void checkInt4Weights(const Layer& layer, const Int4Dims& dims, const HostTensor* packed, const HostTensor* scales,
                      const HostTensor* zeros);

// The layer's constant bias [N] on the device in `type`, or an empty copy where it has none; throws
// kInvalidArgument naming the layer when the bias is not N constant values.
DeviceCopy int4BiasOf(const Layer& layer, const Int4Dims& dims, const HostTensor* bias, DataType type,
                      CudaDevice& device);

// The rows of A [..., K]; throws kInvalidArgument naming the layer when A's last dim is not K.
int64_t int4RowsOf(const Layer& layer, const Int4Dims& dims, const TensorView& a);

// "cuda.matmul.int4_fused_gemm.<fp16|bf16>" for fp16 / bf16 layers on sm_80 or later; none otherwise.
std::vector<Tactic> int4FusedGemmTactics(const Layer& layer, Precision precision, const LayerInputs& inputs,
                                         CudaDevice& device);
bool isInt4FusedGemmTactic(const Tactic& tactic);
std::unique_ptr<Step> makeInt4FusedGemmStep(const Layer& layer, const Tactic& tactic, const LayerSignature& signature,
                                            CudaDevice& device);

}  // namespace kiln::cuda
