// The channels-last depthwise convolution kernel (kernels/cuda/conv/depthwise_conv.h) against the
// CPU's convolution with its fused epilogue (kernels/cpu/conv): odd and vector-wide channel counts,
// 3x3 and 5x5 windows, strides, dilation, asymmetric padding, every activation, a residual before
// and after it, float32 / float16 / bfloat16, and pointers off 16 bytes (the one-channel path);
// every output width up to 17 (every remainder of the kernel's 8- and 4-pixel column blocks) for the
// sliding 3x3 / 5x5 kernels and the general one (7x1, 1x7, dilation 2, stride 3). A last test
// prints the speed on EfficientNet-B0's batch-128 shapes (no assertion on time).
#include "layout_test_support.h"

#include <kernels/cpu/conv/conv.h>
#include <kernels/cpu/fused/epilogue.h>
#include <kernels/cuda/conv/depthwise_conv.h>

#include <cstdio>
#include <sstream>

using namespace kiln::kernels::cuda;
using namespace kiln::test;
namespace cpu = kiln::kernels;

namespace {

// kernel, stride and dilation are the vertical ones, and the horizontal ones too unless given.
struct Case {
  std::string name;
  int64_t batch, channels, inH, inW, kernel, stride, dilation, padTop, padLeft, padBottom, padRight;
  int64_t kernelW = 0, strideW = 0, dilationW = 0;
  int64_t kW() const { return kernelW ? kernelW : kernel; }
  int64_t sW() const { return strideW ? strideW : stride; }
  int64_t dW() const { return dilationW ? dilationW : dilation; }
};

const std::vector<Case> kCases{
    {"3x3 s1 pad 1, 24 channels", 2, 24, 9, 11, 3, 1, 1, 1, 1, 1, 1},
    {"3x3 s2 pad 1, 17 channels (one a thread)", 1, 17, 13, 12, 3, 2, 1, 1, 1, 1, 1},
    {"5x5 s2 pads 1,2 / 2,1, 40 channels", 2, 40, 15, 14, 5, 2, 1, 1, 2, 2, 1},
    {"3x3 dilation 2 pad 2, 8 channels", 1, 8, 10, 10, 3, 1, 2, 2, 2, 2, 2},
    {"1x1 window, 3 channels", 3, 3, 5, 7, 1, 1, 1, 0, 0, 0, 0},
    {"3x3 no pad, batch 1, 64 channels at 7x7", 1, 64, 7, 7, 3, 1, 1, 0, 0, 0, 0},
    // Vertical stride and dilation other than the horizontal ones (the sliding kernels take them).
    {"3x3 stride 2x1 dilation 2x1, 16 channels", 2, 16, 12, 9, 3, 2, 2, 2, 1, 2, 1, 3, 1, 1},
    {"5x5 stride 1x2, 24 channels", 1, 24, 9, 16, 5, 1, 1, 2, 2, 2, 2, 5, 2, 1},
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

// On a mismatch: the largest error and the first element past the per-element bound, as
// (n, h, w, c) of the output, so a wrong column block or channel vector shows in the log.
std::string mismatchReport(const std::vector<double>& actual, const std::vector<double>& expected, int64_t channels,
                           int64_t outH, int64_t outW, double tolerance) {
  double scale = 0;
  for (double e : expected) scale = std::max(scale, std::abs(e));
  auto where = [&](size_t i) {  // channels-first index -> (n, h, w, c)
    const int64_t hw = outH * outW, pixel = int64_t(i) % hw, nc = int64_t(i) / hw;
    std::ostringstream s;
    s << "(n " << nc / channels << ", h " << pixel / outW << ", w " << pixel % outW << ", c " << nc % channels << ")";
    return s.str();
  };
  size_t worst = 0, firstBad = actual.size();
  double worstError = -1;
  for (size_t i = 0; i < actual.size(); ++i) {
    const double d = std::isnan(actual[i]) ? INFINITY : std::abs(actual[i] - expected[i]);
    if (d > worstError) worstError = d, worst = i;
    if (firstBad == actual.size() && d > 50 * tolerance * std::max(1.0, scale)) firstBad = i;
  }
  std::ostringstream s;
  s << "max error " << worstError << " at " << where(worst) << " (got " << actual[worst] << ", expected "
    << expected[worst] << ")";
  if (firstBad < actual.size())
    s << "; first bad element " << where(firstBad) << " got " << actual[firstBad] << ", expected "
      << expected[firstBad];
  return s.str();
}

// Runs one case on the GPU and on the CPU; `offset` elements shift every device pointer (the
// one-channel path when not 16-byte aligned).
void check(const Case& c, const Epilogue& ep, ElementType type, int64_t offset = 0) {
  const int64_t outH = outSize(c.inH, c.kernel, c.stride, c.dilation, c.padTop, c.padBottom);
  const int64_t outW = outSize(c.inW, c.kW(), c.sW(), c.dW(), c.padLeft, c.padRight);
  const int64_t inCount = c.batch * c.channels * c.inH * c.inW, outCount = c.batch * c.channels * outH * outW;
  // The values as the type stores them, so the CPU computes on exactly what the GPU reads.
  const std::vector<double> xNhwc = valuesOf(randomElements(type, inCount, 11), type);
  const std::vector<double> residualNhwc = valuesOf(randomElements(type, outCount, 12), type);
  const std::vector<double> biasValues = valuesOf(randomElements(type, c.channels, 13), type);
  const int64_t taps = c.kernel * c.kW();
  const std::vector<double> filterValues =
      valuesOf(randomElements(ElementType::kFloat32, c.channels * taps, 14), ElementType::kFloat32);  // [C, 1, KH, KW]

  cpu::ConvShape shape;
  shape.batch = c.batch;
  shape.inChannels = shape.outChannels = shape.group = c.channels;
  cpu::SpatialWindow& w = shape.window;
  w.in[1] = c.inH, w.in[2] = c.inW, w.out[1] = outH, w.out[2] = outW, w.kernel[1] = c.kernel, w.kernel[2] = c.kW();
  w.stride[1] = c.stride, w.stride[2] = c.sW(), w.dilation[1] = c.dilation, w.dilation[2] = c.dW();
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

  // The GPU's filter: fp32 [KH, KW, C].
  std::vector<float> tapsLast(filter.size());
  for (int64_t ch = 0; ch < c.channels; ++ch)
    for (int64_t t = 0; t < taps; ++t) tapsLast[size_t(t * c.channels + ch)] = filter[size_t(ch * taps + t)];
  const size_t shift = size_t(offset) * elementBytes(type);
  auto withShift = [&](const Bytes& b) {
    Bytes shifted(shift, 0);
    shifted.insert(shifted.end(), b.begin(), b.end());
    return shifted;
  };
  DeviceBuffer dx(withShift(fromValues(xNhwc, type))), dres(withShift(fromValues(residualNhwc, type))),
      dbias(withShift(fromValues(biasValues, type))), dfilter(tapsLast), dy(shift + byteSize(type, outCount));
  auto at = [&](const DeviceBuffer& b) { return static_cast<char*>(b.data()) + shift; };
  DepthwiseConv2d p;
  p.batch = c.batch, p.channels = c.channels, p.inH = c.inH, p.inW = c.inW, p.outH = outH, p.outW = outW;
  p.kernelH = c.kernel, p.kernelW = c.kW(), p.strideH = c.stride, p.strideW = c.sW();
  p.dilationH = c.dilation, p.dilationW = c.dW();
  p.padTop = c.padTop, p.padLeft = c.padLeft;
  DepthwiseEpilogue de;
  de.activation = ep.activation, de.alpha = ep.alpha, de.beta = ep.beta;
  de.residualBeforeActivation = ep.residualBefore;
  de.bias = ep.bias ? at(dbias) : nullptr;
  de.residual = ep.residual ? at(dres) : nullptr;
  ASSERT_TRUE(launchOverPoison(
      dy, [&] { return depthwiseConv2dChannelsLast(p, at(dx), dfilter.as<float>(), de, at(dy), type, nullptr); }));
  Bytes got = dy.download();
  got.erase(got.begin(), got.begin() + std::ptrdiff_t(shift));
  const std::vector<double> actual = toChannelsFirst(valuesOf(got, type), c.batch, c.channels, outH * outW);
  const std::vector<double> wanted(expected.begin(), expected.end());
  const auto close = closeValues(actual, wanted, toleranceFor(type));
  EXPECT_TRUE(close) << "output [" << c.batch << ", " << outH << ", " << outW << ", " << c.channels
                     << "]: " << mismatchReport(actual, wanted, c.channels, outH, outW, toleranceFor(type));
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
      {"Relu", cpu::Activation::kRelu, 0, 0},
      {"Clip", cpu::Activation::kClip, 0, 6},
      {"Sigmoid", cpu::Activation::kSigmoid, 0, 0},
      {"HardSigmoid", cpu::Activation::kHardSigmoid, 0.2f, 0.5f},
      {"HardSwish", cpu::Activation::kHardSwish, 0, 0},
      {"SiLU", cpu::Activation::kSiLU, 0, 0},
      {"Gelu", cpu::Activation::kGelu, 0, 0},
      {"GeluTanh", cpu::Activation::kGeluTanh, 0, 0},
      {"LeakyRelu", cpu::Activation::kLeakyRelu, 0.1f, 0},
      {"Tanh", cpu::Activation::kTanh, 0, 0}};
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

// Output widths 1..9, 13 and 17 cover every remainder of the sliding kernels' 8-pixel (stride 1)
// and 4-pixel (stride 2) column blocks and of the general kernel's 4; the input width takes both
// parities at stride 2 (the right pad used or not). Channels 8, 24, 40 (whole vectors in every
// type) and 3 (one a thread); every float type; a residual before or after SiLU / HardSwish.
TEST(CudaDepthwiseConv, EveryOutputWidthRemainder) {
  KILN_REQUIRE_GPU();
  struct Window {
    const char* name;
    int64_t kernelH, kernelW, stride, dilation;
  };
  const std::vector<Window> windows{{"3x3 s1", 3, 3, 1, 1},
                                    {"3x3 s2", 3, 3, 2, 1},
                                    {"5x5 s1", 5, 5, 1, 1},
                                    {"5x5 s2", 5, 5, 2, 1},
                                    {"7x1 s1", 7, 1, 1, 1},
                                    {"1x7 s1", 1, 7, 1, 1},
                                    {"3x3 s1 dilation 2", 3, 3, 1, 2},
                                    {"5x5 s2 dilation 2", 5, 5, 2, 2},
                                    {"3x3 s3", 3, 3, 3, 1}};
  const int64_t outH = 3;
  int round = 0;
  for (const Window& win : windows)
    for (int64_t outW : {1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 17})
      for (int64_t extra = 0; extra < win.stride; extra += std::max<int64_t>(1, win.stride - 1))
        for (int64_t channels : {8, 24, 40, 3}) {
          // pad (k - 1) / 2 * dilation on every side; the input that gives outW (and outH) with it.
          const int64_t padH = (win.kernelH - 1) / 2 * win.dilation, padW = (win.kernelW - 1) / 2 * win.dilation;
          const int64_t inH = (outH - 1) * win.stride + (win.kernelH - 1) * win.dilation + 1 - 2 * padH;
          const int64_t inW = (outW - 1) * win.stride + (win.kernelW - 1) * win.dilation + 1 - 2 * padW + extra;
          if (inW < 1 || inH < 1) continue;
          const Case c{std::string(win.name) + ", out width " + std::to_string(outW) + ", in width " +
                           std::to_string(inW) + ", " + std::to_string(channels) + " channels",
                       2,
                       channels,
                       inH,
                       inW,
                       win.kernelH,
                       win.stride,
                       win.dilation,
                       padH,
                       padW,
                       padH,
                       padW,
                       win.kernelW,
                       0,
                       0};
          const bool before = round % 2 == 0;
          const cpu::Activation activation = round % 4 < 2 ? cpu::Activation::kSiLU : cpu::Activation::kHardSwish;
          ++round;
          for (ElementType type : kTypes) {
            SCOPED_TRACE(c.name + " " + typeName(type) + (before ? ", residual before" : ", residual after"));
            check(c, {activation, 0, 0, true, true, before}, type);
            if (outW == 5) check(c, {}, type);  // no bias, no residual
          }
        }
}

// Informational: EfficientNet-B0's batch-128 depthwise shapes in fp16 with bias and SiLU, the ms a
// run and the GB/s of the input plus output bytes, next to a device-to-device copy of as many bytes
// (the memory bound). No assertion on time; the values are not checked (the tests above do that).
TEST(CudaDepthwiseConv, SpeedOnEfficientNetShapes) {
  KILN_REQUIRE_GPU();
  struct Shape {
    const char* name;
    int64_t hw, channels, kernel, stride;
  };
  const std::vector<Shape> shapes{{"128x112x112x96 3x3 s2", 112, 96, 3, 2},
                                  {"128x56x56x144 3x3 s1", 56, 144, 3, 1},
                                  {"128x28x28x240 5x5 s1", 28, 240, 5, 1}};
  const ElementType type = ElementType::kFloat16;
  for (const Shape& s : shapes) {
    DepthwiseConv2d p;
    p.batch = 128, p.channels = s.channels, p.inH = p.inW = s.hw;
    p.kernelH = p.kernelW = s.kernel, p.strideH = p.strideW = s.stride;
    p.padTop = p.padLeft = s.kernel / 2;
    p.outH = p.outW = outSize(s.hw, s.kernel, s.stride, 1, s.kernel / 2, s.kernel / 2);
    const int64_t inCount = p.batch * p.inH * p.inW * p.channels, outCount = p.batch * p.outH * p.outW * p.channels;
    DeviceBuffer dx(byteSize(type, inCount)), dy(byteSize(type, outCount));
    dx.fill(0x3C);  // fp16 0x3C3C, about 1.06: finite values
    std::vector<float> filter(size_t(s.kernel * s.kernel * s.channels), 0.1f);
    const DeviceBuffer dfilter(filter), dbias(fromValues(std::vector<double>(size_t(s.channels), 0.5), type));
    DepthwiseEpilogue e;
    e.bias = dbias.data(), e.activation = cpu::Activation::kSiLU;
    auto run = [&] {
      return depthwiseConv2dChannelsLast(p, dx.data(), dfilter.as<float>(), e, dy.data(), type, nullptr);
    };
    const size_t bytes = byteSize(type, inCount) + byteSize(type, outCount);
    DeviceBuffer copyFrom(bytes / 2), copyTo(bytes / 2);
    auto copy = [&] { return cudaMemcpyAsync(copyTo.data(), copyFrom.data(), bytes / 2, cudaMemcpyDeviceToDevice); };
    const double ms = bestMilliseconds(run), copyMs = bestMilliseconds(copy);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::printf(
        "[ depthwise ] %s fp16 bias+SiLU: %.4f ms, %.0f GB/s (in + out %.1f MB); device copy of as many "
        "bytes: %.4f ms, %.0f GB/s\n",
        s.name, ms, double(bytes) / ms * 1e-6, double(bytes) * 1e-6, copyMs, double(bytes) / copyMs * 1e-6);
  }
}
