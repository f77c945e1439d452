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

void int8Convolution(const ConvShape& shape, const float* x, float xScale, const int8_t* w, const float* wScales,
                     int64_t wScaleCount, const float* bias, const Epilogue& epilogue, float* y) {
  const int64_t xCount = shape.batch * shape.inChannels * shape.window.inSize();
  const int64_t wCount = shape.outChannels * (shape.inChannels / shape.group) * shape.window.kernelSize();
  const int64_t plane = shape.window.outSize(), yCount = shape.batch * shape.outChannels * plane;
  std::vector<int8_t> xq(static_cast<size_t>(xCount));
  quantizeSymmetric(x, xCount, xScale, xq.data());
  // convolutionInt32 computes in int32: |q| <= 128, so the products are exact.
  std::vector<int32_t> xWide(xq.begin(), xq.end()), wWide(w, w + wCount), acc(static_cast<size_t>(yCount));
  convolutionInt32(shape, xWide.data(), wWide.data(), acc.data());
  std::vector<float> multipliers(static_cast<size_t>(shape.outChannels));
  dequantizeMultipliers(xScale, wScales, wScaleCount, shape.outChannels, multipliers.data());
  dequantizeAccumulators(acc.data(), shape.batch, shape.outChannels, plane, multipliers.data(), y);
  applyEpilogue(y, yCount, withChannelBias(epilogue, bias, shape.outChannels, plane));
}

}  // namespace kiln::kernels
