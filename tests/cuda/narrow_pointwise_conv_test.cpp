// The narrow pointwise convolution (kernels/cuda/conv/narrow_pointwise_conv.h) against the CPU's
// convolution with its fused epilogue (kernels/cpu/conv): 8 to 128 input channels (one to eight
// 16-wide steps, a half-filled last step at 24 and 40), 8 to 672 output channels (a partial last
// column block at 96, 72 and 200), odd row counts, one pixel, and a map of more row tiles than the
// resident blocks hold (the grid loops, the next tile's rows prefetched); no bias, bias + SiLU /
// ReLU / Clip / HardSwish, a residual before and after the activation; float16 and bfloat16. The
// last test prints the kernel's time on EfficientNet-B0's first expansion at batch 128 (no
// assertion on time).
#include "layout_test_support.h"

#include <kernels/cpu/conv/conv.h>
#include <kernels/cpu/fused/epilogue.h>
#include <kernels/cuda/conv/narrow_pointwise_conv.h>

#include <cstdio>

using namespace kiln::kernels::cuda;
using namespace kiln::test;
namespace cpu = kiln::kernels;

namespace {

struct Case {
  std::string name;
  int64_t batch, channels, height, width, outChannels;
};

struct Epilogue {
  const char* name;
  cpu::Activation activation;
  float alpha, beta;
  bool bias, residual, residualBeforeActivation;
};

const std::vector<Epilogue> kEpilogues{
    {"bias+SiLU", cpu::Activation::kSiLU, 0, 0, true, false, true},
    {"no bias", cpu::Activation::kNone, 0, 0, false, false, true},
    {"bias+residual+Relu", cpu::Activation::kRelu, 0, 0, true, true, true},
    {"bias+Clip 0,6 then residual", cpu::Activation::kClip, 0, 6, true, true, false},
    {"bias+HardSwish", cpu::Activation::kHardSwish, 0, 0, true, false, true},
    {"residual, no bias", cpu::Activation::kNone, 0, 0, false, true, true},
};

std::vector<float> floats(const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); }

void check(const Case& c, const Epilogue& ep, ElementType type) {
  NarrowPointwiseConvProblem p;
  const int64_t plane = c.height * c.width;
  p.rows = c.batch * plane, p.channels = c.channels, p.outChannels = c.outChannels, p.type = type;
  p.activation = ep.activation, p.alpha = ep.alpha, p.beta = ep.beta;
  p.residualBeforeActivation = ep.residualBeforeActivation;
  ASSERT_EQ(narrowPointwiseConvRefusal(p), nullptr);
  const int64_t inCount = p.rows * c.channels, outCount = p.rows * c.outChannels;
  // Values the type holds exactly, channels-last as the kernel reads them.
  const std::vector<double> x = valuesOf(randomElements(type, inCount, 31), type);
  const std::vector<double> w = valuesOf(randomElements(type, c.outChannels * c.channels, 32), type);
  const std::vector<double> b = valuesOf(randomElements(type, c.outChannels, 33), type);
  const std::vector<double> residual = valuesOf(randomElements(type, outCount, 34), type);

  cpu::ConvShape shape;
  shape.batch = c.batch, shape.inChannels = c.channels, shape.outChannels = c.outChannels, shape.group = 1;
  shape.window.in[1] = shape.window.out[1] = c.height;
  shape.window.in[2] = shape.window.out[2] = c.width;
  const std::vector<float> xf = floats(transposedBlocks(x, c.batch, plane, c.channels)), wf = floats(w), bf = floats(b);
  const std::vector<float> residualNchw = floats(transposedBlocks(residual, c.batch, plane, c.outChannels));
  cpu::Epilogue e;
  e.activation = ep.activation, e.alpha = ep.alpha, e.beta = ep.beta;
  e.residual = ep.residual ? residualNchw.data() : nullptr;
  e.residualBeforeActivation = ep.residualBeforeActivation;
  std::vector<float> expectedNchw(static_cast<size_t>(outCount));
  cpu::convolution(shape, xf.data(), wf.data(), ep.bias ? bf.data() : nullptr, e, expectedNchw.data());
  const std::vector<double> expected =
      transposedBlocks(std::vector<double>(expectedNchw.begin(), expectedNchw.end()), c.batch, c.outChannels, plane);

  DeviceBuffer dx(fromValues(x, type)), dw(fromValues(w, type)), dbias(fromValues(b, type));
  DeviceBuffer dresidual(fromValues(residual, type)), dy(byteSize(type, outCount));
  ASSERT_TRUE(launchOverPoison(dy, [&] {
    return narrowPointwiseConv(p, dx.data(), dw.data(), ep.bias ? dbias.data() : nullptr,
                               ep.residual ? dresidual.data() : nullptr, dy.data(), nullptr);
  }));
  EXPECT_TRUE(closeValues(valuesOf(dy.download(), type), expected, toleranceFor(type)))
      << "output [" << p.rows << ", " << c.outChannels << "]";
}

std::string typeName(ElementType type) { return type == ElementType::kFloat16 ? "fp16" : "bf16"; }

const std::vector<Case> kCases{
    {"16 -> 96 (a half column block), 7x9", 1, 16, 7, 9, 96},
    {"24 -> 144 (a half-filled second step), 5x7, batch 2", 2, 24, 5, 7, 144},
    {"40 -> 8, 3x5, batch 3", 3, 40, 3, 5, 8},
    {"8 -> 8, one pixel", 1, 8, 1, 1, 8},
    {"64 -> 200, 11x3, batch 2", 2, 64, 11, 3, 200},
    {"128 -> 72, 5x5", 1, 128, 5, 5, 72},
    {"112 -> 672, 4x4", 1, 112, 4, 4, 672},
    {"80 -> 480, 13x1", 1, 80, 13, 1, 480},
};

}  // namespace

