#include "einsum.h"

#include <kernels/cuda/common/device_types.cuh>
#include <kernels/cuda/common/launch.cuh>

namespace kiln::kernels::cuda {
namespace {

struct Operands {
  const void* data[kEinsumMaxOperands];
};

template <class T>
__global__ void einsumKernel(Operands operands, T* out, EinsumContraction c) {
  using Acc = ComputeType<T>;
  KILN_GRID_STRIDE_LOOP(index, c.outputCount) {
    int64_t base[kEinsumMaxOperands] = {};
    int64_t rest = index;
    for (int l = c.kept - 1; l >= 0; --l) {
      const int64_t coordinate = rest % c.keptSizes[l];
      rest /= c.keptSizes[l];
      for (int i = 0; i < c.operands; ++i) base[i] += coordinate * c.keptStrides[i][l];
    }
    Acc sum = Acc(0);
    for (int64_t s = 0; s < c.summedCount; ++s) {
      int64_t offset[kEinsumMaxOperands];
      for (int i = 0; i < c.operands; ++i) offset[i] = base[i];
      int64_t r = s;
      for (int l = c.summed - 1; l >= 0; --l) {
        const int64_t coordinate = r % c.summedSizes[l];
        r /= c.summedSizes[l];
        for (int i = 0; i < c.operands; ++i) offset[i] += coordinate * c.summedStrides[i][l];
      }
      Acc product = toCompute(static_cast<const T*>(operands.data[0])[offset[0]]);
      for (int i = 1; i < c.operands; ++i) product = product * toCompute(static_cast<const T*>(operands.data[i])[offset[i]]);
      sum = sum + product;
    }
    out[index] = fromCompute<T>(sum);
  }
}

}  // namespace

cudaError_t einsum(const void* const* operands, void* out, const EinsumContraction& contraction, ElementType type,
                   cudaStream_t stream) {
  if (contraction.operands < 1 || contraction.operands > kEinsumMaxOperands) return cudaErrorInvalidValue;
  Operands o{};
  for (int i = 0; i < contraction.operands; ++i) o.data[i] = operands[i];
  auto launch = [&](auto tag) {
    using T = decltype(tag);
    if (contraction.outputCount == 0) return cudaSuccess;
    einsumKernel<T><<<gridFor(contraction.outputCount), kThreadsPerBlock, 0, stream>>>(o, static_cast<T*>(out),
                                                                                        contraction);
    return launchStatus();
  };
  switch (type) {
    case ElementType::kFloat32: case ElementType::kFloat16: case ElementType::kBFloat16: case ElementType::kFloat64:
      return dispatchFloat(type, launch);
    case ElementType::kInt32: case ElementType::kInt64: case ElementType::kUInt32: case ElementType::kUInt64:
      return dispatchInteger(type, launch);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace kiln::kernels::cuda
