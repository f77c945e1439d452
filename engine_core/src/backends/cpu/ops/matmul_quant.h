#pragma once
// Pieces of the matmul_quant family's CPU kernels shared between its files.
#include "../../common/matmul_geometry.h"
#include "../cpu_kernel.h"
#include "../dispatch.h"

#include <cstdint>
#include <vector>

namespace kiln {

// A NumPy-style matmul of A [..., M, K] by B [..., K, N] (1-D operands promoted and squeezed) as
// batched products: entry i multiplies A + aOffsets[i] by B + bOffsets[i] into output block i
// (the offsets of matMulGeometry's batch, output blocks in order).
struct MatMulPlan {
  int64_t M = 1, N = 1, K = 1;
  std::vector<int64_t> aOffsets, bOffsets;
};
MatMulPlan planMatMul(std::vector<int64_t> aDims, std::vector<int64_t> bDims);

// The element types kernels::gemm / batchedMatMul / einsum are built for.
template <class Fn>
void dispatchGemmType(DataType type, Fn&& fn) {
  switch (type) {
    case DataType::kFloat32: return fn(float{});
    case DataType::kFloat64: return fn(double{});
    case DataType::kFloat16: return fn(Float16{});
    case DataType::kBFloat16: return fn(BFloat16{});
    case DataType::kInt32: return fn(int32_t{});
    case DataType::kInt64: return fn(int64_t{});
    case DataType::kUInt32: return fn(uint32_t{});
    case DataType::kUInt64: return fn(uint64_t{});
    default: detail::throwUnsupportedType(type, "float or 32/64-bit integer");
  }
}

// uint8 and int8, the quantized matmul operand types.
template <class Fn>
void dispatchEightBit(DataType type, Fn&& fn) {
  if (type == DataType::kUInt8) return fn(uint8_t{});
  if (type == DataType::kInt8) return fn(int8_t{});
  detail::throwUnsupportedType(type, "uint8 or int8");
}

void registerEinsumCpuKernel(CpuKernelRegistry& registry);
void registerQuantizeCpuKernels(CpuKernelRegistry& registry);

}  // namespace kiln
