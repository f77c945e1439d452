// The few-input-channel tensor-core convolution (kernels/cuda/conv/small_channel_conv.h) against
// the CPU's convolution with its fused epilogue (kernels/cpu/conv): 1, 2, 3 and 4 input channels,
// 8, 16, 64 and 72 output channels (two column blocks, the second one tile of 8), 7x7 stride 2
// (ResNet's stem), 3x3, 5x5 stride 2 and dilation 2 windows, odd sizes, outputs wider than a
// 112-pixel segment, NCHW and NHWC input, NHWC and NCHW output, bias with ReLU / Clip / SiLU or
// nothing, float16 and bfloat16; input rows of every copy width (odd, 2, 4 and 8-element multiples);
// and the same with a fused max pool (3x3 stride 2 pad 1 as ResNet's, 2x2 stride 2, 3x3 stride 1,
// ceil mode's ragged last window) against the CPU's max pool of that output. The last tests print the
// kernel's time on ResNet-50's stem at batch 128, alone and with its max pool (no assertion on time).
#include "layout_test_support.h"

#include <kernels/cpu/conv/conv.h>
#include <kernels/cpu/fused/epilogue.h>
#include <kernels/cpu/pool/pool.h>
#include <kernels/cuda/conv/small_channel_conv.h>

#include <cstdio>

using namespace kiln::kernels::cuda;
using namespace kiln::test;
namespace cpu = kiln::kernels;

