#pragma once
// How the CUDA backend's kiln.QuantizedConv / QuantizedMatMul steps (cuda_quantized.cpp) map an
// int8 or fp8 layer onto one 8-bit cuBLASLt product D[rows, N] = X'[rows, K] · W'[N, K]ᵀ: the
// constant weights as W' (a convolution's in im2col order), dims padded to 16 (what cuBLASLt's
// int8 and fp8 kernels need; the padding holds zero weights), the per-channel multipliers, bias and
// zero-point corrections of the dequantizing epilogue, and how the activation is quantized on
// entry (kernels/cuda/quant/quantized_gemm.h). Plain host code: tests/cuda_plans checks it against
// the CPU kernels' arithmetic.
#include "../../backend.h"
#include "../../common/fused_epilogue.h"

#include <kernels/cuda/quant/quantized_gemm.h>

#include <cublasLt.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kiln::cuda {

// cuBLASLt's 8-bit products want every dim and leading dimension a multiple of 16 bytes.
inline constexpr int64_t kQuantizedGemmAlignment = 16;

struct QuantizedGemmPlan {
  bool conv = false;
  bool fp8 = false;
  int64_t channels = 0, paddedChannels = 0;  // N (output channels / columns)
  int64_t depth = 0, paddedDepth = 0;        // K (C·KH·KW for a convolution)
  int64_t kernelH = 1, kernelW = 1;          // a convolution's window
  std::vector<uint8_t> weights;              // W' [paddedChannels, paddedDepth]: int8 values or e4m3 codes
  std::vector<float> multipliers;            // [channels]: x_scale · w_scale[c]
  std::vector<int32_t> correction;           // [channels], int8 with zero points (see quantized_gemm.h); or empty
  std::vector<float> bias;                   // [channels] or empty
  kernels::cuda::OperandQuantization activation;
  FusedEpilogue epilogue;  // the layer's activation and where its residual goes
  float outputScale = 1;   // of an int8 / uint8 / fp8 output
  int32_t outputZero = 0;
  bool int8Residual = false;  // the residual is int8, added as float(r_q) * residualScale
  float residualScale = 1;
};

// Why the CUDA kernels cannot run this quantized layer with these tensors (its weights, scales,
// zero points and bias must be constants; a convolution 2-D with one group; a matmul's B constant
// weights), or nullopt when they can.
std::optional<std::string> quantizedGemmRefusal(const Layer& layer, const LayerSignature& tensors);

// The plan of a layer that quantizedGemmRefusal accepts; `weights` are its constant inputs.
// Throws kiln::Error naming the layer for values the schema let through but the kernels cannot
// take.
QuantizedGemmPlan planQuantizedGemm(const Layer& layer, const LayerWeights& weights, DataType xType);

// The cuBLASLt epilogue that takes the whole dequantization of an fp8 layer into its product
// (per-column scales, bias, Relu / tanh GELU, a residual before the activation as C), writing the
// fp16 / bf16 output directly; nullopt where it cannot (int8: cuBLASLt has no int8 product with a
// float output; an output scale; another activation; channels not a multiple of 16).
std::optional<cublasLtEpilogue_t> fusedFp8Epilogue(const QuantizedGemmPlan& plan, bool hasResidual,
                                                   bool quantizedOutput);

// The constant inputs the plan turns into its own arrays (weights, bias, scales, zero points): the
// steps upload those, not the inputs (CudaStep's ownCopies).
const std::vector<size_t>& quantizedPlannedInputs();

// A dim rounded up to kQuantizedGemmAlignment.
inline int64_t paddedDim(int64_t n) {
  return (n + kQuantizedGemmAlignment - 1) / kQuantizedGemmAlignment * kQuantizedGemmAlignment;
}

}  // namespace kiln::cuda
