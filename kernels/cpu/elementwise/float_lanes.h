#pragma once
// Float "lanes" for the transcendental kernels: Float8 (8 floats in an AVX2 register, with FMA)
// where the ISA has it, and plain float for loop tails and other ISAs. The approximations in
// fast_math.h are written once over both, so a tail element gets exactly what a vector lane gets.
// Comparisons and min/max follow the SSE/AVX rules (on NaN the second operand wins), which the
// scalar forms reproduce, so NaN inputs come out as NaN when they are passed second.
#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define KILN_FLOAT8_LANES 1
#endif

namespace kiln::kernels::lanes {

// ---- scalar lane ----
inline float mulAdd(float a, float b, float c) {
#if defined(__FMA__)
  return std::fma(a, b, c);
#else
  return a * b + c;
#endif
}
inline float maxOf(float a, float b) { return a > b ? a : b; }
inline float minOf(float a, float b) { return a < b ? a : b; }
inline float absOf(float a) { return std::fabs(a); }
inline float roundToEven(float a) { return std::nearbyint(a); }
inline float select(bool mask, float whenTrue, float whenFalse) { return mask ? whenTrue : whenFalse; }
inline bool less(float a, float b) { return a < b; }
inline bool greater(float a, float b) { return a > b; }
// 2^n for an integral n in [-126, 127] (NaN n gives garbage, which callers discard).
inline float powerOfTwo(float n) {
  n = n == n ? n : 0.0f;  // converting NaN to int is undefined behaviour
  uint32_t bits = uint32_t(int32_t(n) + 127) << 23;
  float result;
  std::memcpy(&result, &bits, sizeof result);
  return result;
}
inline float sqrtOf(float a) { return std::sqrt(a); }
inline float floorOf(float a) { return std::floor(a); }
inline float ceilOf(float a) { return std::ceil(a); }
inline float load(const float* p, float) { return *p; }

// double has no vector lane; these let the same lane-generic formulas run on double.
inline double mulAdd(double a, double b, double c) {
#if defined(__FMA__)
  return std::fma(a, b, c);
#else
  return a * b + c;
#endif
}
inline double maxOf(double a, double b) { return a > b ? a : b; }
inline double minOf(double a, double b) { return a < b ? a : b; }
inline double absOf(double a) { return std::fabs(a); }
inline double roundToEven(double a) { return std::nearbyint(a); }
inline double select(bool mask, double whenTrue, double whenFalse) { return mask ? whenTrue : whenFalse; }
inline bool less(double a, double b) { return a < b; }
inline bool greater(double a, double b) { return a > b; }
inline double sqrtOf(double a) { return std::sqrt(a); }
inline double floorOf(double a) { return std::floor(a); }
inline double ceilOf(double a) { return std::ceil(a); }
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
