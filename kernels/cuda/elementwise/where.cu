// Where: a three-input broadcast that only moves elements, so it is instantiated per element size.
#include "binary.h"
#include "elementwise_kernels.cuh"

#include <stdexcept>

namespace kiln::kernels::cuda {
namespace {

struct SelectFn {
  template <class T>
  __device__ T operator()(uint8_t condition, T x, T y) const { return condition ? x : y; }
};

}  // namespace

cudaError_t launchWhere(const void* condition, const std::vector<int64_t>& conditionDims, const void* x,
                        const std::vector<int64_t>& xDims, const void* y, const std::vector<int64_t>& yDims, void* out,
                        const std::vector<int64_t>& outDims, ElementType type, cudaStream_t stream) {
  BroadcastPlan<3> plan;
  try {
    plan = planBroadcast<3>(outDims, {&conditionDims, &xDims, &yDims});
  } catch (const std::invalid_argument&) {
    return cudaErrorInvalidValue;
  }
  return dispatchBySize(type, [&](auto tag) {
    using T = decltype(tag);
    return mapTriple(static_cast<const uint8_t*>(condition), static_cast<const T*>(x), static_cast<const T*>(y),
                     static_cast<T*>(out), plan, SelectFn{}, stream);
  });
}

}  // namespace kiln::kernels::cuda
