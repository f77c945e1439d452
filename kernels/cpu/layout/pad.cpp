#include "pad.h"

#include "element_types.h"

#include <kernels/cpu/common/parallel.h>

#include <algorithm>

namespace kiln::kernels {
namespace {

constexpr int64_t kUseConstant = -1;

// Source coordinate for each output coordinate of one axis, or kUseConstant.
std::vector<int64_t> axisMap(int64_t srcSize, int64_t dstSize, int64_t padBegin, PadMode mode) {
  std::vector<int64_t> map(static_cast<size_t>(dstSize));
  for (int64_t o = 0; o < dstSize; ++o) {
    int64_t i = o - padBegin;
    if (i >= 0 && i < srcSize) {
      map[o] = i;
      continue;
    }
    switch (mode) {
      case PadMode::kConstant: map[o] = kUseConstant; break;
      case PadMode::kEdge: map[o] = std::clamp<int64_t>(i, 0, srcSize - 1); break;
      case PadMode::kWrap: map[o] = ((i % srcSize) + srcSize) % srcSize; break;
      case PadMode::kReflect: {
        if (srcSize == 1) {
          map[o] = 0;
          break;
        }
        int64_t period = 2 * (srcSize - 1);
        int64_t r = ((i % period) + period) % period;
        map[o] = r < srcSize ? r : period - r;
        break;
      }
    }
  }
  return map;
}

}  // namespace

template <class T>
void pad(const T* src, const std::vector<int64_t>& srcDims, T* dst, const std::vector<int64_t>& padsBegin,
         const std::vector<int64_t>& dstDims, PadMode mode, const T& constant) {
  size_t rank = dstDims.size();
  int64_t total = 1;
  for (int64_t d : dstDims) total *= d;
  if (total == 0) return;
  if (rank == 0) {
    dst[0] = src[0];
    return;
  }
  std::vector<std::vector<int64_t>> maps(rank);
  std::vector<int64_t> srcStrides(rank, 1);
  for (size_t d = 0; d < rank; ++d) maps[d] = axisMap(srcDims[d], dstDims[d], padsBegin[d], mode);
  for (size_t d = rank; d-- > 1;) srcStrides[d - 1] = srcStrides[d] * srcDims[d];

  // The innermost axis copies its in-range middle as one block.
  int64_t inner = dstDims.back(), srcInner = srcDims.back();
  int64_t midBegin = std::clamp<int64_t>(padsBegin.back(), 0, inner);
  int64_t midEnd = std::clamp<int64_t>(padsBegin.back() + srcInner, midBegin, inner);
  const std::vector<int64_t>& innerMap = maps.back();
  int64_t rows = total / inner;
  parallelFor(rows, std::max<int64_t>(1, kCopyGrainElements / inner), [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      T* out = dst + row * inner;
      int64_t offset = 0;
      bool constantRow = false;
      for (size_t d = rank - 1, r = size_t(row); d-- > 0;) {
        int64_t coordinate = maps[d][r % size_t(dstDims[d])];
        r /= size_t(dstDims[d]);
        if (coordinate == kUseConstant) constantRow = true;
        else offset += coordinate * srcStrides[d];
      }
      if (constantRow) {
        std::fill_n(out, inner, constant);
        continue;
      }
      const T* in = src + offset;
      auto element = [&](int64_t o) { return innerMap[o] == kUseConstant ? constant : in[innerMap[o]]; };
      for (int64_t o = 0; o < midBegin; ++o) out[o] = element(o);
      std::copy_n(in + (midBegin - padsBegin.back()), midEnd - midBegin, out + midBegin);
      for (int64_t o = midEnd; o < inner; ++o) out[o] = element(o);
    }
  });
}

#define KILN_INSTANTIATE(T)                                                                                   \
  template void pad<T>(const T*, const std::vector<int64_t>&, T*, const std::vector<int64_t>&,               \
                       const std::vector<int64_t>&, PadMode, const T&);
KILN_FOR_EACH_STORAGE_TYPE(KILN_INSTANTIATE)
#undef KILN_INSTANTIATE

}  // namespace kiln::kernels
