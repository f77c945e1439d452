// The CPU backend's oneDNN tactic for int8 kiln.QuantizedConv / kiln.QuantizedMatMul: oneDNN's
// int32 sums against the textbook integer sums written here, and the tactic's outputs against the
// reference kernel's, bit for bit, on random data: odd channel counts, 1x1 / 3x3 / strided /
// padded / dilated / grouped / depthwise / 1-D convolutions, batched and broadcast matmuls,
// per-tensor and per-channel weight scales, float, int8 and uint8 activations with zero points.
#include <kernels/cpu/quant/onednn_int8.h>

#include "backends/backend.h"
#include "common/step_harness.h"
#include "common/test_models.h"
#include "ops/quantized.h"

#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <random>

using namespace kiln;
using kernels::Int8Source;

namespace {

template <class T>
HostTensor randomIntegers(DataType type, std::vector<int64_t> dims, uint32_t seed, int lo, int hi) {
  HostTensor t(type, std::move(dims));
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(lo, hi);
  for (int64_t i = 0; i < t.elementCount(); ++i) t.data<T>()[i] = T(dist(rng));
  return t;
}
HostTensor randomInt8(std::vector<int64_t> dims, uint32_t seed) {
  return randomIntegers<int8_t>(DataType::kInt8, std::move(dims), seed, -128, 127);
}
HostTensor randomUInt8(std::vector<int64_t> dims, uint32_t seed) {
  return randomIntegers<uint8_t>(DataType::kUInt8, std::move(dims), seed, 0, 255);
}

// How a case's activation comes: float quantized on entry (to int8, or to the zero point's type),
// or already int8 / uint8 with its zero point.
struct Activation {
  DataType type = DataType::kFloat32;
  std::optional<HostTensor> zeroPoint;
};
Activation floatInput() { return {}; }
Activation floatInto(HostTensor zero) { return {DataType::kFloat32, std::move(zero)}; }
Activation given(HostTensor zero) { return {zero.dtype(), std::move(zero)}; }

HostTensor activationValues(const Activation& a, std::vector<int64_t> dims, uint32_t seed) {
  if (a.type == DataType::kInt8) return randomInt8(std::move(dims), seed);
  if (a.type == DataType::kUInt8) return randomUInt8(std::move(dims), seed);
  return test::randomFloats(std::move(dims), seed, -1.7f, 2.1f);
}

// A one-layer step's inputs: names, values, and which are constants.
struct LayerData {
  LayerData() { values.reserve(16); }  // described.weights point into it

  Layer layer;
  std::vector<Value> values;
  LayerInputs described;

