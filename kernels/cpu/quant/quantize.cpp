#include "quantize.h"

#include <kernels/cpu/common/numeric_types.h>
#include <kernels/cpu/common/parallel.h>
#include <kernels/cpu/gemm/gemm.h>
#include <kernels/cuda/quant/quant_math.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace kiln::kernels {
namespace {

constexpr int64_t kGrain = 16384;

// Rounds half to even (the FPU's default mode) and clamps into Q's range.
template <class Q>
Q saturateRound(float v) {
  constexpr float lo = float(std::numeric_limits<Q>::min()), hi = float(std::numeric_limits<Q>::max());
  float r = std::nearbyint(v);
  if (!(r >= lo)) r = lo;  // also maps NaN to the low end instead of undefined behaviour
  if (r > hi) r = hi;
  return Q(r);
}

// Calls fn(axisIndex, begin, end) over every contiguous run of `inner` elements, in parallel.
template <class Fn>
void forEachAxisRun(int64_t outer, int64_t axisLen, int64_t inner, Fn&& fn) {
  parallelFor(outer * axisLen, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, inner)),
              [&](int64_t begin, int64_t end) {
                for (int64_t run = begin; run < end; ++run) fn(run % axisLen, run * inner, run * inner + inner);
              });
}

// Operands minus their zero points, as F (exact for 8-bit values). Element p of a stack of
// matrices with rows of rowLen uses zero point (p / rowLen) % zeroCount per row, p % zeroCount per
// column, or the only one.
template <class Q, class F>
void subtractZeroPoint(const Q* q, int64_t count, const Q* zero, int64_t zeroCount, bool perRow, int64_t rowLen,
                       F* out) {
  for (int64_t p = 0; p < count; ++p) {
    int64_t z = 0;
    if (zero) {
      const int64_t index = zeroCount == 1 ? 0 : perRow ? (p / rowLen) % zeroCount : p % zeroCount;
      z = int64_t(zero[index]);
    }
    out[p] = F(int64_t(q[p]) - z);
  }
}

template <class F, class TA, class TB>
void integerMatMulAs(const TA* A, const TB* B, int32_t* C, int64_t batch, const int64_t* aOffsets,
                     const int64_t* bOffsets, int64_t M, int64_t N, int64_t K, const TA* aZero, int64_t aZeroCount,
                     const TB* bZero, int64_t bZeroCount) {
  const int64_t aExtent = *std::max_element(aOffsets, aOffsets + batch) + M * K;
  const int64_t bExtent = *std::max_element(bOffsets, bOffsets + batch) + K * N;
  std::vector<F> a(static_cast<size_t>(aExtent)), b(static_cast<size_t>(bExtent)),
      c(static_cast<size_t>(batch * M * N));
  subtractZeroPoint(A, aExtent, aZero, aZeroCount, /*perRow=*/true, K, a.data());
  subtractZeroPoint(B, bExtent, bZero, bZeroCount, /*perRow=*/false, N, b.data());
  batchedMatMul<F>(a.data(), b.data(), c.data(), batch, aOffsets, bOffsets, M, N, K);
  for (size_t i = 0; i < c.size(); ++i) C[i] = int32_t(uint32_t(int64_t(c[i])));  // wraps like int32 math
}

}  // namespace

template <class In, class Q>
void quantizeLinear(const In* x, const float* scale, const Q* zeroPoint, Q* y, int64_t outer, int64_t axisLen,
                    int64_t inner) {
  forEachAxisRun(outer, axisLen, inner, [&](int64_t a, int64_t begin, int64_t end) {
    const float s = scale[a];
    const float z = zeroPoint ? float(zeroPoint[a]) : 0.0f;
    for (int64_t i = begin; i < end; ++i) y[i] = saturateRound<Q>(std::nearbyint(toFloat(x[i]) / s) + z);
  });
}

template <class Q, class Out>
void dequantizeLinear(const Q* x, const float* scale, const Q* zeroPoint, Out* y, int64_t outer, int64_t axisLen,
                      int64_t inner) {
  forEachAxisRun(outer, axisLen, inner, [&](int64_t a, int64_t begin, int64_t end) {
    const float s = scale[a];
    const int64_t z = zeroPoint ? int64_t(zeroPoint[a]) : 0;
    for (int64_t i = begin; i < end; ++i) y[i] = fromFloat<Out>(float(int64_t(x[i]) - z) * s);
  });
}

template <class In>
void quantizeLinearFp8(const In* x, const float* scale, const uint8_t* zeroPoint, uint8_t* y, int64_t outer,
                       int64_t axisLen, int64_t inner, bool saturate) {
  forEachAxisRun(outer, axisLen, inner, [&](int64_t a, int64_t begin, int64_t end) {
    const uint8_t zero = zeroPoint ? zeroPoint[a] : 0;
    for (int64_t i = begin; i < end; ++i)
      y[i] = cuda::quantizeToFloat8(toFloat(x[i]), scale[a], zero, cuda::Float8Kind::kE4M3, saturate);
  });
}

template <class Out>
void dequantizeLinearFp8(const uint8_t* x, const float* scale, const uint8_t* zeroPoint, Out* y, int64_t outer,
                         int64_t axisLen, int64_t inner) {
  forEachAxisRun(outer, axisLen, inner, [&](int64_t a, int64_t begin, int64_t end) {
    const uint8_t zero = zeroPoint ? zeroPoint[a] : 0;
    for (int64_t i = begin; i < end; ++i)
      y[i] = fromFloat<Out>(cuda::dequantizeFloat8(x[i], scale[a], zero, cuda::Float8Kind::kE4M3));
  });
}

