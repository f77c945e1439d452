#pragma once
// TopK sorts (key, index) items in ascending order: the key is an unsigned integer whose order is
// the value order TopK wants, so that ties (equal keys) fall to the lower index as on the CPU
// (kernels/cpu/reduce/scan.cpp): NaN ranks above every number (all NaNs alike), -0 equals +0;
// `largest` reverses the key. C is the compute type (float for float16/bfloat16). Shared by the
// kernels and the host tests.
#include "kernels/cuda/common/host_device.h"

#include <cstdint>
#include <cstring>
#include <type_traits>

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

}  // namespace kiln::kernels::cuda
