// The CPU kernels of kiln.QuantizedConv / kiln.QuantizedMatMul: rounding (half to even),
// saturation to [-128, 127], exact int32 sums and per-channel dequantization on values worked out
// by hand, and on random odd-sized problems against the float op run on the dequantized operands.
#include <kiln/network.h>
#include <kiln/error.h>
#include <kiln/reference_executor.h>

#include "backends/support/quantized_layer_checks.h"
#include "common/test_models.h"
#include "ops/quantized.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

using namespace kiln;
using kiln::test::expectClose;
using kiln::test::oneLayer;
using kiln::test::runOne;

namespace {

// q = saturate(round_half_even(x / scale)) * scale: what the int8 layer sees of x.
HostTensor dequantized(const HostTensor& x, float scale) {
  HostTensor out = x.clone();
  for (int64_t i = 0; i < out.elementCount(); ++i) {
    float q = std::nearbyint(x.data<float>()[i] / scale);
    out.data<float>()[i] = std::clamp(q, -128.0f, 127.0f) * scale;
  }
  return out;
}

// int8 weights of `dims` with random values in [-127, 127].
HostTensor randomInt8(std::vector<int64_t> dims, uint32_t seed) {
  HostTensor t(DataType::kInt8, std::move(dims));
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(-127, 127);
  for (int64_t i = 0; i < t.elementCount(); ++i) t.data<int8_t>()[i] = int8_t(dist(rng));
  return t;
}

// Weights dequantized per channel: element i is in channel (i / inner) % channels.
HostTensor dequantizedWeights(const HostTensor& q, const std::vector<float>& scales, int64_t inner) {
  HostTensor out(DataType::kFloat32, q.dims());
  const int64_t channels = int64_t(scales.size());
  for (int64_t i = 0; i < q.elementCount(); ++i)
    out.data<float>()[i] = float(q.data<int8_t>()[i]) * scales[size_t((i / inner) % channels)];
  return out;
}

void expectNear(const HostTensor& actual, const std::vector<float>& expected) {
  ASSERT_EQ(actual.elementCount(), int64_t(expected.size()));
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_NEAR(actual.data<float>()[i], expected[i], 1e-5 * (1 + std::fabs(expected[i]))) << "element " << i;
}

}  // namespace

// x / 0.5 = 2.5 -> 2 and 3.5 -> 4 (ties to even), -200 -> -128 and 140 -> 127 (saturated), 0.6 -> 1,
// -0.5 -> 0; then exact sums with the int8 weights and acc * 0.5 * w_scale[m] + bias[m].
TEST(QuantizedConvKernel, RoundsHalfToEvenSaturatesAndDequantizesPerChannel) {
  Network network;
  network.addConstant("w", HostTensor::fromVector<int8_t>({2, 2, 1, 1}, {1, -2, 3, 4}));
  network.addConstant("b", HostTensor::fromVector<float>({2}, {0.5f, -1.0f}));
  network.addConstant("xs", HostTensor::scalar<float>(0.5f));
  network.addConstant("ws", HostTensor::fromVector<float>({2}, {0.1f, 0.2f}));
  Layer conv = oneLayer(quantized::kQuantizedConv, {"x", "w", "b", "", "xs", "ws"});
  conv.attributes[fused::kBase] = std::string("Conv");
  network.addLayer(conv);
  const HostTensor x = HostTensor::fromVector<float>({1, 2, 1, 3}, {1.25f, 1.75f, -100.0f, 70.0f, 0.3f, -0.25f});
  // q: channel 0 = [2, 4, -128], channel 1 = [127, 1, 0].
  // m0: 1*q0 - 2*q1 = [-252, 2, -128]; m1: 3*q0 + 4*q1 = [514, 16, -384].
  expectNear(runOne(network, {{"x", x}}), {-252 * 0.05f + 0.5f, 2 * 0.05f + 0.5f, -128 * 0.05f + 0.5f,
                                           514 * 0.1f - 1.0f, 16 * 0.1f - 1.0f, -384 * 0.1f - 1.0f});
}

// Odd sizes, pads, stride, groups, a residual and an activation: the same as kiln.FusedConv on the
// dequantized X and W (whose float products of small integers times scales are near exact).
TEST(QuantizedConvKernel, MatchesTheFloatConvolutionOfTheDequantizedOperands) {
  const float xScale = 0.013f;
  const std::vector<float> wScales = {0.011f, 0.02f, 0.007f, 0.016f, 0.03f, 0.009f};
  const HostTensor x = test::randomFloats({2, 4, 9, 7}, 11, -1.5f, 1.8f);
  const HostTensor w = randomInt8({6, 2, 3, 3}, 12);
  test::expectQuantizedConvMatches(nullptr, x, w, xScale, wScales, dequantized(x, xScale),
                                   dequantizedWeights(w, wScales, 2 * 3 * 3));
}

