// The channels-last depthwise convolution kernel (kernels/cuda/conv/depthwise_conv.h) against the
// CPU's convolution with its fused epilogue (kernels/cpu/conv): odd and vector-wide channel counts,
// 3x3 and 5x5 windows, strides, dilation, asymmetric padding, every activation, a residual before
// and after it, float32 / float16 / bfloat16, and pointers off 16 bytes (the one-channel path).
#include "layout_test_support.h"

#include <kernels/cpu/conv/conv.h>
#include <kernels/cpu/fused/epilogue.h>
#include <kernels/cuda/conv/depthwise_conv.h>

using namespace kiln::kernels::cuda;
using namespace kiln::test;
namespace cpu = kiln::kernels;

namespace {

struct Case {
  std::string name;
  int64_t batch, channels, inH, inW, kernel, stride, dilation, padTop, padLeft, padBottom, padRight;
};

const std::vector<Case> kCases{
    {"3x3 s1 pad 1, 24 channels", 2, 24, 9, 11, 3, 1, 1, 1, 1, 1, 1},
    {"3x3 s2 pad 1, 17 channels (one a thread)", 1, 17, 13, 12, 3, 2, 1, 1, 1, 1, 1},
    {"5x5 s2 pads 1,2 / 2,1, 40 channels", 2, 40, 15, 14, 5, 2, 1, 1, 2, 2, 1},
    {"3x3 dilation 2 pad 2, 8 channels", 1, 8, 10, 10, 3, 1, 2, 2, 2, 2, 2},
    {"1x1 window, 3 channels", 3, 3, 5, 7, 1, 1, 1, 0, 0, 0, 0},
    {"3x3 no pad, batch 1, 64 channels at 7x7", 1, 64, 7, 7, 3, 1, 1, 0, 0, 0, 0},
};

int64_t outSize(int64_t in, int64_t kernel, int64_t stride, int64_t dilation, int64_t padBegin, int64_t padEnd) {
  return (in + padBegin + padEnd - dilation * (kernel - 1) - 1) / stride + 1;
}

// [n, hw, c] values -> [n, c, hw] (the CPU convolution's layout).
std::vector<double> toChannelsFirst(const std::vector<double>& v, int64_t n, int64_t c, int64_t hw) {
  std::vector<double> out(v.size());
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t s = 0; s < hw; ++s) out[size_t((b * c + ch) * hw + s)] = v[size_t((b * hw + s) * c + ch)];
  return out;
}

struct Epilogue {
  cpu::Activation activation = cpu::Activation::kNone;
  float alpha = 0, beta = 0;
  bool bias = false, residual = false, residualBefore = true;
};

// Runs one case on the GPU and on the CPU; `offset` elements shift every device pointer (the
// one-channel path when not 16-byte aligned).
void check(const Case& c, const Epilogue& ep, ElementType type, int64_t offset = 0) {
  const int64_t outH = outSize(c.inH, c.kernel, c.stride, c.dilation, c.padTop, c.padBottom);
  const int64_t outW = outSize(c.inW, c.kernel, c.stride, c.dilation, c.padLeft, c.padRight);
  const int64_t inCount = c.batch * c.channels * c.inH * c.inW, outCount = c.batch * c.channels * outH * outW;
  // The values as the type stores them, so the CPU computes on exactly what the GPU reads.
  const std::vector<double> xNhwc = valuesOf(randomElements(type, inCount, 11), type);
  const std::vector<double> residualNhwc = valuesOf(randomElements(type, outCount, 12), type);
  const std::vector<double> biasValues = valuesOf(randomElements(type, c.channels, 13), type);
  const std::vector<double> filterValues = valuesOf(randomElements(ElementType::kFloat32, c.channels * c.kernel * c.kernel, 14),
                                                    ElementType::kFloat32);  // [C, 1, K, K]

  cpu::ConvShape shape;
  shape.batch = c.batch;
  shape.inChannels = shape.outChannels = shape.group = c.channels;
  cpu::SpatialWindow& w = shape.window;
  w.in[1] = c.inH, w.in[2] = c.inW, w.out[1] = outH, w.out[2] = outW, w.kernel[1] = w.kernel[2] = c.kernel;
  w.stride[1] = w.stride[2] = c.stride, w.dilation[1] = w.dilation[2] = c.dilation;
  w.padBegin[1] = c.padTop, w.padBegin[2] = c.padLeft, w.padEnd[1] = c.padBottom, w.padEnd[2] = c.padRight;
  auto floats = [](const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); };
  const std::vector<float> x = floats(toChannelsFirst(xNhwc, c.batch, c.channels, c.inH * c.inW));
  const std::vector<float> residual = floats(toChannelsFirst(residualNhwc, c.batch, c.channels, outH * outW));
  const std::vector<float> filter = floats(filterValues), bias = floats(biasValues);
  cpu::Epilogue e;
  e.activation = ep.activation, e.alpha = ep.alpha, e.beta = ep.beta;
  e.residual = ep.residual ? residual.data() : nullptr;
  e.residualBeforeActivation = ep.residualBefore;
  std::vector<float> expected(static_cast<size_t>(outCount));
  cpu::convolution(shape, x.data(), filter.data(), ep.bias ? bias.data() : nullptr, e, expected.data());

  // The GPU's filter: fp32 [K, K, C].
  std::vector<float> taps(filter.size());
  for (int64_t ch = 0; ch < c.channels; ++ch)
    for (int64_t t = 0; t < c.kernel * c.kernel; ++t) taps[size_t(t * c.channels + ch)] = filter[size_t(ch * c.kernel * c.kernel + t)];
  const size_t shift = size_t(offset) * elementBytes(type);
  auto withShift = [&](const Bytes& b) {
    Bytes shifted(shift, 0);
    shifted.insert(shifted.end(), b.begin(), b.end());
    return shifted;
  };
  DeviceBuffer dx(withShift(fromValues(xNhwc, type))), dres(withShift(fromValues(residualNhwc, type))),
      dbias(withShift(fromValues(biasValues, type))), dfilter(taps), dy(shift + byteSize(type, outCount));
  auto at = [&](const DeviceBuffer& b) { return static_cast<char*>(b.data()) + shift; };
  DepthwiseConv2d p;
  p.batch = c.batch, p.channels = c.channels, p.inH = c.inH, p.inW = c.inW, p.outH = outH, p.outW = outW;
  p.kernelH = p.kernelW = c.kernel, p.strideH = p.strideW = c.stride, p.dilationH = p.dilationW = c.dilation;
  p.padTop = c.padTop, p.padLeft = c.padLeft;
  DepthwiseEpilogue de;
  de.activation = ep.activation, de.alpha = ep.alpha, de.beta = ep.beta, de.residualBeforeActivation = ep.residualBefore;
  de.bias = ep.bias ? at(dbias) : nullptr;
  de.residual = ep.residual ? at(dres) : nullptr;
  ASSERT_TRUE(launchOverPoison(dy, [&] {
    return depthwiseConv2dChannelsLast(p, at(dx), dfilter.as<float>(), de, at(dy), type, nullptr);
  }));
  Bytes got = dy.download();
  got.erase(got.begin(), got.begin() + std::ptrdiff_t(shift));
  const std::vector<double> actual = toChannelsFirst(valuesOf(got, type), c.batch, c.channels, outH * outW);
  EXPECT_TRUE(closeValues(actual, std::vector<double>(expected.begin(), expected.end()), toleranceFor(type)));
}

