#pragma once
// Broadcasting elementwise ops on the GPU with the CPU kernels' op enum and semantics
// (kernels/cpu/elementwise/binary.h). Each input's dims broadcast (numpy rules, right-aligned) to
// outDims, the caller's inferred output shape (rank at most kMaxRank); all tensors are dense and
// on the device. Every call enqueues on `stream` and returns the launch status, or
// cudaErrorInvalidValue for a type the op does not take or dims that do not broadcast. An empty
// output does nothing. The output may alias an input that has the output's dims.
#include "kernels/cpu/elementwise/binary.h"
#include "kernels/cuda/common/element_type.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

namespace kiln::kernels::cuda {

// `type` is the inputs' type. Arithmetic ops write `type`: Add, Sub, Mul, Div, Min, Max, FMod,
// PRelu (b is the slope) on every numeric type; Mod and the bitwise ops and shifts on integers.
// Comparisons (every numeric type) and And/Or/Xor (bool) write bool; Equal also takes bool.
cudaError_t launchBinary(kernels::BinaryOp op, const void* a, const std::vector<int64_t>& aDims, const void* b,
                         const std::vector<int64_t>& bDims, void* out, const std::vector<int64_t>& outDims,
                         ElementType type, cudaStream_t stream);

// Pow: out has the base's type (float32, float16, bfloat16, float64, int32, int64); the exponent
// may be any numeric type. Integer powers of integers are exact (wrapping), other mixes go
// through float or double as on the CPU.
cudaError_t launchPow(const void* base, const std::vector<int64_t>& baseDims, ElementType baseType,
                      const void* exponent, const std::vector<int64_t>& exponentDims, ElementType exponentType,
                      void* out, const std::vector<int64_t>& outDims, cudaStream_t stream);

// Where: out = condition ? x : y; condition is bool, x, y and out are `type` (any type: only moved).
cudaError_t launchWhere(const void* condition, const std::vector<int64_t>& conditionDims, const void* x,
                        const std::vector<int64_t>& xDims, const void* y, const std::vector<int64_t>& yDims, void* out,
                        const std::vector<int64_t>& outDims, ElementType type, cudaStream_t stream);

// Sum, Mean, Min, Max of one or more inputs (numeric `type`), folded pairwise into out as the CPU
// does (so float16 rounds after each step); Mean then divides by the count in `type`. out may
// alias inputs[0] when that has the output's dims, no other input.
enum class VariadicOp : uint8_t { kSum, kMean, kMin, kMax };
cudaError_t launchVariadic(VariadicOp op, const std::vector<const void*>& inputs,
                           const std::vector<std::vector<int64_t>>& inputDims, void* out,
                           const std::vector<int64_t>& outDims, ElementType type, cudaStream_t stream);

}  // namespace kiln::kernels::cuda
