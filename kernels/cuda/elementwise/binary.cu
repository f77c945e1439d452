// Broadcasting arithmetic kernels (one instantiation per op and type the op takes), the entry
// point of every two-input op, and the variadic Sum/Mean/Min/Max built on them.
#include "binary.h"
#include "binary_ops.h"
#include "binary_planned.h"
#include "elementwise_kernels.cuh"

#include <stdexcept>
#include <type_traits>

namespace kiln::kernels::cuda {
namespace {

template <class T>
struct DivideByFn {
  ComputeType<T> divisor;
  __device__ ComputeType<T> operator()(ComputeType<T> x) const { return BinaryFn<BinaryOp::kDiv>{}(x, divisor); }
};

}  // namespace

cudaError_t launchArithmetic(BinaryOp op, const void* a, const void* b, void* out, const BroadcastPlan<2>& plan,
                             ElementType type, cudaStream_t stream) {
  return dispatchNumeric(type, [&](auto tag) {
    using T = decltype(tag);
    cudaError_t status = cudaErrorInvalidValue;
    withBinaryOp(op, [&](auto opTag) {
      constexpr BinaryOp kOp = decltype(opTag)::value;
      if constexpr (binaryArithmeticTakes(kOp, std::is_integral_v<T>))
        status = mapPair(static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(out), plan,
                         BinaryFn<kOp>{}, stream);
    });
    return status;
  });
}

cudaError_t launchBinary(BinaryOp op, const void* a, const std::vector<int64_t>& aDims, const void* b,
                         const std::vector<int64_t>& bDims, void* out, const std::vector<int64_t>& outDims,
                         ElementType type, cudaStream_t stream) {
  BroadcastPlan<2> plan;
  try {
    plan = planBroadcast<2>(outDims, {&aDims, &bDims});
  } catch (const std::invalid_argument&) {
    return cudaErrorInvalidValue;
  }
  const bool predicate = binaryIsComparison(op) || binaryIsLogical(op) || type == ElementType::kBool;
  return predicate ? launchPredicate(op, a, b, out, plan, type, stream)
                   : launchArithmetic(op, a, b, out, plan, type, stream);
}

cudaError_t launchVariadic(VariadicOp op, const std::vector<const void*>& inputs,
                           const std::vector<std::vector<int64_t>>& inputDims, void* out,
                           const std::vector<int64_t>& outDims, ElementType type, cudaStream_t stream) {
  if (inputs.empty() || inputs.size() != inputDims.size()) return cudaErrorInvalidValue;
  if (dispatchNumeric(type, [](auto) { return cudaSuccess; }) != cudaSuccess) return cudaErrorInvalidValue;
  int64_t count = 1;
  for (int64_t d : outDims) count *= d;
  if (inputs.size() == 1) {
    if (inputDims[0] != outDims) return cudaErrorInvalidValue;
    if (count == 0 || inputs[0] == out) return cudaSuccess;
    return cudaMemcpyAsync(out, inputs[0], size_t(count) * elementBytes(type), cudaMemcpyDeviceToDevice, stream);
  }
  const BinaryOp pairOp = op == VariadicOp::kMin ? BinaryOp::kMin : op == VariadicOp::kMax ? BinaryOp::kMax
                                                                                            : BinaryOp::kAdd;
  for (size_t i = 1; i < inputs.size(); ++i) {
    const void* first = i == 1 ? inputs[0] : out;
    const std::vector<int64_t>& firstDims = i == 1 ? inputDims[0] : outDims;
    if (cudaError_t status = launchBinary(pairOp, first, firstDims, inputs[i], inputDims[i], out, outDims, type, stream);
        status != cudaSuccess)
      return status;
  }
  if (op != VariadicOp::kMean || count == 0) return cudaSuccess;
  return dispatchNumeric(type, [&](auto tag) {
    using T = decltype(tag);
    // The divisor rounds through T, as the CPU's fromFloat<T>(float(count)).
    const ComputeType<T> divisor = toCompute(static_cast<T>(float(inputs.size())));
    return mapDense(static_cast<const T*>(out), static_cast<T*>(out), count, DivideByFn<T>{divisor}, stream);
  });
}

}  // namespace kiln::kernels::cuda
