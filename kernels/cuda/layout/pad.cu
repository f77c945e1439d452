#include "pad.h"

#include <kernels/cuda/common/device_types.cuh>
#include <kernels/cuda/common/launch.cuh>

#include "index_layout.h"

namespace kiln::kernels::cuda {
namespace {

template <class T, class Index>
__global__ void padKernel(const T* __restrict__ src, T* __restrict__ dst, const __grid_constant__ PadGeometry<Index> g,
                          Index count, const T* constantValue) {
  const T constant = constantValue ? *constantValue : T{};
  for (Index i = Index(blockIdx.x) * Index(blockDim.x) + Index(threadIdx.x); i < count;
       i += Index(blockDim.x) * Index(gridDim.x)) {
    const Index from = g.sourceOffset(i);
    dst[i] = from < 0 ? constant : src[from];
  }
}

PadGeometry<int32_t> narrow(const PadGeometry<int64_t>& g) {
  PadGeometry<int32_t> n;
  n.rank = g.rank;
  n.mode = g.mode;
  for (int d = 0; d < g.rank; ++d) {
    n.dstDims[d] = int32_t(g.dstDims[d]);
    n.srcDims[d] = int32_t(g.srcDims[d]);
    n.srcStrides[d] = int32_t(g.srcStrides[d]);
    n.padsBegin[d] = int32_t(g.padsBegin[d]);
  }
  return n;
}

}  // namespace

cudaError_t pad(const void* src, const std::vector<int64_t>& srcDims, void* dst, const std::vector<int64_t>& padsBegin,
                const std::vector<int64_t>& dstDims, PadMode mode, const void* constantValue, ElementType type,
                cudaStream_t stream) {
  const auto geometry = padGeometry(srcDims, padsBegin, dstDims, mode);
  if (!geometry) return cudaErrorInvalidValue;
  int64_t count = 1, srcCount = 1;
  for (int64_t d : dstDims) count *= d;
  for (int64_t d : srcDims) srcCount *= d;
  if (count == 0) return cudaSuccess;
  bool smallPads = true;  // pads and crops beyond int32 would overflow the narrow coordinates
  for (int64_t p : padsBegin) smallPads = smallPads && p > -kInt32IndexLimit && p < kInt32IndexLimit;
  const bool narrowIndex = count < kInt32IndexLimit && srcCount < kInt32IndexLimit && smallPads;
  return dispatchBySize(type, [&](auto tag) {
    using T = decltype(tag);
    const T* from = static_cast<const T*>(src);
    T* to = static_cast<T*>(dst);
    const T* constant = static_cast<const T*>(constantValue);
    if (narrowIndex)
      padKernel<T, int32_t>
          <<<gridFor(count), kThreadsPerBlock, 0, stream>>>(from, to, narrow(*geometry), int32_t(count), constant);
    else
      padKernel<T, int64_t><<<gridFor(count), kThreadsPerBlock, 0, stream>>>(from, to, *geometry, count, constant);
    return launchStatus();
  });
}

}  // namespace kiln::kernels::cuda
