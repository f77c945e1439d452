#include "attention.h"

#include "kernels/cpu/common/parallel.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace kiln::kernels {
namespace {

// Subtracting the row maximum keeps exp() from overflowing; a row masked entirely to -inf gives
// zeros rather than NaN.
void softmaxRow(float* row, int64_t length) {
  float maximum = -std::numeric_limits<float>::infinity();
  for (int64_t j = 0; j < length; ++j) maximum = std::max(maximum, row[j]);
  if (maximum == -std::numeric_limits<float>::infinity()) {
    std::fill(row, row + length, 0.0f);
    return;
  }
  float sum = 0;
  for (int64_t j = 0; j < length; ++j) {
    row[j] = std::exp(row[j] - maximum);
    sum += row[j];
  }
  float inverse = 1.0f / sum;
  for (int64_t j = 0; j < length; ++j) row[j] *= inverse;
}

void attendSlice(const AttentionProblem& p, int64_t b, const float* q, const float* k, const float* v, float* out,
                 std::vector<float>& scores) {
  const int64_t lq = p.queryLength, lk = p.keyLength, d = p.headDim, dv = p.valueDim;
  scores.resize(size_t(lq * lk));
  cblas_sgemm(CblasRowMajor, CblasNoTrans, p.keyTransposed ? CblasNoTrans : CblasTrans, int(lq), int(lk), int(d),
              p.scale, q, int(d), k, p.keyTransposed ? int(lk) : int(d), 0.0f, scores.data(), int(lk));
  for (int64_t i = 0; i < lq; ++i) {
    float* row = scores.data() + i * lk;
    if (p.mask) {
      const float* maskRow = p.mask + p.maskOffsets[b] + i * p.maskRowStride;
      for (int64_t j = 0; j < lk; ++j) row[j] += maskRow[j * p.maskColStride];
    }
    softmaxRow(row, lk);
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(lq), int(dv), int(lk), 1.0f, scores.data(), int(lk), v,
              int(dv), 0.0f, out, int(dv));
}

}  // namespace

void attention(const AttentionProblem& p, const float* q, const float* k, const float* v, float* out) {
  const int64_t qSize = p.queryLength * p.headDim, kSize = p.keyLength * p.headDim;
  const int64_t vSize = p.keyLength * p.valueDim, outSize = p.queryLength * p.valueDim;
  parallelFor(p.batch, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> scores;
    for (int64_t b = begin; b < end; ++b)
      attendSlice(p, b, q + b * qSize, k + b * kSize, v + b * vSize, out + b * outSize, scores);
  });
}

}  // namespace kiln::kernels
