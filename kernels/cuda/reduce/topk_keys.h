#pragma once
// TopK sorts (key, index) items in ascending order: the key is an unsigned integer whose order is
// the value order TopK wants, so that ties (equal keys) fall to the lower index as on the CPU
// (kernels/cpu/reduce/scan.cpp): NaN ranks above every number (all NaNs alike), -0 equals +0;
// `largest` reverses the key. C is the compute type (float for float16/bfloat16). The bitonic
// network's steps and the order of passes that sorts lines longer than a tile are here too, so
// that the host tests run exactly the kernels' schedule. Shared by the kernels and the host tests.
#include "kernels/cuda/common/host_device.h"

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

namespace kiln::kernels::cuda {

struct TopKItem {
  uint64_t key;
  int64_t index;
};

KILN_HD bool itemBefore(const TopKItem& a, const TopKItem& b) {
  return a.key < b.key || (a.key == b.key && a.index < b.index);
}

// Padding of a sort: after every real item.
constexpr TopKItem kTopKSentinel{~uint64_t(0), INT64_MAX};

template <class C>
KILN_HD uint64_t ascendingKey(C v) {
  if constexpr (std::is_floating_point_v<C>) {
    using Bits = std::conditional_t<sizeof(C) == 4, uint32_t, uint64_t>;
    constexpr Bits kSign = Bits(1) << (8 * sizeof(C) - 1);
    if (v != v) return uint64_t(~Bits(0));  // every NaN: the top key
    if (v == C(0)) v = C(0);               // -0 as +0
    Bits bits;
#if defined(__CUDA_ARCH__)
    if constexpr (sizeof(C) == 4) bits = __float_as_uint(v);
    else bits = Bits(__double_as_longlong(v));
#else
    std::memcpy(&bits, &v, sizeof bits);
#endif
    return uint64_t((bits & kSign) ? Bits(~bits) : Bits(bits | kSign));
  } else if constexpr (std::is_signed_v<C>) {
    using U = std::make_unsigned_t<C>;
    return uint64_t(U(U(v) ^ (U(1) << (8 * sizeof(C) - 1))));
  } else {
    return uint64_t(v);
  }
}

template <class C>
KILN_HD uint64_t topKKey(C v, bool largest) {
  const uint64_t key = ascendingKey(v);
  return largest ? ~key : key;
}

// ---- the bitonic network over lines of `padded` (a power of two) items ----

// Items per tile: a tile sorts in shared memory (2048 items of 16 bytes: 32 KiB).
constexpr int64_t kTopKTileItems = 2048;

// Compare-exchange `pair` (of count / 2) of the step (size, stride) over items[0, count), whose
// first item sits at `origin` in its line: items i and i + stride, ascending where the position
// in the line has the size bit clear.
KILN_HD void bitonicStep(TopKItem* items, int64_t origin, int64_t size, int64_t stride, int64_t pair) {
  const int64_t i = 2 * stride * (pair / stride) + pair % stride;
  const bool ascending = ((origin + i) & size) == 0;
  const TopKItem a = items[i], b = items[i + stride];
  if (itemBefore(b, a) == ascending) {
    items[i] = b;
    items[i + stride] = a;
  }
}

// One pass of the schedule: inside each tile, sizes firstSize..lastSize with every stride below
// the tile; or over whole lines, one stride (of a tile or more) of one size.
struct BitonicPass {
  bool inTiles;
  int64_t firstSize, lastSize;  // inTiles
  int64_t size, stride;         // !inTiles
};

// The passes that sort lines of `padded` items (more than one tile).
inline std::vector<BitonicPass> bitonicPasses(int64_t padded) {
  std::vector<BitonicPass> passes{{true, 2, kTopKTileItems, 0, 0}};
  for (int64_t size = 2 * kTopKTileItems; size <= padded; size *= 2) {
    for (int64_t stride = size / 2; stride >= kTopKTileItems; stride /= 2) passes.push_back({false, 0, 0, size, stride});
    passes.push_back({true, size, size, 0, 0});
  }
  return passes;
}

// The strides of size `size` a tile of `count` items runs: from min(size, count) / 2 down to 1.
KILN_HD int64_t firstTileStride(int64_t size, int64_t count) { return (size < count ? size : count) / 2; }

}  // namespace kiln::kernels::cuda
