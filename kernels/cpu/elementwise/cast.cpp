#include "cast.h"

#include "element_types.h"
#include "kernels/cpu/common/parallel.h"

#include <algorithm>
#include <limits>
#include <type_traits>

namespace kiln::kernels {
namespace {

// Storage-only float types that convert through float.
template <class T>
inline constexpr bool kIsNarrowFloat =
    kIsHalfFloat<T> || std::is_same_v<T, Float8E4M3> || std::is_same_v<T, Float8E5M2>;

template <class Dst, class Src>
Dst floatToInteger(Src v) {
  // 2^digits is exact in every float type; values at or beyond it saturate.
  constexpr Src kAboveMax = Src(2) * Src(std::numeric_limits<Dst>::max() / 2 + 1);
  if (v != v) return Dst(0);
  if (v >= kAboveMax) return std::numeric_limits<Dst>::max();
  if (v <= Src(std::numeric_limits<Dst>::min())) return std::numeric_limits<Dst>::min();
  return Dst(v);
}

template <class Dst, class Src>
Dst convert(Src v) {
  if constexpr (std::is_same_v<Src, Dst>) {
    return v;
  } else if constexpr (kIsNarrowFloat<Src>) {
    return convert<Dst>(float(v));
  } else if constexpr (kIsNarrowFloat<Dst>) {
    return Dst(float(v));
  } else if constexpr (std::is_same_v<Dst, bool>) {
    return v != Src(0);
  } else if constexpr (std::is_floating_point_v<Src> && std::is_integral_v<Dst>) {
    return floatToInteger<Dst>(v);
  } else {
    return static_cast<Dst>(v);
  }
}

template <class Src, class Dst>
void castChunk(const Src* in, Dst* out, int64_t n) {
  if constexpr (std::is_same_v<Src, float> && kIsHalfFloat<Dst>) {
    narrow(in, out, n);
  } else if constexpr (kIsHalfFloat<Src> && std::is_same_v<Dst, float>) {
    widen(in, out, n);
  } else if constexpr (kIsHalfFloat<Src>) {  // widen a tile, then convert from float
    float tile[kHalfTile];
    for (int64_t start = 0; start < n; start += kHalfTile) {
      const int64_t count = std::min(kHalfTile, n - start);
      widen(in + start, tile, count);
      castChunk(tile, out + start, count);
    }
  } else if constexpr (kIsHalfFloat<Dst> && !std::is_same_v<Src, double>) {  // to float, then narrow
    float tile[kHalfTile];
    for (int64_t start = 0; start < n; start += kHalfTile) {
      const int64_t count = std::min(kHalfTile, n - start);
      castChunk(in + start, tile, count);
      narrow(tile, out + start, count);
    }
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = convert<Dst>(in[i]);
  }
}

}  // namespace

template <class Src, class Dst>
void cast(const Src* in, Dst* out, int64_t n) {
  parallelFor(n, 1 << 15, [&](int64_t begin, int64_t end) { castChunk(in + begin, out + begin, end - begin); });
}

// Every destination type for each source type.
#define KILN_CAST_TYPES(X) KILN_ELEMENTWISE_NUMERIC_TYPES(X) X(bool) X(Float8E4M3) X(Float8E5M2)
#define KILN_INSTANTIATE_CAST(Dst) template void cast<KILN_CAST_SOURCE, Dst>(const KILN_CAST_SOURCE*, Dst*, int64_t);
// clang-format off
#define KILN_CAST_SOURCE float
KILN_CAST_TYPES(KILN_INSTANTIATE_CAST)
#undef KILN_CAST_SOURCE
#define KILN_CAST_SOURCE double
KILN_CAST_TYPES(KILN_INSTANTIATE_CAST)
#undef KILN_CAST_SOURCE
#define KILN_CAST_SOURCE Float16
KILN_CAST_TYPES(KILN_INSTANTIATE_CAST)
#undef KILN_CAST_SOURCE
#define KILN_CAST_SOURCE BFloat16
KILN_CAST_TYPES(KILN_INSTANTIATE_CAST)
#undef KILN_CAST_SOURCE
#define KILN_CAST_SOURCE Float8E4M3
KILN_CAST_TYPES(KILN_INSTANTIATE_CAST)
#undef KILN_CAST_SOURCE
#define KILN_CAST_SOURCE Float8E5M2
KILN_CAST_TYPES(KILN_INSTANTIATE_CAST)
#undef KILN_CAST_SOURCE
#define KILN_CAST_SOURCE int8_t
KILN_CAST_TYPES(KILN_INSTANTIATE_CAST)
#undef KILN_CAST_SOURCE
#define KILN_CAST_SOURCE int16_t
KILN_CAST_TYPES(KILN_INSTANTIATE_CAST)
#undef KILN_CAST_SOURCE
#define KILN_CAST_SOURCE int32_t
KILN_CAST_TYPES(KILN_INSTANTIATE_CAST)
#undef KILN_CAST_SOURCE
#define KILN_CAST_SOURCE int64_t
KILN_CAST_TYPES(KILN_INSTANTIATE_CAST)
#undef KILN_CAST_SOURCE
#define KILN_CAST_SOURCE uint8_t
KILN_CAST_TYPES(KILN_INSTANTIATE_CAST)
#undef KILN_CAST_SOURCE
#define KILN_CAST_SOURCE uint16_t
KILN_CAST_TYPES(KILN_INSTANTIATE_CAST)
#undef KILN_CAST_SOURCE
#define KILN_CAST_SOURCE uint32_t
KILN_CAST_TYPES(KILN_INSTANTIATE_CAST)
#undef KILN_CAST_SOURCE
#define KILN_CAST_SOURCE uint64_t
KILN_CAST_TYPES(KILN_INSTANTIATE_CAST)
#undef KILN_CAST_SOURCE
#define KILN_CAST_SOURCE bool
KILN_CAST_TYPES(KILN_INSTANTIATE_CAST)
#undef KILN_CAST_SOURCE
// clang-format on

}  // namespace kiln::kernels
