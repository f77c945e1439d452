// The fused-epilogue convolution, the epilogue itself and the attention kernel on random data,
// checked against naive loops written here (exact std::erf / std::exp, direct convolution).
#include <kernels/cpu/attention/attention.h>
#include <kernels/cpu/common/parallel.h>
#include <kernels/cpu/conv/conv.h>
#include <kernels/cpu/fused/epilogue.h>

#include "common/test_models.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

using namespace kiln;

namespace {

std::vector<float> randomValues(int64_t count, uint32_t seed) {
  HostTensor t = test::randomFloats({count}, seed);
  return std::vector<float>(t.data<float>(), t.data<float>() + count);
}

void expectNear(const std::vector<float>& actual, const std::vector<float>& expected, float tolerance) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i)
    ASSERT_NEAR(actual[i], expected[i], tolerance * std::max(1.0f, std::fabs(expected[i]))) << "element " << i;
}

struct ConvCase {
  int64_t batch, channels, outChannels, size, kernel, stride, pad;
};

// relu(conv(x, w) + bias + residual), computed directly.
std::vector<float> naiveConvBiasResidualRelu(const ConvCase& c, int64_t outSize, const std::vector<float>& x,
                                             const std::vector<float>& w, const std::vector<float>& bias,
                                             const std::vector<float>& residual) {
  std::vector<float> y(size_t(c.batch * c.outChannels * outSize * outSize));
  for (int64_t n = 0; n < c.batch; ++n)
    for (int64_t m = 0; m < c.outChannels; ++m)
      for (int64_t oh = 0; oh < outSize; ++oh)
        for (int64_t ow = 0; ow < outSize; ++ow) {
          double acc = bias[size_t(m)];
          for (int64_t ch = 0; ch < c.channels; ++ch)
            for (int64_t kh = 0; kh < c.kernel; ++kh)
              for (int64_t kw = 0; kw < c.kernel; ++kw) {
                int64_t ih = oh * c.stride - c.pad + kh, iw = ow * c.stride - c.pad + kw;
                if (ih < 0 || iw < 0 || ih >= c.size || iw >= c.size) continue;
                acc += double(x[size_t(((n * c.channels + ch) * c.size + ih) * c.size + iw)]) *
                       w[size_t(((m * c.channels + ch) * c.kernel + kh) * c.kernel + kw)];
              }
          size_t at = size_t(((n * c.outChannels + m) * outSize + oh) * outSize + ow);
          y[at] = std::max(0.0f, float(acc) + residual[at]);
        }
  return y;
}

class FusedConvolution : public ::testing::TestWithParam<ConvCase> {};

TEST_P(FusedConvolution, MatchesDirectLoops) {
  const ConvCase c = GetParam();
  kernels::setCpuThreadCount(2);
  const int64_t outSize = (c.size + 2 * c.pad - c.kernel) / c.stride + 1;
  kernels::ConvShape shape;
  shape.batch = c.batch;
  shape.inChannels = c.channels;
  shape.outChannels = c.outChannels;
  for (int a = 1; a < 3; ++a) {
    shape.window.in[a] = c.size;
    shape.window.out[a] = outSize;
    shape.window.kernel[a] = c.kernel;
    shape.window.stride[a] = c.stride;
    shape.window.padBegin[a] = shape.window.padEnd[a] = c.pad;
  }
  const int64_t outCount = c.batch * c.outChannels * outSize * outSize;
  auto x = randomValues(c.batch * c.channels * c.size * c.size, 1);
  auto w = randomValues(c.outChannels * c.channels * c.kernel * c.kernel, 2);
  auto bias = randomValues(c.outChannels, 3), residual = randomValues(outCount, 4);
  kernels::Epilogue e;
  e.activation = kernels::Activation::kRelu;
  e.residual = residual.data();
  std::vector<float> y(size_t(outCount), NAN);  // the kernel must write every element
  kernels::convolution(shape, x.data(), w.data(), bias.data(), e, y.data());
  expectNear(y, naiveConvBiasResidualRelu(c, outSize, x, w, bias, residual), 1e-4f);
}

// Shapes that take each path: GEMM split by columns (wide planes), by rows (narrow planes), one
// task per thread (batch 2), pointwise (no im2col) and small GEMMs on one thread.
INSTANTIATE_TEST_SUITE_P(Paths, FusedConvolution,
                         ::testing::Values(ConvCase{1, 8, 16, 20, 3, 1, 1}, ConvCase{1, 32, 64, 5, 3, 1, 1},
                                           ConvCase{2, 8, 12, 9, 3, 2, 1}, ConvCase{1, 64, 32, 12, 1, 1, 0},
                                           ConvCase{1, 3, 4, 6, 3, 1, 0}));

