#pragma once
// Einsum on the GPU as one direct contraction: a thread per output element sums the product of
// the operands over every label the output does not keep. Each operand is read through strides
// per label (a label repeated in an operand adds its strides: a diagonal; a dim of 1 against a
// larger label broadcasts with stride 0), so transposes, diagonals, sums and products need no
// copies. O(output · summed) work: meant for the small contractions models and tests use.
#include <kernels/cpu/gemm/einsum.h>
#include <kernels/cuda/common/element_type.h>

#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::kernels::cuda {

constexpr int kEinsumMaxOperands = 4;
constexpr int kEinsumMaxLabels = 12;  // kept and summed labels, each

struct EinsumContraction {
  int operands = 0;
  int kept = 0, summed = 0;
  int64_t keptSizes[kEinsumMaxLabels] = {}, summedSizes[kEinsumMaxLabels] = {};
  int64_t keptStrides[kEinsumMaxOperands][kEinsumMaxLabels] = {};
  int64_t summedStrides[kEinsumMaxOperands][kEinsumMaxLabels] = {};
  int64_t outputCount = 1, summedCount = 1;
};

// The contraction of a parsed equation for operands of these dims (row-major, dense). Returns ""
// or why it cannot be one (too many operands or labels, sizes that do not broadcast).
std::string planEinsum(const EinsumEquation& equation, const std::vector<std::vector<int64_t>>& inputDims,
                       EinsumContraction& out);

// out [output elements] in the order of the equation's output labels. float32, float16, bfloat16
// (fp32 accumulation), float64, int32, int64, uint32, uint64.
cudaError_t einsum(const void* const* operands, void* out, const EinsumContraction& contraction, ElementType type,
                   cudaStream_t stream);

}  // namespace kiln::kernels::cuda
