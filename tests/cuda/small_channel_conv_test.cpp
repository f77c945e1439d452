// The few-input-channel tensor-core convolution (kernels/cuda/conv/small_channel_conv.h) against
// the CPU's convolution with its fused epilogue (kernels/cpu/conv): 1, 2, 3 and 4 input channels,
// 8, 16, 64 and 72 output channels (two column blocks, the second one tile of 8), 7x7 stride 2
// (ResNet's stem), 3x3, 5x5 stride 2 and dilation 2 windows, odd sizes, outputs wider than a
// 112-pixel segment, NCHW and NHWC input, NHWC and NCHW output, bias with ReLU / Clip / SiLU or
// nothing, float16 and bfloat16. A last test prints the kernel's time on ResNet-50's stem at batch
// 128 (no assertion on time).
#include "layout_test_support.h"

#include <kernels/cpu/conv/conv.h>
#include <kernels/cpu/fused/epilogue.h>
#include <kernels/cuda/conv/small_channel_conv.h>

#include <cstdio>

using namespace kiln::kernels::cuda;
using namespace kiln::test;
namespace cpu = kiln::kernels;

namespace {

struct Case {
  std::string name;
  int64_t batch, channels, inH, inW, outChannels, kernel, stride, pad, dilation = 1;
};

struct Epilogue {
  const char* name;
  cpu::Activation activation;
  float alpha, beta;
  bool bias;
};

const std::vector<Epilogue> kEpilogues{{"bias+Relu", cpu::Activation::kRelu, 0, 0, true},
                                       {"no bias", cpu::Activation::kNone, 0, 0, false},
                                       {"bias+SiLU", cpu::Activation::kSiLU, 0, 0, true},
                                       {"bias+Clip 0,6", cpu::Activation::kClip, 0, 6, true}};

int64_t outSize(int64_t in, int64_t kernel, int64_t stride, int64_t dilation, int64_t pad) {
  return (in + 2 * pad - dilation * (kernel - 1) - 1) / stride + 1;
}

// Each of n [rows, cols] blocks transposed: [n, c, hw] -> [n, hw, c] with (c, hw), back with (hw, c).
std::vector<double> transposed(const std::vector<double>& v, int64_t n, int64_t rows, int64_t cols) {
  std::vector<double> out(v.size());
  for (int64_t b = 0; b < n; ++b)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) out[size_t((b * cols + c) * rows + r)] = v[size_t((b * rows + r) * cols + c)];
  return out;
}

SmallChannelConvProblem problemOf(const Case& c, ElementType type) {
  SmallChannelConvProblem p;
  p.batch = c.batch, p.channels = c.channels, p.inH = c.inH, p.inW = c.inW, p.outChannels = c.outChannels;
  p.outH = outSize(c.inH, c.kernel, c.stride, c.dilation, c.pad);
  p.outW = outSize(c.inW, c.kernel, c.stride, c.dilation, c.pad);
  p.kernelH = p.kernelW = c.kernel, p.strideH = p.strideW = c.stride, p.dilationH = p.dilationW = c.dilation;
  p.padTop = p.padLeft = c.pad;
  p.type = type;
  return p;
}

