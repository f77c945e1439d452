#include "int8_layers.h"

#include "../common/parallel.h"
#include "quantize.h"

#include <algorithm>

#include <vector>

namespace kiln::kernels {

void quantizeSymmetric(const float* x, int64_t count, float scale, int8_t* q) {
  quantizeLinear<float, int8_t>(x, &scale, nullptr, q, 1, 1, count);
}

void dequantizeMultipliers(float xScale, const float* wScales, int64_t wScaleCount, int64_t channels, float* out) {
  for (int64_t c = 0; c < channels; ++c) out[c] = xScale * wScales[wScaleCount == 1 ? 0 : c];
}

void dequantizeAccumulators(const int32_t* acc, int64_t rows, int64_t channels, int64_t plane,
                            const float* multipliers, float* y) {
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, plane * channels));
  parallelFor(rows, grain, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r)
      for (int64_t c = 0; c < channels; ++c) {
        const int64_t first = (r * channels + c) * plane;
        const float m = multipliers[c];
        for (int64_t p = first; p < first + plane; ++p) y[p] = float(acc[p]) * m;
      }
  });
}

namespace {

// The convolution of the quantized values, each sum exact: they are integers, so a float (double)
// computation is exact while every partial sum stays below 2^24 (2^53), whatever order BLAS adds
// them in. `T` is float when the longest sum allows it.
template <class T>
void exactConvolution(const ConvShape& shape, const int8_t* xq, const int8_t* w, int64_t xCount, int64_t wCount,
                      T* acc) {
  std::vector<T> xs(xq, xq + xCount), ws(w, w + wCount);
  convolution<T>(shape, xs.data(), ws.data(), nullptr, acc);
}

}  // namespace

void int8Convolution(const ConvShape& shape, const float* x, float xScale, const int8_t* w, const float* wScales,
                     int64_t wScaleCount, const float* bias, const Epilogue& epilogue, float* y) {
  const int64_t xCount = shape.batch * shape.inChannels * shape.window.inSize();
  const int64_t sumLength = (shape.inChannels / shape.group) * shape.window.kernelSize();
  const int64_t wCount = shape.outChannels * sumLength;
  const int64_t plane = shape.window.outSize(), yCount = shape.batch * shape.outChannels * plane;
  std::vector<int8_t> xq(static_cast<size_t>(xCount));
  quantizeSymmetric(x, xCount, xScale, xq.data());
  std::vector<float> multipliers(static_cast<size_t>(shape.outChannels));
  dequantizeMultipliers(xScale, wScales, wScaleCount, shape.outChannels, multipliers.data());
  // |q| <= 128 and |w| <= 127: a sum of n products stays below n * 2^14.
  if (sumLength * 128 * 127 < (int64_t(1) << 24)) {
    exactConvolution<float>(shape, xq.data(), w, xCount, wCount, y);
  } else {
    std::vector<double> acc(static_cast<size_t>(yCount));
    exactConvolution<double>(shape, xq.data(), w, xCount, wCount, acc.data());
    std::copy(acc.begin(), acc.end(), y);  // integers below 2^31: float(acc) as int32 math would give
  }
  parallelFor(shape.batch * shape.outChannels, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, plane)),
              [&](int64_t begin, int64_t end) {
                for (int64_t p = begin; p < end; ++p) {
                  const float m = multipliers[size_t(p % shape.outChannels)];
                  for (float* v = y + p * plane; v < y + (p + 1) * plane; ++v) *v *= m;
                }
              });
  applyEpilogue(y, yCount, withChannelBias(epilogue, bias, shape.outChannels, plane));
}

}  // namespace kiln::kernels