TEST(NarrowPointwiseConv, ChannelCountsAndEpiloguesAgainstTheCpu) {
  KILN_REQUIRE_GPU();
  int round = 0;
  for (const Case& c : kCases)
    for (ElementType type : {ElementType::kFloat16, ElementType::kBFloat16}) {
      const Epilogue& ep = kEpilogues[size_t(round++) % kEpilogues.size()];
      SCOPED_TRACE(c.name + " " + typeName(type) + " " + ep.name);
      check(c, ep, type);
    }
}

TEST(NarrowPointwiseConv, EveryEpilogueOnAnExpansion) {
  KILN_REQUIRE_GPU();
  for (const Epilogue& ep : kEpilogues) {
    SCOPED_TRACE(ep.name);
    check(kCases[0], ep, ElementType::kFloat16);
  }
}

// 100,352 rows: more row tiles than the resident blocks take in one round, so the blocks loop.
TEST(NarrowPointwiseConv, MoreRowTilesThanResidentBlocks) {
  KILN_REQUIRE_GPU();
#if defined(KILN_CUDA_EMULATION)
  const Case big{"16 -> 8, 64x64, batch 2", 2, 16, 64, 64, 8};
#else
  const Case big{"16 -> 8, 224x224, batch 2", 2, 16, 224, 224, 8};
#endif
  check(big, kEpilogues[0], ElementType::kFloat16);
  check(big, kEpilogues[2], ElementType::kBFloat16);
}

TEST(NarrowPointwiseConv, Refusals) {
  NarrowPointwiseConvProblem p;
  p.rows = 128 * 112 * 112, p.channels = 16, p.outChannels = 96;
  EXPECT_EQ(narrowPointwiseConvRefusal(p), nullptr);
  NarrowPointwiseConvProblem q = p;
  q.channels = 12;
  EXPECT_NE(narrowPointwiseConvRefusal(q), nullptr);
  q = p, q.channels = 136;
  EXPECT_NE(narrowPointwiseConvRefusal(q), nullptr);
  q = p, q.outChannels = 100;
  EXPECT_NE(narrowPointwiseConvRefusal(q), nullptr);
  q = p, q.type = ElementType::kFloat32;
  EXPECT_NE(narrowPointwiseConvRefusal(q), nullptr);
  q = p, q.rows = int64_t(1) << 28;  // the output past 2^31 elements
  EXPECT_NE(narrowPointwiseConvRefusal(q), nullptr);
  EXPECT_EQ(narrowPointwiseConv(p, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr), cudaErrorInvalidValue);
}

// Informational: EfficientNet-B0's first expansion at batch 128 (16 -> 96 at 112x112, bias + SiLU,
// fp16 channels-last), with its GB/s of input + output, next to a device copy of the output's
// bytes (the memory bound). cuDNN's fused graph took 0.367 ms on the H200 in the engine.
TEST(NarrowPointwiseConvTiming, EfficientNetB0FirstExpansionBatch128) {
  KILN_REQUIRE_GPU();
#if defined(KILN_CUDA_EMULATION)
  GTEST_SKIP() << "timing means nothing in the emulator";
#endif
  for (const Case& c :
       {Case{"16 -> 96 at 112x112", 128, 16, 112, 112, 96}, Case{"24 -> 144 at 56x56", 128, 24, 56, 56, 144},
        Case{"40 -> 240 at 28x28", 128, 40, 28, 28, 240}, Case{"80 -> 480 at 14x14", 128, 80, 14, 14, 480},
        Case{"112 -> 672 at 14x14", 128, 112, 14, 14, 672}}) {
    NarrowPointwiseConvProblem p;
    p.rows = c.batch * c.height * c.width, p.channels = c.channels, p.outChannels = c.outChannels;
    p.activation = cpu::Activation::kSiLU;
    const size_t inBytes = byteSize(ElementType::kFloat16, p.rows * p.channels),
                 outBytes = byteSize(ElementType::kFloat16, p.rows * p.outChannels);
    DeviceBuffer dx(inBytes), dy(outBytes), copyTo(outBytes);
    dx.fill(0x3C);  // fp16 0x3C3C, about 1.06
    const DeviceBuffer dw(
        fromValues(std::vector<double>(size_t(p.outChannels * p.channels), 0.01), ElementType::kFloat16));
    const DeviceBuffer dbias(fromValues(std::vector<double>(size_t(p.outChannels), 0.5), ElementType::kFloat16));
    auto run = [&] { return narrowPointwiseConv(p, dx.data(), dw.data(), dbias.data(), nullptr, dy.data(), nullptr); };
    auto copy = [&] { return cudaMemcpyAsync(copyTo.data(), dy.data(), outBytes, cudaMemcpyDeviceToDevice); };
    const double ms = bestMilliseconds(run), copyMs = bestMilliseconds(copy);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::printf(
        "[ timing   ] EfficientNet-B0 expansion %s, batch 128, fp16 NHWC, bias+SiLU: %.4f ms, %.0f GB/s; "
        "device copy of the output's bytes: %.4f ms\n",
        c.name.c_str(), ms, double(inBytes + outBytes) / ms * 1e-6, copyMs);
  }
}