void check(const Case& c, const Epilogue& ep, ElementType type, bool xLast, bool yLast) {
  SmallChannelConvProblem p = problemOf(c, type);
  p.xChannelsLast = xLast, p.yChannelsLast = yLast;
  p.activation = ep.activation, p.alpha = ep.alpha, p.beta = ep.beta;
  ASSERT_EQ(smallChannelConvRefusal(p), nullptr);
  const int64_t inCount = c.batch * c.channels * c.inH * c.inW, outCount = c.batch * c.outChannels * p.outH * p.outW;
  const int64_t filterCount = c.outChannels * c.channels * c.kernel * c.kernel;
  // Values the type holds exactly (the filter too: the kernel rounds it to the type).
  const std::vector<double> x = valuesOf(randomElements(type, inCount, 21), type);  // NCHW
  const std::vector<double> w = valuesOf(randomElements(type, filterCount, 22), type);
  const std::vector<double> b = valuesOf(randomElements(type, c.outChannels, 23), type);

  cpu::ConvShape shape;
  shape.batch = c.batch, shape.inChannels = c.channels, shape.outChannels = c.outChannels, shape.group = 1;
  cpu::SpatialWindow& win = shape.window;
  win.in[1] = c.inH, win.in[2] = c.inW, win.out[1] = p.outH, win.out[2] = p.outW;
  win.kernel[1] = win.kernel[2] = c.kernel, win.stride[1] = win.stride[2] = c.stride;
  win.dilation[1] = win.dilation[2] = c.dilation;
  win.padBegin[1] = win.padBegin[2] = c.pad;
  win.padEnd[1] = (p.outH - 1) * c.stride + c.dilation * (c.kernel - 1) + 1 - c.inH - c.pad;
  win.padEnd[2] = (p.outW - 1) * c.stride + c.dilation * (c.kernel - 1) + 1 - c.inW - c.pad;
  auto floats = [](const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); };
  const std::vector<float> xf = floats(x), wf = floats(w), bf = floats(b);
  cpu::Epilogue e;
  e.activation = ep.activation, e.alpha = ep.alpha, e.beta = ep.beta;
  std::vector<float> expected(static_cast<size_t>(outCount));
  cpu::convolution(shape, xf.data(), wf.data(), ep.bias ? bf.data() : nullptr, e, expected.data());

  const int64_t inPlane = c.inH * c.inW, outPlane = p.outH * p.outW;
  DeviceBuffer dx(fromValues(xLast ? transposed(x, c.batch, c.channels, inPlane) : x, type));
  DeviceBuffer dw(wf), dbias(fromValues(b, type)), dy(byteSize(type, outCount));
  ASSERT_TRUE(launchOverPoison(dy, [&] {
    return smallChannelConv(p, dx.data(), dw.as<float>(), ep.bias ? dbias.data() : nullptr, dy.data(), nullptr);
  }));
  std::vector<double> actual = valuesOf(dy.download(), type);
  if (yLast) actual = transposed(actual, c.batch, outPlane, c.outChannels);
  EXPECT_TRUE(closeValues(actual, std::vector<double>(expected.begin(), expected.end()), toleranceFor(type)))
      << "output [" << c.batch << ", " << c.outChannels << ", " << p.outH << ", " << p.outW << "]";
}

std::string typeName(ElementType type) { return type == ElementType::kFloat16 ? "fp16" : "bf16"; }

const std::vector<Case> kCases{
    {"7x7 s2 p3, 3 -> 64, 17x17, batch 3", 3, 3, 17, 17, 64, 7, 2, 3},
    {"3x3 s1 p1, 4 -> 8, 9x13, batch 3", 3, 4, 9, 13, 8, 3, 1, 1},
    {"5x5 s2 p2, 1 -> 64, 13x9", 1, 1, 13, 9, 64, 5, 2, 2},
    {"3x3 s1 p1, 3 -> 72 (two column blocks), 9x13, batch 2", 2, 3, 9, 13, 72, 3, 1, 1},
    {"3x3 s1 p1, 3 -> 16, 3x200 (two segments of 100)", 1, 3, 3, 200, 16, 3, 1, 1},
    {"3x3 dilation 2 p2, 2 -> 16, 11x10", 1, 2, 11, 10, 16, 3, 1, 2, 2},
    {"7x7 s2 p3, 3 -> 64, 9x13, batch 1", 1, 3, 9, 13, 64, 7, 2, 3},
};

}  // namespace

TEST(SmallChannelConv, ShapesLayoutsAndEpiloguesAgainstTheCpu) {
  KILN_REQUIRE_GPU();
  int round = 0;
  for (const Case& c : kCases)
    for (ElementType type : {ElementType::kFloat16, ElementType::kBFloat16})
      for (bool xLast : {false, true})
        for (bool yLast : {true, false}) {
          const Epilogue& ep = kEpilogues[size_t(round++) % kEpilogues.size()];
          SCOPED_TRACE(c.name + " " + typeName(type) + (xLast ? " NHWC in" : " NCHW in") +
                       (yLast ? " NHWC out " : " NCHW out ") + ep.name);
          check(c, ep, type, xLast, yLast);
        }
}

TEST(SmallChannelConv, EveryEpilogueOnTheStemShape) {
  KILN_REQUIRE_GPU();
  for (const Epilogue& ep : kEpilogues) {
    SCOPED_TRACE(ep.name);
    check(kCases[0], ep, ElementType::kFloat16, false, true);
  }
}