  void add(const std::string& name, const HostTensor& value, bool constant) {
    layer.inputs.push_back(name);
    values.emplace_back(value);
    described.types.push_back(value.dtype());
    described.dims.push_back(value.dims());
    described.weights.push_back(constant ? &values.back().tensor : nullptr);
  }
  void skip() {
    layer.inputs.push_back("");
    values.emplace_back();
    described.types.push_back(DataType::kFloat32);
    described.dims.push_back({});
    described.weights.push_back(nullptr);
  }
};

// Runs the layer's step of `tactic`; returns output 0.
HostTensor runTactic(const Backend& backend, LayerData& data, const Tactic& tactic) {
  test::StandaloneStep step(backend, data.layer, tactic, data.described.weights);
  std::vector<const Value*> inputs;
  for (size_t i = 0; i < data.values.size(); ++i)
    inputs.push_back(data.layer.inputs[i].empty() ? nullptr : &data.values[i]);
  auto stream = backend.createStream();
  auto outputs = step.enqueue(inputs, *stream);
  return outputs.at(0).tensor;
}

void expectBitEqual(const HostTensor& actual, const HostTensor& expected) {
  ASSERT_EQ(actual.dtype(), expected.dtype());
  ASSERT_EQ(actual.dims(), expected.dims());
  const size_t bytes = size_t(expected.elementCount()) * (expected.dtype() == DataType::kFloat32 ? 4 : 1);
  if (std::memcmp(actual.rawData(), expected.rawData(), bytes) == 0) return;
  for (int64_t i = 0; i < expected.elementCount() && expected.dtype() == DataType::kFloat32; ++i)
    ASSERT_EQ(actual.data<float>()[i], expected.data<float>()[i]) << "element " << i;
  FAIL() << "the outputs differ";
}

// The oneDNN tactic's output and the reference kernel's, which must be the same bits.
void expectTacticMatchesReference(LayerData& data, const std::string& referenceId) {
  const auto backend = makeCpuBackend();
  data.layer.name = "layer";
  data.layer.domain = fused::kDomain;
  data.layer.opsetVersion = 19;
  data.layer.outputs = {"y"};
  std::optional<Tactic> onednn;
  for (const Tactic& t : backend->tactics(data.layer, Precision::kINT8, data.described))
    if (t.id == "cpu.quantized.onednn") onednn = t;
  ASSERT_TRUE(onednn) << "cpu.quantized.onednn not offered";
  expectBitEqual(runTactic(*backend, data, *onednn), runTactic(*backend, data, Tactic{referenceId}));
}

struct ConvCase {
  std::string name;
  int64_t batch, channels, outChannels, group;
  std::vector<int64_t> in, kernel, strides, pads, dilations;  // pads: begins, then ends
  Activation activation;
  bool perChannelScales, epilogue;
};

std::vector<int64_t> withLeading(std::vector<int64_t> spatial, int64_t a, int64_t b) {
  spatial.insert(spatial.begin(), {a, b});
  return spatial;
}

std::vector<int64_t> outputSpatial(const ConvCase& c) {
  std::vector<int64_t> out;
  const size_t r = c.in.size();
  for (size_t i = 0; i < r; ++i)
    out.push_back((c.in[i] + c.pads[i] + c.pads[i + r] - (c.kernel[i] - 1) * c.dilations[i] - 1) / c.strides[i] + 1);
  return out;
}

kernels::ConvShape convShape(const ConvCase& c) {
  kernels::ConvShape s;
  s.batch = c.batch, s.inChannels = c.channels, s.outChannels = c.outChannels, s.group = c.group;
  const size_t r = c.in.size(), lead = 3 - r;
  const auto out = outputSpatial(c);
  for (size_t i = 0; i < r; ++i) {
    s.window.in[lead + i] = c.in[i], s.window.out[lead + i] = out[i], s.window.kernel[lead + i] = c.kernel[i];
    s.window.stride[lead + i] = c.strides[i], s.window.dilation[lead + i] = c.dilations[i];
    s.window.padBegin[lead + i] = c.pads[i], s.window.padEnd[lead + i] = c.pads[i + r];
  }
  return s;
}

// acc[n, m, o] = sum of (x - zero) * w over m's group and the taps inside the image, in int64.
std::vector<int64_t> textbookSums(const kernels::ConvShape& s, const HostTensor& x, int zero, const HostTensor& w) {
  const auto& win = s.window;
  const int64_t cg = s.inChannels / s.group, mg = s.outChannels / s.group;
  auto value = [&](int64_t i) -> int64_t {
    return x.dtype() == DataType::kUInt8 ? x.data<uint8_t>()[i] : x.data<int8_t>()[i];
  };
  std::vector<int64_t> acc;
  for (int64_t n = 0; n < s.batch; ++n)
    for (int64_t m = 0; m < s.outChannels; ++m)
      for (int64_t od = 0; od < win.out[0]; ++od)
        for (int64_t oh = 0; oh < win.out[1]; ++oh)
          for (int64_t ow = 0; ow < win.out[2]; ++ow) {
            int64_t sum = 0;
            for (int64_t ci = 0; ci < cg; ++ci)
              for (int64_t kd = 0; kd < win.kernel[0]; ++kd)
                for (int64_t kh = 0; kh < win.kernel[1]; ++kh)
                  for (int64_t kw = 0; kw < win.kernel[2]; ++kw) {
                    const int64_t id = win.inputCoord(0, od, kd), ih = win.inputCoord(1, oh, kh),
                                  iw = win.inputCoord(2, ow, kw);
                    if (id < 0 || ih < 0 || iw < 0 || id >= win.in[0] || ih >= win.in[1] || iw >= win.in[2]) continue;
                    const int64_t channel = m / mg * cg + ci;
                    sum +=
                        (value(((n * s.inChannels + channel) * win.in[0] + id) * win.in[1] * win.in[2] +
                               ih * win.in[2] + iw) -
                         zero) *
                        w.data<int8_t>()[(((m * cg + ci) * win.kernel[0] + kd) * win.kernel[1] + kh) * win.kernel[2] +
                                         kw];
                  }
            acc.push_back(sum);
          }
  return acc;
}

class QuantizedConvTactic : public ::testing::TestWithParam<ConvCase> {};

// oneDNN's sums are the textbook ones, for int8 and uint8 X with and without zero points.
TEST_P(QuantizedConvTactic, OneDnnSumsAreTheExactIntegerSums) {
  if (!kernels::oneDnnInt8Exact()) GTEST_SKIP() << "oneDNN's int8 sums are exact only with AVX-512 VNNI";
  const ConvCase& c = GetParam();
  const kernels::ConvShape shape = convShape(c);
  const HostTensor w = randomInt8(withLeading(c.kernel, c.outChannels, c.channels / c.group), 2);
  for (Int8Source source : {Int8Source::kSigned, Int8Source::kUnsigned})
    for (int zero : {0, source == Int8Source::kUnsigned ? 131 : -7}) {
      SCOPED_TRACE((source == Int8Source::kUnsigned ? "uint8 zero " : "int8 zero ") + std::to_string(zero));
      const auto xDims = withLeading(c.in, c.batch, c.channels);
      const HostTensor x = source == Int8Source::kUnsigned ? randomUInt8(xDims, 1) : randomInt8(xDims, 1);
      kernels::OneDnnInt8Convolution conv(true);
      const auto bytes = conv.prepare(shape, source, zero != 0);
      ASSERT_TRUE(bytes) << "oneDNN has no JIT kernel for this case";
      std::vector<uint8_t> workspace(*bytes + 64);
      const std::vector<int64_t> expected = textbookSums(shape, x, zero, w);
      std::vector<int32_t> acc(expected.size());
      for (int run = 0; run < 2; ++run) {  // the second with the weights already re-laid out
        conv.run(shape, x.rawData(), source, zero, w.data<int8_t>(), acc.data(),
                 [&](uint64_t) { return workspace.data(); });
        for (size_t i = 0; i < expected.size(); ++i) ASSERT_EQ(acc[i], expected[i]) << "sum " << i;
      }
    }
}

TEST_P(QuantizedConvTactic, MatchesTheReferenceKernelBitForBit) {
  if (!kernels::oneDnnInt8Exact()) GTEST_SKIP() << "oneDNN's int8 sums are exact only with AVX-512 VNNI";
  const ConvCase& c = GetParam();
  const auto yDims = withLeading(outputSpatial(c), c.batch, c.outChannels);
  LayerData data;
  data.layer.opType = quantized::kQuantizedConv;
  data.layer.attributes[fused::kBase] = std::string("Conv");
  data.layer.attributes["group"] = c.group;
  data.layer.attributes["pads"] = c.pads;
  data.layer.attributes["strides"] = c.strides;
  data.layer.attributes["dilations"] = c.dilations;
  data.add("x", activationValues(c.activation, withLeading(c.in, c.batch, c.channels), 3), false);
  data.add("w", randomInt8(withLeading(c.kernel, c.outChannels, c.channels / c.group), 4), true);
  if (c.epilogue) {
    data.layer.attributes[fused::kActivation] = std::string("LeakyRelu");
    data.layer.attributes[fused::kActivationAlpha] = 0.1f;
    data.add("b", test::randomFloats({c.outChannels}, 5), true);
    data.add("r", test::randomFloats(yDims, 6), false);
  } else {
    data.skip();
    data.skip();
  }
  data.add("xs", HostTensor::scalar<float>(0.0137f), true);
  data.add(
      "ws",
      c.perChannelScales ? test::randomFloats({c.outChannels}, 7, 0.001f, 0.02f) : HostTensor::scalar<float>(0.0041f),
      true);
  if (c.activation.zeroPoint) data.add("xz", *c.activation.zeroPoint, true);
  if (c.activation.zeroPoint) {  // the fast path runs for this case, not the fallback
    const HostTensor& z = *c.activation.zeroPoint;
    const Int8Source source = z.dtype() == DataType::kUInt8 ? Int8Source::kUnsigned : Int8Source::kSigned;
    const int zero = source == Int8Source::kUnsigned ? z.data<uint8_t>()[0] : z.data<int8_t>()[0];
    EXPECT_TRUE(kernels::OneDnnInt8Convolution(true).prepare(convShape(c), source, zero != 0));
  } else {
    EXPECT_TRUE(kernels::OneDnnInt8Convolution(true).prepare(convShape(c), Int8Source::kSigned, false));
  }
  expectTacticMatchesReference(data, "cpu.kiln.quantizedconv");
}

HostTensor int8Zero(int v) { return HostTensor::scalar<int8_t>(int8_t(v)); }
HostTensor uint8Zero(int v) { return HostTensor::scalar<uint8_t>(uint8_t(v)); }

// Name, N, C, M, group, spatial in, kernel, strides, pads (begins, ends), dilations, X, per-channel
// w_scale, epilogue (bias, residual, LeakyRelu).
// clang-format off
INSTANTIATE_TEST_SUITE_P(
    Shapes, QuantizedConvTactic,
    ::testing::Values(
        ConvCase{"pointwise", 2, 16, 24, 1, {7, 5}, {1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, floatInput(), true, false},
        ConvCase{"odd3x3Padded", 1, 5, 7, 1, {9, 11}, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, floatInput(), false, true},
        ConvCase{"stridedAsymPadsUInt8", 2, 3, 10, 1, {13, 12}, {3, 3}, {2, 2}, {1, 0, 2, 1}, {1, 1},
                 given(uint8Zero(128)), true, true},
        ConvCase{"groupedInt8Zero", 2, 6, 9, 3, {8, 7}, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, given(int8Zero(-5)),
                 true, false},
        ConvCase{"depthwiseFloatIntoUInt8", 1, 8, 8, 8, {10, 9}, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1},
                 floatInto(uint8Zero(100)), true, true},
        ConvCase{"dilatedFloatIntoInt8Zero", 1, 4, 6, 1, {12, 10}, {3, 3}, {1, 1}, {2, 2, 2, 2}, {2, 2},
                 floatInto(int8Zero(3)), false, true},
        ConvCase{"blocked", 2, 40, 72, 1, {14, 13}, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, floatInput(), true, true},
        ConvCase{"wideUInt8", 1, 64, 33, 1, {9, 9}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, given(uint8Zero(77)), true,
                 true},
        ConvCase{"conv1dUInt8", 2, 5, 6, 1, {17}, {4}, {2}, {1, 2}, {1}, given(uint8Zero(9)), true, false}),
    [](const auto& info) { return info.param.name; });
// clang-format on

// --- matmul ---

struct MatMulCase {
  std::string name;
  std::vector<int64_t> a, b;
  Activation activation;
  bool constantInt8B, perColumnScales, epilogue;
};

class QuantizedMatMulTactic : public ::testing::TestWithParam<MatMulCase> {};

TEST_P(QuantizedMatMulTactic, MatchesTheReferenceKernelBitForBit) {
  if (!kernels::oneDnnInt8Exact()) GTEST_SKIP() << "oneDNN's int8 sums are exact only with AVX-512 VNNI";
  const MatMulCase& c = GetParam();
  const int64_t n = c.b.back();
  LayerData data;
  data.layer.opType = quantized::kQuantizedMatMul;
  data.add("a", activationValues(c.activation, c.a, 11), false);
  if (c.constantInt8B)
    data.add("b", randomInt8(c.b, 12), true);
  else
    data.add("b", test::randomFloats(c.b, 12, -0.6f, 0.5f), false);
  if (c.epilogue) {
    data.layer.attributes[fused::kActivation] = std::string("Relu");
    data.add("c", test::randomFloats({n}, 13), true);
    std::vector<int64_t> yDims = c.a.size() >= c.b.size() ? c.a : c.b;
    yDims[yDims.size() - 2] = c.a[c.a.size() - 2];
    yDims.back() = n;
    data.add("z", test::randomFloats(yDims, 14), false);
  } else {
    data.skip();
    data.skip();
  }
  data.add("as", HostTensor::scalar<float>(0.0093f), true);
  data.add("bs", c.perColumnScales ? test::randomFloats({n}, 15, 0.001f, 0.02f) : HostTensor::scalar<float>(0.0047f),
           true);
  if (c.activation.zeroPoint) data.add("az", *c.activation.zeroPoint, true);
  expectTacticMatchesReference(data, "cpu.kiln.quantizedmatmul");
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, QuantizedMatMulTactic,
    ::testing::Values(MatMulCase{"batchedFloatA", {2, 3, 37}, {37, 19}, floatInput(), true, true, true},
                      MatMulCase{"uint8AZero", {5, 64}, {64, 33}, given(uint8Zero(120)), true, false, false},
                      MatMulCase{"int8AZero4d", {2, 4, 7, 16}, {16, 10}, given(int8Zero(-3)), true, true, true},
                      MatMulCase{"floatIntoUInt8", {9, 31}, {31, 17}, floatInto(uint8Zero(131)), true, true, false},
                      MatMulCase{"batchedFloatB", {2, 5, 8}, {2, 8, 6}, floatInput(), false, false, true},
                      MatMulCase{"broadcastA", {3, 8}, {2, 8, 5}, given(uint8Zero(3)), false, false, false},
                      MatMulCase{"wide", {64, 256}, {256, 96}, floatInput(), true, true, true}),
    [](const auto& info) { return info.param.name; });

// oneDNN's matmul takes int8 weights only: a B quantized to uint8 with a zero point (a Q/DQ model's
// activation) runs the reference kernel inside the tactic's step.
TEST(QuantizedMatMulTactic, RunsTheReferenceKernelForAUInt8B) {
  if (!kernels::oneDnnInt8Exact()) GTEST_SKIP() << "oneDNN's int8 sums are exact only with AVX-512 VNNI";
  LayerData data;
  data.layer.opType = quantized::kQuantizedMatMul;
  data.add("a", randomUInt8({6, 12}, 31), false);
  data.add("b", randomUInt8({12, 7}, 32), false);
  data.skip();
  data.skip();
  data.add("as", HostTensor::scalar<float>(0.02f), true);
  data.add("bs", HostTensor::scalar<float>(0.03f), true);
  data.add("az", uint8Zero(128), true);
  data.add("bz", uint8Zero(99), true);
  expectTacticMatchesReference(data, "cpu.kiln.quantizedmatmul");
}

// oneDNN's matmul sums against int64 ones, per-product and stacked, int8 and uint8 A with zero points.
TEST(QuantizedMatMulTactic, OneDnnSumsAreTheExactIntegerSums) {
  if (!kernels::oneDnnInt8Exact()) GTEST_SKIP() << "oneDNN's int8 sums are exact only with AVX-512 VNNI";
  const int64_t m = 5, k = 43, n = 21, batch = 3;
  const HostTensor b = randomInt8({batch, k, n}, 21);
  for (Int8Source source : {Int8Source::kSigned, Int8Source::kUnsigned})
    for (bool oneB : {true, false}) {
      const int zero = source == Int8Source::kUnsigned ? 200 : -100;
      const HostTensor a =
          source == Int8Source::kUnsigned ? randomUInt8({batch, m, k}, 22) : randomInt8({batch, m, k}, 22);
      const std::vector<int64_t> aOffsets = {0, m * k, 2 * m * k};
      const std::vector<int64_t> bOffsets =
          oneB ? std::vector<int64_t>{0, 0, 0} : std::vector<int64_t>{0, k * n, 2 * k * n};
      kernels::OneDnnInt8MatMul matmul(oneB);
      const auto bytes = matmul.prepare(batch, aOffsets.data(), bOffsets.data(), m, k, n, source);
      ASSERT_TRUE(bytes);
      std::vector<uint8_t> workspace(*bytes + 64);
      std::vector<int32_t> acc(size_t(batch * m * n));
      matmul.run(batch, aOffsets.data(), bOffsets.data(), m, k, n, a.rawData(), source, zero, b.data<int8_t>(),
                 acc.data(), [&](uint64_t) { return workspace.data(); });
      for (int64_t i = 0; i < batch; ++i)
        for (int64_t r = 0; r < m; ++r)
          for (int64_t j = 0; j < n; ++j) {
            int64_t sum = 0;
            for (int64_t t = 0; t < k; ++t) {
              const int64_t av = source == Int8Source::kUnsigned ? a.data<uint8_t>()[aOffsets[i] + r * k + t]
                                                                 : a.data<int8_t>()[aOffsets[i] + r * k + t];
              sum += (av - zero) * b.data<int8_t>()[bOffsets[i] + t * n + j];
            }
            ASSERT_EQ(acc[size_t((i * m + r) * n + j)], sum) << "product " << i << " row " << r << " column " << j;
          }
    }
}

TEST(QuantizedTactics, GuardSumsThatCouldLeaveInt32) {
  EXPECT_TRUE(kernels::int8SumsFitInt32(3 * 3 * 2048));
  EXPECT_TRUE(kernels::int8SumsFitInt32(65793));  // 65793 * 255 * 128 < 2^31
  EXPECT_FALSE(kernels::int8SumsFitInt32(65794));
}

}  // namespace