std::string typeName(ElementType type) {
  return type == ElementType::kFloat32 ? "fp32" : type == ElementType::kFloat16 ? "fp16" : "bf16";
}

const std::vector<ElementType> kTypes{ElementType::kFloat32, ElementType::kFloat16, ElementType::kBFloat16};

}  // namespace

TEST(CudaDepthwiseConv, ShapesAgainstTheCpu) {
  KILN_REQUIRE_GPU();
  for (const Case& c : kCases)
    for (ElementType type : kTypes) {
      SCOPED_TRACE(c.name + " " + typeName(type));
      check(c, {cpu::Activation::kNone, 0, 0, true, false}, type);
      check(c, {}, type);  // no bias
    }
}

TEST(CudaDepthwiseConv, EveryActivationWithBiasAndResidual) {
  KILN_REQUIRE_GPU();
  const std::vector<std::tuple<const char*, cpu::Activation, float, float>> activations{
      {"Relu", cpu::Activation::kRelu, 0, 0},           {"Clip", cpu::Activation::kClip, 0, 6},
      {"Sigmoid", cpu::Activation::kSigmoid, 0, 0},     {"HardSigmoid", cpu::Activation::kHardSigmoid, 0.2f, 0.5f},
      {"HardSwish", cpu::Activation::kHardSwish, 0, 0}, {"SiLU", cpu::Activation::kSiLU, 0, 0},
      {"Gelu", cpu::Activation::kGelu, 0, 0},           {"GeluTanh", cpu::Activation::kGeluTanh, 0, 0},
      {"LeakyRelu", cpu::Activation::kLeakyRelu, 0.1f, 0}, {"Tanh", cpu::Activation::kTanh, 0, 0}};
  for (const auto& [name, activation, alpha, beta] : activations)
    for (bool before : {true, false})
      for (ElementType type : kTypes) {
        SCOPED_TRACE(std::string(name) + (before ? " residual before" : " residual after") + " " + typeName(type));
        check(kCases[0], {activation, alpha, beta, true, true, before}, type);
        check(kCases[1], {activation, alpha, beta, true, true, before}, type);
      }
}

TEST(CudaDepthwiseConv, PointersOffSixteenBytesTakeTheOneChannelPath) {
  KILN_REQUIRE_GPU();
  for (ElementType type : kTypes) {
    SCOPED_TRACE(typeName(type));
    check(kCases[0], {cpu::Activation::kRelu, 0, 0, true, true, true}, type, 1);
  }
}

TEST(CudaDepthwiseConv, RefusesIndexSpacesPast32Bits) {
  DepthwiseConv2d p;
  p.batch = 1024, p.channels = 1024, p.inH = p.inW = p.outH = p.outW = 64;
  EXPECT_FALSE(depthwiseConvTakes(p));
  p.batch = 1;
  EXPECT_TRUE(depthwiseConvTakes(p));
}
