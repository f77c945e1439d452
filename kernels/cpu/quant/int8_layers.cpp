#include "int8_layers.h"

#include "../common/parallel.h"
#include "quantize.h"

#include <algorithm>

#include <vector>

namespace kiln::kernels {

template <class Q>
void centeredFromQuantized(const Q* q, int64_t count, Q zero, int16_t* centered) {
  parallelFor(count, 16384, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) centered[i] = int16_t(int(q[i]) - int(zero));
  });
}

template <class Q>
void centeredFromFloat(const float* x, int64_t count, float scale, Q zero, int16_t* centered) {
  std::vector<Q> q(static_cast<size_t>(count));
  quantizeLinear<float, Q>(x, &scale, &zero, q.data(), 1, 1, count);
  centeredFromQuantized(q.data(), count, zero, centered);
}

template void centeredFromQuantized<int8_t>(const int8_t*, int64_t, int8_t, int16_t*);
template void centeredFromQuantized<uint8_t>(const uint8_t*, int64_t, uint8_t, int16_t*);
template void centeredFromFloat<int8_t>(const float*, int64_t, float, int8_t, int16_t*);
template void centeredFromFloat<uint8_t>(const float*, int64_t, float, uint8_t, int16_t*);

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
void exactConvolution(const ConvShape& shape, const int16_t* xq, const int8_t* w, int64_t xCount, int64_t wCount,
                      T* acc) {
  std::vector<T> xs(xq, xq + xCount), ws(w, w + wCount);
  convolution<T>(shape, xs.data(), ws.data(), nullptr, acc);
}

}  // namespace

void int8Convolution(const ConvShape& shape, const int16_t* x, float xScale, const int8_t* w, const float* wScales,
                     int64_t wScaleCount, const float* bias, const Epilogue& epilogue, float* y) {
  const int64_t xCount = shape.batch * shape.inChannels * shape.window.inSize();
  const int64_t sumLength = (shape.inChannels / shape.group) * shape.window.kernelSize();
  const int64_t wCount = shape.outChannels * sumLength;
  const int64_t plane = shape.window.outSize(), yCount = shape.batch * shape.outChannels * plane;
  std::vector<float> multipliers(static_cast<size_t>(shape.outChannels));
  dequantizeMultipliers(xScale, wScales, wScaleCount, shape.outChannels, multipliers.data());
  // |q - zero| <= 255 and |w| <= 128: a sum of n products stays below n * 255 * 128.
  if (sumLength * 255 * 128 < (int64_t(1) << 24)) {
    exactConvolution<float>(shape, x, w, xCount, wCount, y);
  } else {
    std::vector<double> acc(static_cast<size_t>(yCount));
    exactConvolution<double>(shape, x, w, xCount, wCount, acc.data());
    std::copy(acc.begin(), acc.end(), y);  // integers below 2^31: float(acc) as int32 math would give
  }
  dequantizeConvolutionSums(shape, multipliers.data(), bias, epilogue, y);
}

void dequantizeConvolutionAccumulators(const ConvShape& shape, const int32_t* acc, float xScale, const float* wScales,
                                       int64_t wScaleCount, const float* bias, const Epilogue& epilogue, float* y) {
  std::vector<float> multipliers(static_cast<size_t>(shape.outChannels));
  dequantizeMultipliers(xScale, wScales, wScaleCount, shape.outChannels, multipliers.data());
  const int64_t plane = shape.window.outSize();
  // float(acc) * m: int8Convolution's float(sum) *= m, its sums being these integers.
  dequantizeAccumulators(acc, shape.batch, shape.outChannels, plane, multipliers.data(), y);
  applyEpilogue(y, shape.batch * shape.outChannels * plane, withChannelBias(epilogue, bias, shape.outChannels, plane));
}

void dequantizeConvolutionSums(const ConvShape& shape, const float* multipliers, const float* bias,
                               const Epilogue& epilogue, float* y) {
  const int64_t plane = shape.window.outSize();
  parallelFor(shape.batch * shape.outChannels, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, plane)),
              [&](int64_t begin, int64_t end) {
                for (int64_t p = begin; p < end; ++p) {
                  const float m = multipliers[size_t(p % shape.outChannels)];
                  for (float* v = y + p * plane; v < y + (p + 1) * plane; ++v) *v *= m;
                }
              });
  applyEpilogue(y, shape.batch * shape.outChannels * plane, withChannelBias(epilogue, bias, shape.outChannels, plane));
}

}  // namespace kiln::kernels
