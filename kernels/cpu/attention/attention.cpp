#include "attention.h"

#include "kernels/cpu/common/parallel.h"
#include "kernels/cpu/common/single_threaded_blas.h"
#include "kernels/cpu/elementwise/fast_math.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace kiln::kernels {
namespace {

// Subtracting the row maximum keeps exp() from overflowing; a row masked entirely to -inf gives
// zeros rather than NaN. The mask (when given) is added on the way; exp is the vectorised
// approximation the Exp and Softmax kernels use.
void softmaxRow(float* row, const float* maskRow, int64_t maskStride, int64_t length) {
  using namespace lanes;
  if (maskRow)
    for (int64_t j = 0; j < length; ++j) row[j] += maskRow[j * maskStride];
  float maximum = -std::numeric_limits<float>::infinity();
  for (int64_t j = 0; j < length; ++j) maximum = std::max(maximum, row[j]);
  if (maximum == -std::numeric_limits<float>::infinity()) {
    std::fill(row, row + length, 0.0f);
    return;
  }
  float sum = 0;
  int64_t j = 0;
#if KILN_FLOAT8_LANES
  Float8 sums(0.0f);
  for (; j + 8 <= length; j += 8) {
    Float8 e = expApprox(load(row + j, Float8{}) - Float8(maximum));
    store(row + j, e);
    sums = sums + e;
  }
  float partial[8];
  store(partial, sums);
  for (float value : partial) sum += value;
#endif
  for (; j < length; ++j) {
    row[j] = expApprox(row[j] - maximum);
    sum += row[j];
  }
  const float inverse = 1.0f / sum;
  for (j = 0; j < length; ++j) row[j] *= inverse;
}

void attendSlice(const AttentionProblem& p, int64_t b, const float* q, const float* k, const float* v, float* out,
                 std::vector<float>& scores) {
  const int64_t lq = p.queryLength, lk = p.keyLength, d = p.headDim, dv = p.valueDim;
  scores.resize(size_t(lq * lk));
  cblas_sgemm(CblasRowMajor, CblasNoTrans, p.keyTransposed ? CblasNoTrans : CblasTrans, int(lq), int(lk), int(d),
              p.scale, q, int(d), k, p.keyTransposed ? int(lk) : int(d), 0.0f, scores.data(), int(lk));
  for (int64_t i = 0; i < lq; ++i) {
    const float* maskRow = p.mask ? p.mask + p.maskOffsets[b] + i * p.maskRowStride : nullptr;
    softmaxRow(scores.data() + i * lk, maskRow, p.maskColStride, lk);
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(lq), int(dv), int(lk), 1.0f, scores.data(), int(lk), v,
              int(dv), 0.0f, out, int(dv));
}

}  // namespace

void attention(const AttentionProblem& p, const float* q, const float* k, const float* v, float* out) {
  const int64_t qSize = p.queryLength * p.headDim, kSize = p.keyLength * p.headDim;
  const int64_t vSize = p.keyLength * p.valueDim, outSize = p.queryLength * p.valueDim;
  SingleThreadedBlas blasGuard;  // the slices are spread over the pool instead
  parallelFor(p.batch, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> scores;
    for (int64_t b = begin; b < end; ++b)
      attendSlice(p, b, q + b * qSize, k + b * kSize, v + b * vSize, out + b * outSize, scores);
  });
}

}  // namespace kiln::kernels
