// Pow: a kernel per base type; the exponent's type is read at run time (Pow is compute-bound, and
// six base types times twelve exponent types would be 72 instantiations of each loop).
#include "binary.h"
#include "binary_ops.h"
#include "elementwise_kernels.cuh"

#include <stdexcept>

namespace kiln::kernels::cuda {
namespace {

template <class T>
__global__ void powSimpleKernel(const T* base, const void* exponent, ElementType exponentType, T* out, int64_t n,
                                bool baseOne, bool exponentOne) {
  KILN_GRID_STRIDE_LOOP(i, n) {
    const PowExponent e = loadPowExponent(exponent, exponentOne ? 0 : i, exponentType);
    out[i] = fromCompute<T>(power(toCompute(base[baseOne ? 0 : i]), e));
  }
}

template <class T>
__global__ void powIndexedKernel(const T* base, const void* exponent, ElementType exponentType, T* out, int64_t n,
                                 const __grid_constant__ BroadcastIndexer<2> indexer) {
  KILN_GRID_STRIDE_LOOP(i, n) {
    int64_t offsets[2];
    indexer.offsets(i, offsets);
    const PowExponent e = loadPowExponent(exponent, offsets[1], exponentType);
    out[i] = fromCompute<T>(power(toCompute(base[offsets[0]]), e));
  }
}

bool isNumeric(ElementType type) {
  return type != ElementType::kBool && type != ElementType::kFloat8E4M3 && type != ElementType::kFloat8E5M2;
}

}  // namespace

cudaError_t launchPow(const void* base, const std::vector<int64_t>& baseDims, ElementType baseType,
                      const void* exponent, const std::vector<int64_t>& exponentDims, ElementType exponentType,
                      void* out, const std::vector<int64_t>& outDims, cudaStream_t stream) {
  if (!isNumeric(exponentType)) return cudaErrorInvalidValue;
  BroadcastPlan<2> plan;
  try {
    plan = planBroadcast<2>(outDims, {&baseDims, &exponentDims});
  } catch (const std::invalid_argument&) {
    return cudaErrorInvalidValue;
  }
  auto run = [&](auto tag) {
    using T = decltype(tag);
    const int64_t n = plan.count;
    if (n == 0) return cudaSuccess;
    const T* b = static_cast<const T*>(base);
    T* o = static_cast<T*>(out);
    if (plan.simple)
      powSimpleKernel<<<gridFor(n), kThreadsPerBlock, 0, stream>>>(b, exponent, exponentType, o, n, plan.repeats[0],
                                                                   plan.repeats[1]);
    else
      powIndexedKernel<<<gridFor(n), kThreadsPerBlock, 0, stream>>>(b, exponent, exponentType, o, n, plan.indexer);
    return launchStatus();
  };
  switch (baseType) {
    case ElementType::kInt32: return run(int32_t{});
    case ElementType::kInt64: return run(int64_t{});
    default: return dispatchFloat(baseType, run);
  }
}

}  // namespace kiln::kernels::cuda
