#include "concat_split.h"
#include "copy_unit.h"
#include "index_layout.h"

#include <kernels/cuda/common/launch.cuh>

#include <algorithm>

namespace kiln::kernels::cuda {
namespace {

// Copies one part (blockIdx.y picks it); kSplit copies joined -> part, else part -> joined.
template <class Unit, class Index, bool kSplit>
__device__ void copyPart(Unit* joined, Unit* part, Index blockUnits, Index startUnits, Index rowUnits, Index total) {
  for (Index idx = Index(blockIdx.x) * Index(blockDim.x) + Index(threadIdx.x); idx < total;
       idx += Index(blockDim.x) * Index(gridDim.x)) {
    const Index o = idx / blockUnits, k = idx - o * blockUnits;
    Unit* whole = joined + (o * rowUnits + startUnits + k);
    if constexpr (kSplit)
      part[idx] = *whole;
    else
      *whole = part[idx];
  }
}

template <class Unit, bool kSplit>
__device__ void copyPartIn(void* joined, const BlockPart& p, int64_t outer) {
  Unit* whole = static_cast<Unit*>(joined);
  Unit* part = reinterpret_cast<Unit*>(p.partAddress);
  const int64_t total = outer * p.blockUnits;
  if (total < kInt32IndexLimit && outer * p.rowUnits < kInt32IndexLimit)
    copyPart<Unit, int32_t, kSplit>(whole, part, int32_t(p.blockUnits), int32_t(p.startUnits), int32_t(p.rowUnits),
                                    int32_t(total));
  else
    copyPart<Unit, int64_t, kSplit>(whole, part, p.blockUnits, p.startUnits, p.rowUnits, total);
}

// The unit switch is uniform within a block (one part per blockIdx.y), so it costs no divergence.
template <bool kSplit>
__global__ void blockCopyKernel(void* joined, const __grid_constant__ BlockCopyLaunch launch) {
  const BlockPart& p = launch.parts[blockIdx.y];
  switch (p.unitBytes) {
    case 16: copyPartIn<uint4, kSplit>(joined, p, launch.outer); break;
    case 8: copyPartIn<uint2, kSplit>(joined, p, launch.outer); break;
    case 4: copyPartIn<uint32_t, kSplit>(joined, p, launch.outer); break;
    case 2: copyPartIn<uint16_t, kSplit>(joined, p, launch.outer); break;
    default: copyPartIn<uint8_t, kSplit>(joined, p, launch.outer); break;
  }
}

template <bool kSplit>
cudaError_t runBlockCopies(const std::vector<int64_t>& partAddresses, const std::vector<int64_t>& axisSizes,
                           void* joined, int64_t outer, int64_t inner, ElementType type, cudaStream_t stream) {
  std::vector<BlockCopyLaunch> launches;
  if (!planBlockCopies(partAddresses, axisSizes, addressOf(joined), outer, inner, int(elementBytes(type)), launches))
    return cudaErrorInvalidValue;
  for (const BlockCopyLaunch& launch : launches) {
    // Enough blocks per part for the largest one, fewer when many parts share the launch.
    const unsigned perPart =
        std::min<unsigned>(gridFor(launch.maxPartUnits), unsigned(std::max(64, 8192 / launch.count)));
    blockCopyKernel<kSplit><<<dim3(perPart, unsigned(launch.count)), kThreadsPerBlock, 0, stream>>>(joined, launch);
    if (const cudaError_t status = launchStatus(); status != cudaSuccess) return status;
  }
  return cudaSuccess;
}

}  // namespace

cudaError_t concat(const std::vector<const void*>& parts, const std::vector<int64_t>& axisSizes, void* dst,
                   int64_t outer, int64_t inner, ElementType type, cudaStream_t stream) {
  if (parts.size() != axisSizes.size()) return cudaErrorInvalidValue;
  std::vector<int64_t> addresses;
  for (size_t p = 0; p < parts.size(); ++p) {
    // Every input of a Concat exists; only an empty one may have no storage.
    if (!parts[p] && axisSizes[p] * inner * outer != 0) return cudaErrorInvalidValue;
    addresses.push_back(addressOf(parts[p]));
  }
  return runBlockCopies<false>(addresses, axisSizes, dst, outer, inner, type, stream);
}

cudaError_t split(const void* src, const std::vector<void*>& parts, const std::vector<int64_t>& axisSizes,
                  int64_t outer, int64_t inner, ElementType type, cudaStream_t stream) {
  std::vector<int64_t> addresses;
  for (void* p : parts) addresses.push_back(p ? addressOf(p) : 0);
  return runBlockCopies<true>(addresses, axisSizes, const_cast<void*>(src), outer, inner, type, stream);
}

}  // namespace kiln::kernels::cuda
