#pragma once
// Division by a divisor fixed for a whole launch, for index math: one multiply-high, an add and a
// shift instead of a 32-bit division (about 20 instructions on the GPU). This is Granlund and
// Montgomery's method ("Division by invariant integers using multiplication", 1994): with
// s = ceil(log2 d) and m = floor(2^32 * (2^s - d) / d) + 1, n / d = (mulhi(m, n) + n) >> s.
// Valid for numerators below 2^31 (so the add cannot overflow; callers take this path only when
// the whole index space fits) and divisors from 1 to 2^31.
#include "kernels/cuda/common/host_device.h"

#include <cstdint>

namespace kiln::kernels::cuda {

struct FastDivider {
  uint32_t divisor = 1;
  uint32_t multiplier = 1;
  uint32_t shift = 0;

  FastDivider() = default;
  // d == 0 (an empty dim, never divided by) is kept as 1.
  explicit FastDivider(uint32_t d) : divisor(d == 0 ? 1 : d) {
    while (shift < 31 && (uint32_t(1) << shift) < divisor) ++shift;
    multiplier = uint32_t(((uint64_t(1) << 32) * ((uint64_t(1) << shift) - divisor)) / divisor + 1);
  }

  KILN_HD uint32_t divide(uint32_t n) const {
#if defined(__CUDA_ARCH__)
    const uint32_t high = __umulhi(n, multiplier);
#else
    const uint32_t high = uint32_t((uint64_t(n) * multiplier) >> 32);
#endif
    return (high + n) >> shift;
  }
};

}  // namespace kiln::kernels::cuda