// Batched A [2, 3, 5] by int8 B [5, 4] with per-column scales, a bias and a residual; and by a
// float B [2, 5, 4] quantized per tensor on entry.
TEST(QuantizedMatMulKernel, MatchesTheFloatMatMulOfTheDequantizedOperands) {
  const float aScale = 0.009f, bScale = 0.004f;
  const std::vector<float> columnScales = {0.01f, 0.003f, 0.02f, 0.007f};
  const HostTensor a = test::randomFloats({2, 3, 5}, 21, -1.0f, 1.3f);
  const HostTensor b = randomInt8({5, 4}, 22);
  const HostTensor bias = test::randomFloats({4}, 23);
  const HostTensor residual = test::randomFloats({2, 3, 4}, 24);
  {
    Network q;
    q.addConstant("b", b);
    q.addConstant("c", bias);
    q.addConstant("as", HostTensor::scalar<float>(aScale));
    q.addConstant("bs", HostTensor::fromVector<float>({4}, columnScales));
    Layer mm = oneLayer(quantized::kQuantizedMatMul, {"a", "b", "c", "z", "as", "bs"});
    mm.attributes[fused::kActivation] = std::string("Relu");
    q.addLayer(mm);
    Network f;
    f.addConstant("b", dequantizedWeights(b, columnScales, 1));
    f.addConstant("c", bias);
    Layer reference = oneLayer(fused::kFusedMatMul, {"a", "b", "c", "z"});
    reference.attributes[fused::kBase] = std::string("MatMul");
    reference.attributes[fused::kActivation] = std::string("Relu");
    f.addLayer(reference);
    expectClose(runOne(q, {{"a", a}, {"z", residual}}), runOne(f, {{"a", dequantized(a, aScale)}, {"z", residual}}));
  }
  {
    const HostTensor bFloat = test::randomFloats({2, 5, 4}, 25, -0.6f, 0.5f);
    Network q;
    q.addConstant("as", HostTensor::scalar<float>(aScale));
    q.addConstant("bs", HostTensor::scalar<float>(bScale));
    q.addLayer(oneLayer(quantized::kQuantizedMatMul, {"a", "b", "", "", "as", "bs"}));
    Network f;
    f.addLayer(oneLayer("MatMul", {"a", "b"}));
    expectClose(runOne(q, {{"a", a}, {"b", bFloat}}),
                runOne(f, {{"a", dequantized(a, aScale)}, {"b", dequantized(bFloat, bScale)}}));
  }
}

TEST(QuantizedConvKernel, FloatWeightsAreRefusedByInference) {
  Network network;
  network.addConstant("w", test::randomFloats({2, 2, 1, 1}, 1));
  network.addConstant("xs", HostTensor::scalar<float>(0.5f));
  network.addConstant("ws", HostTensor::scalar<float>(0.5f));
  Layer conv = oneLayer(quantized::kQuantizedConv, {"x", "w", "", "", "xs", "ws"});
  conv.attributes[fused::kBase] = std::string("Conv");
  network.addLayer(conv);
  EXPECT_THROW(runOne(network, {{"x", test::randomFloats({1, 2, 2, 2}, 2)}}), Error);
}

namespace {

// A random int8 residual and its dequantized floats, float(q) * scale rounded once to fp32:
// quantized.h's definition of an int8 residual with z_scale.
struct Int8Residual {
  HostTensor q, dequantized;
};
Int8Residual randomInt8Residual(std::vector<int64_t> dims, float scale, uint32_t seed) {
  Int8Residual r{HostTensor(DataType::kInt8, dims), HostTensor(DataType::kFloat32, dims)};
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(-128, 127);
  for (int64_t i = 0; i < r.q.elementCount(); ++i) {
    r.q.data<int8_t>()[i] = int8_t(dist(rng));
    r.dequantized.data<float>()[i] = float(r.q.data<int8_t>()[i]) * scale;
  }
  return r;
}

void expectSameBits(const HostTensor& actual, const HostTensor& expected) {
  ASSERT_EQ(actual.dims(), expected.dims());
  ASSERT_EQ(actual.dtype(), expected.dtype());
  for (int64_t i = 0; i < expected.elementCount(); ++i)
    ASSERT_EQ(actual.data<float>()[i], expected.data<float>()[i]) << "element " << i;
}

}  // namespace

