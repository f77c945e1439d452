#pragma once
// Float "lanes" for the transcendental kernels: Float8 (8 floats in an AVX2 register, with FMA)
// where the ISA has it, and plain float for loop tails and other ISAs. The approximations in
// fast_math.h are written once over both, so a tail element gets exactly what a vector lane gets.
// Comparisons and min/max follow the SSE/AVX rules (on NaN the second operand wins), which the
// scalar forms reproduce, so NaN inputs come out as NaN when they are passed second.
#include <cmath>
#include <concepts>
#include <cstdint>
#include <cstring>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define KILN_FLOAT8_LANES 1
#endif

namespace kiln::kernels::lanes {

// ---- scalar lanes: float (loop tails) and double (no vector lane; same formulas) ----
template <std::floating_point T>
inline T mulAdd(T a, T b, T c) {
#if defined(__FMA__)
  return std::fma(a, b, c);
#else
  return a * b + c;
#endif
}
template <std::floating_point T> inline T maxOf(T a, T b) { return a > b ? a : b; }
template <std::floating_point T> inline T minOf(T a, T b) { return a < b ? a : b; }
template <std::floating_point T> inline T absOf(T a) { return std::fabs(a); }
template <std::floating_point T> inline T roundToEven(T a) { return std::nearbyint(a); }
template <std::floating_point T> inline T select(bool mask, T whenTrue, T whenFalse) { return mask ? whenTrue : whenFalse; }
template <std::floating_point T> inline bool less(T a, T b) { return a < b; }
template <std::floating_point T> inline bool greater(T a, T b) { return a > b; }
template <std::floating_point T> inline T sqrtOf(T a) { return std::sqrt(a); }
template <std::floating_point T> inline T floorOf(T a) { return std::floor(a); }
template <std::floating_point T> inline T ceilOf(T a) { return std::ceil(a); }
inline bool equal(float a, float b) { return a == b; }
inline bool isNaN(float a) { return a != a; }
// x = mantissa * 2^exponent with the mantissa in [0.5, 1), for positive normal x.
inline float splitExponent(float x, float& exponent) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  exponent = float(int32_t((bits >> 23) & 0xFFu) - 126);
  bits = (bits & 0x807FFFFFu) | 0x3F000000u;
  float mantissa;
  std::memcpy(&mantissa, &bits, sizeof mantissa);
  return mantissa;
}
// 2^n for an integral n in [-126, 127] (NaN n gives garbage, which callers discard).
inline float powerOfTwo(float n) {
  n = n == n ? n : 0.0f;  // converting NaN to int is undefined behaviour
  uint32_t bits = uint32_t(int32_t(n) + 127) << 23;
  float result;
  std::memcpy(&result, &bits, sizeof result);
  return result;
}
inline float load(const float* p, float) { return *p; }
inline void store(float* p, float v) { *p = v; }

#if KILN_FLOAT8_LANES
// ---- 8-float AVX2 lane ----
struct Float8 {
  __m256 v;
  Float8() = default;
  Float8(__m256 x) : v(x) {}                     // NOLINT: lets intrinsics results flow in
  Float8(float x) : v(_mm256_set1_ps(x)) {}      // NOLINT: constants read naturally in formulas
};
struct Mask8 {
  __m256 m;
};
inline Float8 operator+(Float8 a, Float8 b) { return _mm256_add_ps(a.v, b.v); }
inline Float8 operator-(Float8 a, Float8 b) { return _mm256_sub_ps(a.v, b.v); }
inline Float8 operator*(Float8 a, Float8 b) { return _mm256_mul_ps(a.v, b.v); }
inline Float8 operator/(Float8 a, Float8 b) { return _mm256_div_ps(a.v, b.v); }
inline Float8 operator-(Float8 a) { return _mm256_xor_ps(a.v, _mm256_set1_ps(-0.0f)); }
inline Float8 mulAdd(Float8 a, Float8 b, Float8 c) { return _mm256_fmadd_ps(a.v, b.v, c.v); }
inline Float8 maxOf(Float8 a, Float8 b) { return _mm256_max_ps(a.v, b.v); }
inline Float8 minOf(Float8 a, Float8 b) { return _mm256_min_ps(a.v, b.v); }
inline Float8 absOf(Float8 a) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a.v); }
inline Float8 roundToEven(Float8 a) { return _mm256_round_ps(a.v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
inline Float8 select(Mask8 mask, Float8 whenTrue, Float8 whenFalse) {
  return _mm256_blendv_ps(whenFalse.v, whenTrue.v, mask.m);
}
inline Mask8 less(Float8 a, Float8 b) { return {_mm256_cmp_ps(a.v, b.v, _CMP_LT_OQ)}; }
inline Mask8 greater(Float8 a, Float8 b) { return {_mm256_cmp_ps(a.v, b.v, _CMP_GT_OQ)}; }
inline Mask8 equal(Float8 a, Float8 b) { return {_mm256_cmp_ps(a.v, b.v, _CMP_EQ_OQ)}; }
inline Mask8 isNaN(Float8 a) { return {_mm256_cmp_ps(a.v, a.v, _CMP_UNORD_Q)}; }
inline Float8 splitExponent(Float8 x, Float8& exponent) {
  const __m256i bits = _mm256_castps_si256(x.v);
  const __m256i biased = _mm256_and_si256(_mm256_srli_epi32(bits, 23), _mm256_set1_epi32(0xFF));
  exponent = _mm256_cvtepi32_ps(_mm256_sub_epi32(biased, _mm256_set1_epi32(126)));
  const __m256i mantissa = _mm256_or_si256(_mm256_and_si256(bits, _mm256_set1_epi32(int(0x807FFFFFu))),
                                           _mm256_set1_epi32(0x3F000000));
  return _mm256_castsi256_ps(mantissa);
}
inline Float8 powerOfTwo(Float8 n) {
  __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n.v), _mm256_set1_epi32(127)), 23);
  return _mm256_castsi256_ps(bits);
}
inline Float8 sqrtOf(Float8 a) { return _mm256_sqrt_ps(a.v); }
inline Float8 floorOf(Float8 a) { return _mm256_round_ps(a.v, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC); }
inline Float8 ceilOf(Float8 a) { return _mm256_round_ps(a.v, _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC); }
inline Float8 load(const float* p, Float8) { return _mm256_loadu_ps(p); }
inline void store(float* p, Float8 v) { _mm256_storeu_ps(p, v.v); }
#endif

// out[i] = fn(in[i]) for a lane-generic fn, vector lanes first, then the scalar tail.
template <class Fn>
void mapFloat(const float* in, float* out, int64_t n, Fn&& fn) {
  int64_t i = 0;
#if KILN_FLOAT8_LANES
  for (; i + 8 <= n; i += 8) store(out + i, fn(load(in + i, Float8{})));
#endif
  for (; i < n; ++i) out[i] = fn(in[i]);
}

}  // namespace kiln::kernels::lanes
