#pragma once
// Concat and Split: every part is a block of each outer row of the joined tensor, so one launch
// copies up to kMaxPartsPerLaunch parts (a pointer table passed by value; more parts take more
// launches). Each part moves in the widest unit its sizes and addresses allow. Any dtype, by size;
// asynchronous; no allocation; empty parts are skipped.
#include <kernels/cuda/common/element_type.h>

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

namespace kiln::kernels::cuda {

// dst is [outer, sum(axisSizes), inner]; part p is [outer, axisSizes[p], inner] (device pointers).
cudaError_t concat(const std::vector<const void*>& parts, const std::vector<int64_t>& axisSizes, void* dst,
                   int64_t outer, int64_t inner, ElementType type, cudaStream_t stream);

// The inverse: src is [outer, sum(axisSizes), inner]; a null part (an unused output) is skipped.
cudaError_t split(const void* src, const std::vector<void*>& parts, const std::vector<int64_t>& axisSizes,
                  int64_t outer, int64_t inner, ElementType type, cudaStream_t stream);

constexpr int kMaxPartsPerLaunch = 64;

// One part's block of every outer row, in units of unitBytes: joined unit o * rowUnits +
// startUnits + k <-> part unit o * blockUnits + k.
struct BlockPart {
  int64_t partAddress = 0;
  int64_t blockUnits = 0, startUnits = 0, rowUnits = 0;
  int unitBytes = 1;
};

struct BlockCopyLaunch {
  BlockPart parts[kMaxPartsPerLaunch];
  int count = 0;
  int64_t outer = 0;
  int64_t maxPartUnits = 0;  // sizes the grid
};

// The launches that copy the parts (host side, tested without a GPU). Null and empty parts are
// left out. Returns false for negative sizes.
bool planBlockCopies(const std::vector<int64_t>& partAddresses, const std::vector<int64_t>& axisSizes,
                     int64_t joinedAddress, int64_t outer, int64_t inner, int elementBytes,
                     std::vector<BlockCopyLaunch>& launches);

}  // namespace kiln::kernels::cuda
