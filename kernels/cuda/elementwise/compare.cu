// Comparisons (every numeric type) and logic (bool), all writing bool.
#include "binary_ops.h"
#include "binary_planned.h"
#include "elementwise_kernels.cuh"

namespace kiln::kernels::cuda {

cudaError_t launchPredicate(BinaryOp op, const void* a, const void* b, void* out, const BroadcastPlan<2>& plan,
                            ElementType type, cudaStream_t stream) {
  auto* z = static_cast<uint8_t*>(out);
  if (type == ElementType::kBool) {
    const auto* x = static_cast<const uint8_t*>(a);
    const auto* y = static_cast<const uint8_t*>(b);
    switch (op) {
      case BinaryOp::kEqual: return mapPair(x, y, z, plan, BoolEqualFn{}, stream);
      case BinaryOp::kAnd: return mapPair(x, y, z, plan, BinaryFn<BinaryOp::kAnd>{}, stream);
      case BinaryOp::kOr: return mapPair(x, y, z, plan, BinaryFn<BinaryOp::kOr>{}, stream);
      case BinaryOp::kXor: return mapPair(x, y, z, plan, BinaryFn<BinaryOp::kXor>{}, stream);
      default: return cudaErrorInvalidValue;
    }
  }
  return dispatchNumeric(type, [&](auto tag) {
    using T = decltype(tag);
    const T* x = static_cast<const T*>(a);
    const T* y = static_cast<const T*>(b);
    switch (op) {
      case BinaryOp::kEqual: return mapPair(x, y, z, plan, BinaryFn<BinaryOp::kEqual>{}, stream);
      case BinaryOp::kLess: return mapPair(x, y, z, plan, BinaryFn<BinaryOp::kLess>{}, stream);
      case BinaryOp::kLessOrEqual: return mapPair(x, y, z, plan, BinaryFn<BinaryOp::kLessOrEqual>{}, stream);
      case BinaryOp::kGreater: return mapPair(x, y, z, plan, BinaryFn<BinaryOp::kGreater>{}, stream);
      case BinaryOp::kGreaterOrEqual: return mapPair(x, y, z, plan, BinaryFn<BinaryOp::kGreaterOrEqual>{}, stream);
      default: return cudaErrorInvalidValue;
    }
  });
}

}  // namespace kiln::kernels::cuda