namespace {

struct Pool {
  int64_t kernel = 0, stride = 1, pad = 0;
  bool ceil = false;
};

struct Case {
  std::string name;
  int64_t batch, channels, inH, inW, outChannels, kernel, stride, pad, dilation = 1;
  Pool pool = {};
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

// A pool's output size, in ceil mode as ONNX's MaxPool makes it (the last window starts inside).
int64_t pooledSize(int64_t in, const Pool& q) {
  const int64_t span = in + 2 * q.pad - q.kernel;
  int64_t out = (q.ceil ? (span + q.stride - 1) / q.stride : span / q.stride) + 1;
  if (q.ceil && (out - 1) * q.stride >= in + q.pad) --out;
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
  if (c.pool.kernel > 0) {
    FusedMaxPool q;
    q.kernelH = q.kernelW = c.pool.kernel, q.strideH = q.strideW = c.pool.stride, q.padTop = q.padLeft = c.pool.pad;
    q.outH = pooledSize(p.outH, c.pool), q.outW = pooledSize(p.outW, c.pool);
    p.pool = q;
  }
  return p;
}

// The CPU's max pool of NCHW planes [planes, h, w] by the problem's pool.
std::vector<float> pooledOnCpu(const std::vector<float>& y, int64_t planes, const SmallChannelConvProblem& p) {
  cpu::SpatialWindow w;
  w.in[1] = p.outH, w.in[2] = p.outW, w.out[1] = p.pool->outH, w.out[2] = p.pool->outW;
  w.kernel[1] = p.pool->kernelH, w.kernel[2] = p.pool->kernelW, w.stride[1] = p.pool->strideH;
  w.stride[2] = p.pool->strideW, w.padBegin[1] = p.pool->padTop, w.padBegin[2] = p.pool->padLeft;
  std::vector<float> out(size_t(planes * p.pool->outH * p.pool->outW));
  cpu::maxPool<float>(w, planes, y.data(), out.data(), nullptr, false);
  return out;
}

void check(const Case& c, const Epilogue& ep, ElementType type, bool xLast, bool yLast) {
  SmallChannelConvProblem p = problemOf(c, type);
  p.xChannelsLast = xLast, p.yChannelsLast = yLast;
  p.activation = ep.activation, p.alpha = ep.alpha, p.beta = ep.beta;
  ASSERT_EQ(smallChannelConvRefusal(p), nullptr);
  const int64_t convCount = c.batch * c.outChannels * p.outH * p.outW;
  const int64_t outH = p.pool ? p.pool->outH : p.outH, outW = p.pool ? p.pool->outW : p.outW;
  const int64_t inCount = c.batch * c.channels * c.inH * c.inW, outCount = c.batch * c.outChannels * outH * outW;
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
  std::vector<float> expected(static_cast<size_t>(convCount));
  cpu::convolution(shape, xf.data(), wf.data(), ep.bias ? bf.data() : nullptr, e, expected.data());
  if (p.pool) expected = pooledOnCpu(expected, c.batch * c.outChannels, p);

  const int64_t inPlane = c.inH * c.inW, outPlane = outH * outW;
  DeviceBuffer dx(fromValues(xLast ? transposedBlocks(x, c.batch, c.channels, inPlane) : x, type));
  DeviceBuffer dw(wf), dbias(fromValues(b, type)), dy(byteSize(type, outCount));
  ASSERT_TRUE(launchOverPoison(dy, [&] {
    return smallChannelConv(p, dx.data(), dw.as<float>(), ep.bias ? dbias.data() : nullptr, dy.data(), nullptr);
  }));
  std::vector<double> actual = valuesOf(dy.download(), type);
  if (yLast) actual = transposedBlocks(actual, c.batch, outPlane, c.outChannels);
  EXPECT_TRUE(closeValues(actual, std::vector<double>(expected.begin(), expected.end()), toleranceFor(type)))
      << "output [" << c.batch << ", " << c.outChannels << ", " << outH << ", " << outW << "]";
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
    {"3x3 s1 p1, 2 -> 8, 5x12 (4-element rows)", 1, 2, 5, 12, 8, 3, 1, 1},
    {"7x7 s2 p3, 3 -> 64, 23x24 (8-element rows), batch 2", 2, 3, 23, 24, 64, 7, 2, 3},
};

// The fused max pool: ResNet's 3x3 s2 p1 on odd and even maps, other windows, ceil mode, column
// blocks, channel counts 1 to 8.
const std::vector<Case> kPoolCases{
    {"7x7 s2 p3 3 -> 64 + pool 3x3 s2 p1, 17x17, batch 3", 3, 3, 17, 17, 64, 7, 2, 3, 1, {3, 2, 1}},
    {"7x7 s2 p3 3 -> 64 + pool 3x3 s2 p1, 32x30, batch 2", 2, 3, 32, 30, 64, 7, 2, 3, 1, {3, 2, 1}},
    {"3x3 s1 p1 1 -> 8 + pool 2x2 s2, 9x11", 1, 1, 9, 11, 8, 3, 1, 1, 1, {2, 2, 0}},
    {"3x3 s1 p1 8 -> 72 + pool 3x3 s1 p1, 7x10, batch 2", 2, 8, 7, 10, 72, 3, 1, 1, 1, {3, 1, 1}},
    {"5x5 s2 p2 5 -> 16 + pool 3x3 s2 ceil, 21x19", 1, 5, 21, 19, 16, 5, 2, 2, 1, {3, 2, 0, true}},
    {"3x3 s1 p1 4 -> 24 + pool 3x3 s2 p1, 40x8 (4 strips or more), batch 3", 3, 4, 40, 8, 24, 3, 1, 1, 1, {3, 2, 1}},
};

// Every case in both types, both input and output layouts, the epilogues taking turns.
void checkEveryLayout(const std::vector<Case>& cases) {
  int round = 0;
  for (const Case& c : cases)
    for (ElementType type : {ElementType::kFloat16, ElementType::kBFloat16})
      for (bool xLast : {false, true})
        for (bool yLast : {true, false}) {
          const Epilogue& ep = kEpilogues[size_t(round++) % kEpilogues.size()];
          SCOPED_TRACE(c.name + " " + typeName(type) + (xLast ? " NHWC in" : " NCHW in") +
                       (yLast ? " NHWC out " : " NCHW out ") + ep.name);
          check(c, ep, type, xLast, yLast);
        }
}

}  // namespace

TEST(SmallChannelConv, ShapesLayoutsAndEpiloguesAgainstTheCpu) {
  KILN_REQUIRE_GPU();
  checkEveryLayout(kCases);
}

TEST(SmallChannelConv, FusedMaxPoolAgainstTheCpu) {
  KILN_REQUIRE_GPU();
  checkEveryLayout(kPoolCases);
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
  Case pooled = stem;
  pooled.pool = {3, 2, 1};
  check(pooled, kEpilogues[0], ElementType::kFloat16, false, true);
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
  q = problemOf({"stem + pool", 128, 3, 224, 224, 64, 7, 2, 3, 1, {3, 2, 1}}, ElementType::kFloat16);
  EXPECT_EQ(smallChannelConvRefusal(q), nullptr);
  EXPECT_EQ(q.pool->outH, 56);
  SmallChannelConvProblem r = q;
  r.pool->padTop = 3;  // a pad as wide as the window
  EXPECT_NE(smallChannelConvRefusal(r), nullptr);
  r = q, r.pool->outW = 58;  // windows starting past the output
  EXPECT_NE(smallChannelConvRefusal(r), nullptr);
  r = problemOf({"wide + pool", 1, 3, 8, 240, 64, 3, 1, 1, 1, {3, 2, 1}}, ElementType::kFloat16);  // 240 > 112
  EXPECT_NE(smallChannelConvRefusal(r), nullptr);
}

// Informational: ResNet-50's stem at batch 128 (NCHW or NHWC fp16 in, NHWC fp16 out, bias + ReLU)
// on the GPU, alone and with its 3x3 stride 2 max pool fused (128x64x56x56 out), with its TFLOPS
// (R·S·C = 147, unpadded) and GB/s of input + output, next to a device copy of the output's bytes
// (the memory bound). cuDNN's graph engine took 0.703 ms on the H200 for the convolution, the
// separate MaxPool 0.103 ms.
TEST(SmallChannelConvTiming, ResNet50StemBatch128) {
  KILN_REQUIRE_GPU();
#if defined(KILN_CUDA_EMULATION)
  GTEST_SKIP() << "timing means nothing in the emulator";
#endif
  for (bool pooled : {false, true})
    for (bool xLast : {false, true}) {
      Case stem{"stem", 128, 3, 224, 224, 64, 7, 2, 3};
      if (pooled) stem.pool = {3, 2, 1};
      SmallChannelConvProblem p = problemOf(stem, ElementType::kFloat16);
      p.xChannelsLast = xLast;
      p.activation = cpu::Activation::kRelu;
      const int64_t outH = pooled ? p.pool->outH : p.outH, outW = pooled ? p.pool->outW : p.outW;
      const int64_t inCount = p.batch * 3 * 224 * 224, outCount = p.batch * outH * outW * 64;
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
          "[ timing   ] ResNet-50 stem%s 128x3x224x224 -> 128x%lldx%lldx64 7x7 s2 fp16 %s in, NHWC out, bias+Relu: "
          "%.4f ms, %.0f TFLOPS, %.0f GB/s; device copy of the output's bytes: %.4f ms\n",
          pooled ? " + MaxPool 3x3 s2" : "", static_cast<long long>(outH), static_cast<long long>(outW),
          xLast ? "NHWC" : "NCHW", ms, flops / (ms * 1e-3) / 1e12, double(inBytes + outBytes) / ms * 1e-6, copyMs);
    }
}