TEST(FusedEpilogue, ColumnBiasGeluThenResidual) {
  kernels::setCpuThreadCount(2);
  const int64_t rows = 300, columns = 77;  // columns not a multiple of the vector width
  auto data = randomValues(rows * columns, 5), bias = randomValues(columns, 6), residual = randomValues(rows * columns, 7);
  std::vector<float> expected(data.size());
  for (size_t i = 0; i < data.size(); ++i) {
    float v = data[i] * 3 + bias[i % size_t(columns)];
    expected[i] = 0.5f * v * (1.0f + std::erf(v / std::sqrt(2.0f))) + residual[i];
  }
  for (float& v : data) v *= 3;  // reach the saturated parts of erf
  kernels::Epilogue e;
  e.activation = kernels::Activation::kGelu;
  e.bias = bias.data();
  e.biasLength = columns;
  e.residual = residual.data();
  e.residualBeforeActivation = false;
  kernels::applyEpilogue(data.data(), rows * columns, e);
  expectNear(data, expected, 1e-5f);
}

TEST(FusedEpilogue, ChannelBiasClipOnASpan) {
  const int64_t channels = 5, plane = 13;
  auto data = randomValues(channels * plane, 8), bias = randomValues(channels, 9);
  std::vector<float> expected = data;
  const int64_t first = 7, count = 40;  // starts and ends inside planes
  for (int64_t i = first; i < first + count; ++i)
    expected[size_t(i)] = std::clamp(data[size_t(i)] + bias[size_t(i / plane)], -0.25f, 0.5f);
  kernels::Epilogue e;
  e.activation = kernels::Activation::kClip;
  e.alpha = -0.25f;
  e.beta = 0.5f;
  e.bias = bias.data();
  e.biasLength = channels;
  e.biasInner = plane;
  kernels::applyEpilogueSpan(data.data(), first, count, e);
  expectNear(data, expected, 1e-6f);
}

TEST(AttentionKernel, MaskedSoftmaxMatchesDirectLoops) {
  kernels::setCpuThreadCount(2);
  kernels::AttentionProblem p;
  p.batch = 3;
  p.queryLength = 11;
  p.keyLength = 21;  // not a multiple of the vector width
  p.headDim = p.valueDim = 8;
  p.scale = 0.35f;
  auto q = randomValues(p.batch * p.queryLength * p.headDim, 10);
  auto k = randomValues(p.batch * p.keyLength * p.headDim, 11);
  auto v = randomValues(p.batch * p.keyLength * p.valueDim, 12);
  std::vector<float> mask(size_t(p.keyLength), 0.0f);  // one row shared by every query: the padded tail is off
  std::fill(mask.end() - 5, mask.end(), -10000.0f);
  std::vector<int64_t> offsets(size_t(p.batch), 0);
  p.mask = mask.data();
  p.maskOffsets = offsets.data();
  p.maskColStride = 1;
  std::vector<float> out(size_t(p.batch * p.queryLength * p.valueDim)), expected(out.size());
  kernels::attention(p, q.data(), k.data(), v.data(), out.data());
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t i = 0; i < p.queryLength; ++i) {
      std::vector<double> weights(size_t(p.keyLength));
      double maximum = -INFINITY, sum = 0;
      for (int64_t j = 0; j < p.keyLength; ++j) {
        double s = 0;
        for (int64_t d = 0; d < p.headDim; ++d)
          s += double(q[size_t((b * p.queryLength + i) * p.headDim + d)]) * k[size_t((b * p.keyLength + j) * p.headDim + d)];
        weights[size_t(j)] = s * p.scale + mask[size_t(j)];
        maximum = std::max(maximum, weights[size_t(j)]);
      }
      for (double& wgt : weights) sum += wgt = std::exp(wgt - maximum);
      for (int64_t d = 0; d < p.valueDim; ++d) {
        double acc = 0;
        for (int64_t j = 0; j < p.keyLength; ++j)
          acc += weights[size_t(j)] / sum * v[size_t((b * p.keyLength + j) * p.valueDim + d)];
        expected[size_t((b * p.queryLength + i) * p.valueDim + d)] = float(acc);
      }
    }
  expectNear(out, expected, 1e-5f);
}

}  // namespace