// An int8 residual with z_scale (input 11) adds float(z_q) * z_scale where a float residual is
// added, before or after the activation: the layer equals the same one given those floats, bit for
// bit, and the float convolution of the dequantized operands up to float rounding.
TEST(QuantizedConvKernel, AnInt8ResidualIsAddedAsItsValueTimesItsScale) {
  const float xScale = 0.017f, zScale = 0.0123f;
  const std::vector<float> wScales = {0.011f, 0.02f, 0.007f, 0.016f, 0.03f};
  const HostTensor x = test::randomFloats({3, 4, 7, 5}, 31, -1.2f, 1.7f);
  const HostTensor w = randomInt8({5, 4, 3, 3}, 32);
  const HostTensor bias = test::randomFloats({5}, 33);
  const Int8Residual z = randomInt8Residual({3, 5, 7, 5}, zScale, 34);
  for (const int64_t before : {int64_t(1), int64_t(0)}) {
    auto network = [&](const char* op, bool int8Residual, bool dequantizedOperands) {
      auto n = std::make_unique<Network>();
      n->addConstant("w", dequantizedOperands ? dequantizedWeights(w, wScales, 4 * 3 * 3) : w);
      n->addConstant("b", bias);
      n->addConstant("xs", HostTensor::scalar<float>(xScale));
      n->addConstant("ws", HostTensor::fromVector<float>({5}, wScales));
      n->addConstant("zs", HostTensor::scalar<float>(zScale));
      std::vector<std::string> inputs{"x", "w", "b", "z"};
      if (!dequantizedOperands) {
        inputs.insert(inputs.end(), {"xs", "ws"});
        if (int8Residual) inputs.insert(inputs.end(), {"", "", "", "", "", "zs"});
      }
      Layer conv = oneLayer(op, inputs);
      conv.attributes[fused::kBase] = std::string("Conv");
      conv.attributes["pads"] = std::vector<int64_t>{1, 1, 1, 1};
      conv.attributes[fused::kActivation] = std::string("Relu");
      conv.attributes[fused::kResidualBeforeActivation] = before;
      n->addLayer(conv);
      return n;
    };
    const HostTensor int8Result = runOne(*network(quantized::kQuantizedConv, true, false), {{"x", x}, {"z", z.q}});
    expectSameBits(int8Result,
                   runOne(*network(quantized::kQuantizedConv, false, false), {{"x", x}, {"z", z.dequantized}}));
    expectClose(int8Result, runOne(*network(fused::kFusedConv, false, true),
                                   {{"x", dequantized(x, xScale)}, {"z", z.dequantized}}));
  }
}

// The same for a matmul ([2, 3, 5] by int8 weights [5, 4]), whose epilogue runs after the product.
TEST(QuantizedMatMulKernel, AnInt8ResidualIsAddedAsItsValueTimesItsScale) {
  const float aScale = 0.009f, zScale = 0.021f;
  const HostTensor a = test::randomFloats({2, 3, 5}, 41, -1.0f, 1.3f);
  const HostTensor b = randomInt8({5, 4}, 42);
  const Int8Residual z = randomInt8Residual({2, 3, 4}, zScale, 43);
  auto network = [&](bool int8Residual) {
    auto n = std::make_unique<Network>();
    n->addConstant("b", b);
    n->addConstant("as", HostTensor::scalar<float>(aScale));
    n->addConstant("bs", HostTensor::fromVector<float>({4}, {0.01f, 0.003f, 0.02f, 0.007f}));
    n->addConstant("zs", HostTensor::scalar<float>(zScale));
    std::vector<std::string> inputs{"a", "b", "", "z", "as", "bs"};
    if (int8Residual) inputs.insert(inputs.end(), {"", "", "", "", "", "zs"});
    Layer mm = oneLayer(quantized::kQuantizedMatMul, inputs);
    mm.attributes[fused::kActivation] = std::string("Sigmoid");
    mm.attributes[fused::kResidualBeforeActivation] = int64_t(0);
    n->addLayer(mm);
    return n;
  };
  expectSameBits(runOne(*network(true), {{"a", a}, {"z", z.q}}),
                 runOne(*network(false), {{"a", a}, {"z", z.dequantized}}));
}

// An int8 residual needs its scale, a scale needs an int8 residual, and an fp8 layer takes none.
TEST(QuantizedConvKernel, AnInt8ResidualWithoutItsScaleOrInAnFp8LayerIsRefusedByInference) {
  auto run = [](const char* precision, const HostTensor& w, bool withScale, const HostTensor& z) {
    Network network;
    network.addConstant("w", w);
    network.addConstant("xs", HostTensor::scalar<float>(0.5f));
    network.addConstant("ws", HostTensor::scalar<float>(0.5f));
    network.addConstant("zs", HostTensor::scalar<float>(0.25f));
    std::vector<std::string> inputs{"x", "w", "", "z", "xs", "ws"};
    if (withScale) inputs.insert(inputs.end(), {"", "", "", "", "", "zs"});
    Layer conv = oneLayer(quantized::kQuantizedConv, inputs, precision);
    conv.attributes[fused::kBase] = std::string("Conv");
    network.addLayer(conv);
    return runOne(network, {{"x", test::randomFloats({1, 2, 2, 2}, 2)}, {"z", z}});
  };
  const HostTensor w8 = randomInt8({2, 2, 1, 1}, 3);
  const HostTensor zq = randomInt8Residual({1, 2, 2, 2}, 0.25f, 4).q;
  EXPECT_NO_THROW(run(nullptr, w8, true, zq));
  EXPECT_THROW(run(nullptr, w8, false, zq), Error);
  EXPECT_THROW(run(nullptr, w8, true, test::randomFloats({1, 2, 2, 2}, 5)), Error);
  HostTensor w8e4m3(DataType::kFloat8E4M3, {2, 2, 1, 1});
  std::fill_n(static_cast<uint8_t*>(w8e4m3.rawData()), 4, uint8_t(0x38));  // 1.0
  EXPECT_THROW(run("fp8", w8e4m3, true, zq), Error);
}