// Informational: EfficientNet-B0's stem at batch 128 (3x3 stride 2, 3 -> 32, bias + SiLU, NCHW and
// NHWC fp16 in, NHWC out). In the engine this kernel took 0.385 ms on the H200 where cuDNN's graph
// took 0.243; this isolates the kernel from its neighbours.
TEST(SmallChannelConvTiming, EfficientNetB0StemBatch128) {
  KILN_REQUIRE_GPU();
#if defined(KILN_CUDA_EMULATION)
  GTEST_SKIP() << "timing means nothing in the emulator";
#endif
  for (bool xLast : {false, true})
    for (cpu::Activation activation : {cpu::Activation::kSiLU, cpu::Activation::kRelu}) {
      SmallChannelConvProblem p = problemOf({"stem", 128, 3, 224, 224, 32, 3, 2, 1}, ElementType::kFloat16);
      p.xChannelsLast = xLast;
      p.activation = activation;
      const int64_t inCount = p.batch * 3 * 224 * 224, outCount = p.batch * p.outH * p.outW * 32;
      DeviceBuffer dx(byteSize(ElementType::kFloat16, inCount)), dy(byteSize(ElementType::kFloat16, outCount));
      dx.fill(0x3C);
      const std::vector<float> w(size_t(32 * 27), 0.01f);
      const DeviceBuffer dw(w), dbias(fromValues(std::vector<double>(32, 0.5), ElementType::kFloat16));
      auto run = [&] { return smallChannelConv(p, dx.data(), dw.as<float>(), dbias.data(), dy.data(), nullptr); };
      const double ms = bestMilliseconds(run);
      EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      const double bytes = double(byteSize(ElementType::kFloat16, inCount) + byteSize(ElementType::kFloat16, outCount));
      std::printf(
          "[ timing   ] EfficientNet-B0 stem 128x3x224x224 -> 128x112x112x32 3x3 s2 fp16 %s in, NHWC out, %s: "
          "%.4f ms, %.0f GB/s\n",
          xLast ? "NHWC" : "NCHW", activation == cpu::Activation::kSiLU ? "bias+SiLU" : "bias+Relu", ms,
          bytes / ms * 1e-6);
    }
}