// ResNet's stem at full size (one image): 112 output rows of 112 pixels, 7 warps a segment.
TEST(SmallChannelConv, ResNetStemAt224) {
  KILN_REQUIRE_GPU();
  const Case stem{"ResNet stem 224x224", 1, 3, 224, 224, 64, 7, 2, 3};
  check(stem, kEpilogues[0], ElementType::kFloat16, false, true);
  check(stem, kEpilogues[2], ElementType::kBFloat16, true, false);
}

TEST(SmallChannelConv, Refusals) {
  SmallChannelConvProblem p = problemOf({"stem", 128, 3, 224, 224, 64, 7, 2, 3}, ElementType::kFloat16);
  EXPECT_EQ(smallChannelConvRefusal(p), nullptr);
  SmallChannelConvProblem q = p;
  q.channels = 9;
  EXPECT_NE(smallChannelConvRefusal(q), nullptr);
  q = p, q.outChannels = 12;
  EXPECT_NE(smallChannelConvRefusal(q), nullptr);
  q = p, q.type = ElementType::kFloat32;
  EXPECT_NE(smallChannelConvRefusal(q), nullptr);
  q = p, q.kernelH = q.kernelW = 13;  // 507 taps fit, 3 channels of 13x13 do not... 507 <= 512: takes
  EXPECT_EQ(smallChannelConvRefusal(q), nullptr);
  q.channels = 4;  // 676 taps
  EXPECT_NE(smallChannelConvRefusal(q), nullptr);
  q = p, q.batch = 4096;  // the output past 2^31 elements
  EXPECT_NE(smallChannelConvRefusal(q), nullptr);
  EXPECT_EQ(smallChannelConv(p, nullptr, nullptr, nullptr, nullptr, nullptr), cudaErrorInvalidValue);
}

// Informational: ResNet-50's stem at batch 128 (NCHW fp16 in, NHWC fp16 out, bias + ReLU) on the
// GPU, with its TFLOPS (R·S·C = 147, unpadded) and GB/s of input + output, next to a device copy of
// the output's bytes (the memory bound). cuDNN's graph engine took 0.703 ms on the H200.
TEST(SmallChannelConvTiming, ResNet50StemBatch128) {
  KILN_REQUIRE_GPU();
#if defined(KILN_CUDA_EMULATION)
  GTEST_SKIP() << "timing means nothing in the emulator";
#endif
  for (bool xLast : {false, true}) {
    SmallChannelConvProblem p = problemOf({"stem", 128, 3, 224, 224, 64, 7, 2, 3}, ElementType::kFloat16);
    p.xChannelsLast = xLast;
    p.activation = cpu::Activation::kRelu;
    const int64_t inCount = p.batch * 3 * 224 * 224, outCount = p.batch * p.outH * p.outW * 64;
    DeviceBuffer dx(byteSize(ElementType::kFloat16, inCount)), dy(byteSize(ElementType::kFloat16, outCount));
    dx.fill(0x3C);  // fp16 0x3C3C, about 1.06
    const std::vector<float> w(size_t(64 * 147), 0.01f);
    const DeviceBuffer dw(w), dbias(fromValues(std::vector<double>(64, 0.5), ElementType::kFloat16));
    auto run = [&] { return smallChannelConv(p, dx.data(), dw.as<float>(), dbias.data(), dy.data(), nullptr); };
    const size_t outBytes = byteSize(ElementType::kFloat16, outCount),
                 inBytes = byteSize(ElementType::kFloat16, inCount);
    DeviceBuffer copyTo(outBytes);
    auto copy = [&] { return cudaMemcpyAsync(copyTo.data(), dy.data(), outBytes, cudaMemcpyDeviceToDevice); };
    const double ms = bestMilliseconds(run), copyMs = bestMilliseconds(copy);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const double flops = 2.0 * double(p.batch * p.outH * p.outW) * 64 * 147;
    std::printf(
        "[ timing   ] ResNet-50 stem 128x3x224x224 -> 128x112x112x64 7x7 s2 fp16 %s in, NHWC out, bias+Relu: "
        "%.4f ms, %.0f TFLOPS, %.0f GB/s; device copy of the output's bytes: %.4f ms\n",
        xLast ? "NHWC" : "NCHW", ms, flops / (ms * 1e-3) / 1e12, double(inBytes + outBytes) / ms * 1e-6, copyMs);
  }
}