void dynamicQuantizeLinear(const float* x, int64_t count, uint8_t* y, float* scale, uint8_t* zeroPoint) {
  float lo = 0.0f, hi = 0.0f;  // the range always includes zero so that 0 is exact
  for (int64_t i = 0; i < count; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  const float s = (hi - lo) / 255.0f;
  const uint8_t z = s == 0.0f ? 0 : saturateRound<uint8_t>(-lo / s);
  *scale = s;
  *zeroPoint = z;
  if (s == 0.0f) {  // all zeros: every value is the zero point
    std::fill(y, y + count, z);
    return;
  }
  parallelFor(count, kGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) y[i] = saturateRound<uint8_t>(std::nearbyint(x[i] / s) + float(z));
  });
}

template <class TA, class TB>
void integerMatMul(const TA* A, const TB* B, int32_t* C, int64_t batch, const int64_t* aOffsets,
                   const int64_t* bOffsets, int64_t M, int64_t N, int64_t K, const TA* aZero, int64_t aZeroCount,
                   const TB* bZero, int64_t bZeroCount) {
  if (batch <= 0 || M <= 0 || N <= 0) return;
  // |a - za| <= 255 and |b - zb| <= 255: float sums stay exact below 2^24, double far beyond.
  if (K * 255 * 255 < (int64_t(1) << 24))
    integerMatMulAs<float>(A, B, C, batch, aOffsets, bOffsets, M, N, K, aZero, aZeroCount, bZero, bZeroCount);
  else
    integerMatMulAs<double>(A, B, C, batch, aOffsets, bOffsets, M, N, K, aZero, aZeroCount, bZero, bZeroCount);
}

template <class Q>
void requantizeProducts(const int32_t* acc, int64_t batch, int64_t M, int64_t N, const float* aScale,
                        int64_t aScaleCount, const float* bScale, int64_t bScaleCount, float yScale, Q yZero, Q* y) {
  parallelFor(batch * M, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, N)), [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const float rowScale = aScale[aScaleCount == 1 ? 0 : row % M] / yScale;
      for (int64_t j = 0; j < N; ++j) {
        const float multiplier = rowScale * bScale[bScaleCount == 1 ? 0 : j];
        y[row * N + j] = saturateRound<Q>(std::nearbyint(float(acc[row * N + j]) * multiplier) + float(yZero));
      }
    }
  });
}

#define KILN_QUANTIZE(In, Q) \
  template void quantizeLinear<In, Q>(const In*, const float*, const Q*, Q*, int64_t, int64_t, int64_t);
#define KILN_QUANTIZE_ALL(In) \
  KILN_QUANTIZE(In, uint8_t) KILN_QUANTIZE(In, int8_t) KILN_QUANTIZE(In, uint16_t) KILN_QUANTIZE(In, int16_t)
KILN_QUANTIZE_ALL(float)
KILN_QUANTIZE_ALL(double)
KILN_QUANTIZE_ALL(Float16)
KILN_QUANTIZE_ALL(BFloat16)
KILN_QUANTIZE_ALL(int32_t)

#define KILN_DEQUANTIZE(Q, Out) \
  template void dequantizeLinear<Q, Out>(const Q*, const float*, const Q*, Out*, int64_t, int64_t, int64_t);
#define KILN_DEQUANTIZE_ALL(Q) \
  KILN_DEQUANTIZE(Q, float) KILN_DEQUANTIZE(Q, double) KILN_DEQUANTIZE(Q, Float16) KILN_DEQUANTIZE(Q, BFloat16)
KILN_DEQUANTIZE_ALL(uint8_t)
KILN_DEQUANTIZE_ALL(int8_t)
KILN_DEQUANTIZE_ALL(uint16_t)
KILN_DEQUANTIZE_ALL(int16_t)
KILN_DEQUANTIZE_ALL(int32_t)

#define KILN_FP8_QUANTIZE(T)                                                                                  \
  template void quantizeLinearFp8<T>(const T*, const float*, const uint8_t*, uint8_t*, int64_t, int64_t, int64_t, \
                                     bool);                                                                     \
  template void dequantizeLinearFp8<T>(const uint8_t*, const float*, const uint8_t*, T*, int64_t, int64_t, int64_t);
KILN_FP8_QUANTIZE(float)
KILN_FP8_QUANTIZE(double)
KILN_FP8_QUANTIZE(Float16)
KILN_FP8_QUANTIZE(BFloat16)

#define KILN_INTEGER_MATMUL(TA, TB)                                                                            \
  template void integerMatMul<TA, TB>(const TA*, const TB*, int32_t*, int64_t, const int64_t*, const int64_t*, \
                                      int64_t, int64_t, int64_t, const TA*, int64_t, const TB*, int64_t);
KILN_INTEGER_MATMUL(uint8_t, uint8_t)
KILN_INTEGER_MATMUL(uint8_t, int8_t)
KILN_INTEGER_MATMUL(int8_t, uint8_t)
KILN_INTEGER_MATMUL(int8_t, int8_t)

template void requantizeProducts<uint8_t>(const int32_t*, int64_t, int64_t, int64_t, const float*, int64_t,
                                          const float*, int64_t, float, uint8_t, uint8_t*);
template void requantizeProducts<int8_t>(const int32_t*, int64_t, int64_t, int64_t, const float*, int64_t, const float*,
                                         int64_t, float, int8_t, int8_t*);

}  // namespace kiln::kernels
