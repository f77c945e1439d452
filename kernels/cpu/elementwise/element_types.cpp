#include "element_types.h"

#if defined(__F16C__) && defined(__AVX__)
#include <immintrin.h>
#endif

namespace kiln::kernels {

void widen(const Float16* in, float* out, int64_t n) {
  int64_t i = 0;
#if defined(__F16C__) && defined(__AVX__)
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
#endif
  for (; i < n; ++i) out[i] = Float16::toFloat(in[i].bits);
}

void narrow(const float* in, Float16* out, int64_t n) {
  int64_t i = 0;
#if defined(__F16C__) && defined(__AVX__)
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT));
#endif
  for (; i < n; ++i) out[i].bits = Float16::fromFloat(in[i]);
}

void widen(const BFloat16* in, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = bitsToFloat(uint32_t(in[i].bits) << 16);
}

void narrow(const float* in, BFloat16* out, int64_t n) {
  // Round to nearest even on the bits; NaN keeps a quiet NaN (the rounding could carry it to inf).
  for (int64_t i = 0; i < n; ++i) {
    uint32_t u = floatBits(in[i]);
    uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
    bool isNan = (u & 0x7FFFFFFFu) > 0x7F800000u;
    out[i].bits = uint16_t(isNan ? ((u >> 16) | 0x40u) : rounded);
  }
}

}  // namespace kiln::kernels
