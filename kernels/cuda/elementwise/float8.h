#pragma once
// fp8 encodings for Cast, giving exactly the bits of the CPU kernels' Float8E4M3 / Float8E5M2:
// round to nearest even, saturate to the largest finite value (infinities too), NaN to 0x7F
// whatever its sign. Both sides use small_floats.h, so host and device agree bit for bit.
#include "kernels/cuda/common/host_device.h"
#include "kernels/cuda/common/small_floats.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <math.h>
#include <type_traits>

namespace kiln::kernels::cuda {

struct Float8E4M3Format {};
struct Float8E5M2Format {};

template <class Format>
KILN_HD uint8_t encodeFloat8(float f) {
  if constexpr (std::is_same_v<Format, Float8E4M3Format>) return encodeE4M3(f);
  else return encodeE5M2(f);
}

template <class Format>
KILN_HD float decodeFloat8(uint8_t bits) {
  if constexpr (std::is_same_v<Format, Float8E4M3Format>) return decodeE4M3(bits);
  else return decodeE5M2(bits);
}

}  // namespace kiln::kernels::cuda
