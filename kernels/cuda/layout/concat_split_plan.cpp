#include "concat_split.h"

#include "copy_unit.h"

#include <algorithm>

namespace kiln::kernels::cuda {

bool planBlockCopies(const std::vector<int64_t>& partAddresses, const std::vector<int64_t>& axisSizes,
                     int64_t joinedAddress, int64_t outer, int64_t inner, int elementBytes,
                     std::vector<BlockCopyLaunch>& launches) {
  launches.clear();
  if (partAddresses.size() != axisSizes.size() || outer < 0 || inner < 0) return false;
  int64_t total = 0;
  for (int64_t size : axisSizes) {
    if (size < 0) return false;
    total += size;
  }
  const int64_t e = elementBytes, rowBytes = total * inner * e;
  int64_t start = 0;
  for (size_t p = 0; p < axisSizes.size(); start += axisSizes[p], ++p) {
    const int64_t blockBytes = axisSizes[p] * inner * e, startBytes = start * inner * e;
    if (partAddresses[p] == 0 || blockBytes == 0 || outer == 0) continue;
    if (launches.empty() || launches.back().count == kMaxPartsPerLaunch) {
      launches.emplace_back();
      launches.back().outer = outer;
    }
    BlockCopyLaunch& launch = launches.back();
    BlockPart& part = launch.parts[launch.count++];
    part.unitBytes = copyUnitBytes(elementBytes, {blockBytes, startBytes, rowBytes, partAddresses[p], joinedAddress});
    part.partAddress = partAddresses[p];
    part.blockUnits = blockBytes / part.unitBytes;
    part.startUnits = startBytes / part.unitBytes;
    part.rowUnits = rowBytes / part.unitBytes;
    launch.maxPartUnits = std::max(launch.maxPartUnits, outer * part.blockUnits);
  }
  return true;
}

}  // namespace kiln::kernels::cuda
