// Kiln's 8-bit implicit-GEMM convolution (kernels/cuda/quant/int8_conv.h) against a plain host
// convolution on random int8 values / e4m3 codes (never all zeros): N 1 and 3, odd images, input
// channels 16 / 48 / 64 (a 64-byte stage spanning taps), output channels 16..144 (partial channel
// tiles), 1x1 stride 1 and 2, 3x3 pad 1 stride 1 and 2, dilation 2, 7x7 stride 2 pad 3; bias,
// residual before or after ReLU; float32 / float16 / bfloat16 / int8 / e4m3 outputs; every tile
// config; y 16-byte aligned (vector stores) or only pair-aligned (element-wise). int8 sums are
// exact, and the epilogue is the CPU's arithmetic (two roundings, then the output's one,
// quant_math.h's quantization), so int8 layers match bit for bit; fp8 sums are fp32 in the tensor
// cores' order, within a tiny tolerance. A failure prints the case, the first mismatches (n, p, q,
// k) and the largest error. Int8ConvTiming prints the kernel's time and TOPS at ResNet-50's shapes
// (informational, no assertion).
#include "cuda/cuda_test_util.h"
#include "cuda/device_buffer.h"
#include "cuda/gpu_test_support.h"

#include <kernels/cpu/common/numeric_types.h>
#include <kernels/cuda/quant/int8_conv.h>
#include <kernels/cuda/quant/quant_math.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace kiln::kernels::cuda;
using namespace kiln::test;
namespace cpu = kiln::kernels;

namespace {

struct ConvCase {
  int64_t n, h, w, c, k, r, stride, pad, dilation;
};

enum class Residual { kNone, kBefore, kAfter };

struct Variant {
  bool fp8 = false;
  ElementType yType = ElementType::kFloat32;
  bool bias = true, relu = false;
  Residual residual = Residual::kNone;
  Int8ConvTile tile = Int8ConvTile::k128x128;
  bool unalignedY = false;  // y a pair past a 16-byte boundary: the epilogue's element-wise stores
  bool int8Residual = false;       // the residual int8 with a scale (ChainInt8Activations' block outputs)
  bool unalignedResidual = false;  // an int8 residual a pair past a 16-byte boundary: element-wise loads
};

int64_t outDim(int64_t in, const ConvCase& c) { return (in + 2 * c.pad - c.dilation * (c.r - 1) - 1) / c.stride + 1; }

std::string describe(const ConvCase& c, const Variant& v) {
  static const char* const residuals[] = {"", ", residual before", ", residual after"};
  return std::string(v.fp8 ? "fp8" : "int8") + " X [" + std::to_string(c.n) + "," + std::to_string(c.h) + "," +
         std::to_string(c.w) + "," + std::to_string(c.c) + "] K " + std::to_string(c.k) + " " + std::to_string(c.r) +
         "x" + std::to_string(c.r) + " stride " + std::to_string(c.stride) + " pad " + std::to_string(c.pad) +
         " dilation " + std::to_string(c.dilation) + " -> " + toString(v.yType) + (v.bias ? ", bias" : "") +
         (v.relu ? ", relu" : "") + residuals[int(v.residual)] + ", tile " + toString(v.tile) +
         (v.unalignedY ? ", y unaligned" : "") + (v.int8Residual ? ", int8 residual" : "") +
         (v.unalignedResidual ? " unaligned" : "");
}

// A random operand byte: int8 in [-127, 127] or an e4m3 code of magnitude below 4 (no NaN).
uint8_t randomByte(std::mt19937& rng, bool fp8) {
  if (!fp8) return uint8_t(int8_t(int(rng() % 255) - 127));
  return uint8_t(rng() % 0x48) | uint8_t(rng() % 2 ? 0x80 : 0);
}

double operandValue(uint8_t b, bool fp8) { return fp8 ? double(cpu::decodeE4M3(b)) : double(int8_t(b)); }

size_t bytesOf(ElementType t) {
  return t == ElementType::kFloat32 ? 4 : t == ElementType::kFloat16 || t == ElementType::kBFloat16 ? 2 : 1;
}

// A float in a float storage type as its bits, and back.
void storeFloat(ElementType t, float v, uint8_t* at) {
  if (t == ElementType::kFloat32) {
    std::memcpy(at, &v, 4);
  } else if (t == ElementType::kFloat16) {
    const cpu::Float16 h(v);
    std::memcpy(at, &h.bits, 2);
  } else {
    const cpu::BFloat16 b(v);
    std::memcpy(at, &b.bits, 2);
  }
}

float loadFloat(ElementType t, const uint8_t* at) {
  if (t == ElementType::kFloat32) {
    float v;
    std::memcpy(&v, at, 4);
    return v;
  }
  uint16_t bits;
  std::memcpy(&bits, at, 2);
  return halfBitsValue(t, bits);
}

// The output element's value as the test reads it (8-bit outputs: their quantized value).
double outputValue(ElementType t, const uint8_t* at) {
  if (t == ElementType::kInt8) return double(int8_t(*at));
  if (t == ElementType::kFloat8E4M3) return double(cpu::decodeE4M3(*at));
  return double(loadFloat(t, at));
}

struct Outcome {
  int64_t mismatches = 0;
  double maxError = 0;
};

Outcome checkCase(const ConvCase& c, const Variant& v, uint32_t seed) {
  SCOPED_TRACE(describe(c, v));
  std::mt19937 rng(seed);
  const int64_t p = outDim(c.h, c), q = outDim(c.w, c), rows = c.n * p * q;
  std::vector<uint8_t> x(size_t(c.n * c.h * c.w * c.c)), w(size_t(c.k * c.r * c.r * c.c));
  for (uint8_t& b : x) b = randomByte(rng, v.fp8);
  for (uint8_t& b : w) b = randomByte(rng, v.fp8);
  // Multipliers that keep results around 1 (an 8-bit output then spans its range).
  const double typical = (v.fp8 ? 1.5 : 73.0) * (v.fp8 ? 1.5 : 73.0) * std::sqrt(double(c.r * c.r * c.c));
  std::vector<float> multipliers(size_t(c.k)), bias(size_t(c.k));
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f), spread(0.5f, 2.0f);
  for (float& m : multipliers) m = float(spread(rng) / typical);
  for (float& b : bias) b = unit(rng);
  const ElementType residualType = v.int8Residual ? ElementType::kInt8
                                   : v.yType == ElementType::kInt8 || v.yType == ElementType::kFloat8E4M3
                                       ? ElementType::kFloat16
                                       : v.yType;
  const float residualScale = 1.0f / 97;  // int8 residuals: values within about +-1.3
  const size_t residualOffset = v.unalignedResidual ? 2 : 0;
  std::vector<uint8_t> residual(residualOffset + size_t(rows * c.k) * bytesOf(residualType));
  for (int64_t i = 0; i < rows * c.k; ++i)
    if (v.int8Residual)
      residual[residualOffset + size_t(i)] = uint8_t(int8_t(int(rng() % 256) - 128));
    else
      storeFloat(residualType, unit(rng), &residual[size_t(i) * bytesOf(residualType)]);
  // The residual as the epilogue adds it: an int8 one is float(q) * scale, one rounding.
  auto residualAt = [&](int64_t at) -> float {
    if (!v.int8Residual) return loadFloat(residualType, &residual[size_t(at) * bytesOf(residualType)]);
    volatile float r = float(int8_t(residual[residualOffset + size_t(at)]));
    r = r * residualScale;
    return r;
  };
  const float outputScale = 1.0f / 64;  // 8-bit outputs: values within about +-2

  DeviceBuffer dX(x), dW(w), dM(multipliers), dB(bias), dR(residual);
  const size_t yOffset = v.unalignedY ? 2 * bytesOf(v.yType) : 0;
  DeviceBuffer dY(yOffset + size_t(rows * c.k) * bytesOf(v.yType));
  Int8ConvProblem pr;
  pr.x = dX.data(), pr.w = dW.data(), pr.fp8 = v.fp8;
  pr.batch = c.n, pr.inH = c.h, pr.inW = c.w, pr.channels = c.c, pr.outH = p, pr.outW = q, pr.outChannels = c.k;
  pr.kernelH = pr.kernelW = c.r, pr.strideH = pr.strideW = c.stride, pr.dilationH = pr.dilationW = c.dilation;
  pr.padTop = pr.padLeft = c.pad;
  pr.multipliers = dM.as<float>();
  pr.bias = v.bias ? dB.as<float>() : nullptr;
  if (v.residual != Residual::kNone) {
    pr.residual = dR.as<uint8_t>() + residualOffset, pr.residualType = residualType;
    pr.residualScale = residualScale;
    pr.residualBeforeActivation = v.residual == Residual::kBefore;
  }
  pr.activation = v.relu ? cpu::Activation::kRelu : cpu::Activation::kNone;
  pr.outputScale = outputScale;
  EXPECT_TRUE(int8ConvTakes(pr)) << int8ConvRefusal(pr);
  EXPECT_EQ(int8Conv(pr, v.tile, dY.as<uint8_t>() + yOffset, v.yType, nullptr), cudaSuccess)
      << cudaGetErrorString(cudaGetLastError());
  std::vector<uint8_t> y = dY.download();
  y.erase(y.begin(), y.begin() + std::ptrdiff_t(yOffset));

  Outcome o;
  const size_t yBytes = bytesOf(v.yType);
  for (int64_t n = 0; n < c.n; ++n)
    for (int64_t oh = 0; oh < p; ++oh)
      for (int64_t ow = 0; ow < q; ++ow)
        for (int64_t k = 0; k < c.k; ++k) {
          double sum = 0, magnitude = 0;
          for (int64_t kh = 0; kh < c.r; ++kh)
            for (int64_t kw = 0; kw < c.r; ++kw) {
              const int64_t ih = oh * c.stride - c.pad + kh * c.dilation, iw = ow * c.stride - c.pad + kw * c.dilation;
              if (ih < 0 || ih >= c.h || iw < 0 || iw >= c.w) continue;
              for (int64_t ci = 0; ci < c.c; ++ci) {
                const double product = operandValue(x[size_t(((n * c.h + ih) * c.w + iw) * c.c + ci)], v.fp8) *
                                       operandValue(w[size_t(((k * c.r + kh) * c.r + kw) * c.c + ci)], v.fp8);
                sum += product;
                magnitude += std::fabs(product);
              }
            }
          const int64_t row = (n * p + oh) * q + ow, at = row * c.k + k;
          // The epilogue as the kernel and the CPU compute it: float sums, one rounding a step.
          volatile float value = float(sum);
          value = value * multipliers[size_t(k)];
          if (v.bias) value = value + bias[size_t(k)];
          const float r = v.residual == Residual::kNone ? 0.0f : residualAt(at);
          if (v.residual == Residual::kBefore) value = value + r;
          if (v.relu) value = std::max(0.0f, float(value));
          if (v.residual == Residual::kAfter) value = value + r;
          std::vector<uint8_t> want(yBytes);
          if (v.yType == ElementType::kInt8)
            want[0] = uint8_t(quantizeToInteger<int8_t>(value, outputScale, int8_t(0)));
          else if (v.yType == ElementType::kFloat8E4M3)
            want[0] = quantizeToFloat8(value, outputScale, 0, Float8Kind::kE4M3, true);
          else
            storeFloat(v.yType, value, want.data());
          const uint8_t* got = &y[size_t(at) * yBytes];
          const double gotValue = outputValue(v.yType, got), wantValue = outputValue(v.yType, want.data());
          const double error = std::fabs(gotValue - wantValue);
          o.maxError = std::max(o.maxError, std::isnan(error) ? INFINITY : error);
          bool ok = std::memcmp(got, want.data(), yBytes) == 0;
          if (!ok && v.fp8) {
            // fp32 sums in another order (and the tensor cores' accumulation): a relative 2^-12 of
            // the products' magnitude, carried through the epilogue (and the output scale), plus
            // one step of the output type.
            const bool fp8Out = v.yType == ElementType::kFloat8E4M3;
            const double slack = std::ldexp(magnitude, -12) * multipliers[size_t(k)] / (fp8Out ? outputScale : 1.0f);
            const double a = std::fabs(wantValue);
            const double step = fp8Out                              ? std::max(a / 8, std::ldexp(1.0, -9))
                                : v.yType == ElementType::kFloat16  ? std::ldexp(a, -10)
                                : v.yType == ElementType::kBFloat16 ? std::ldexp(a, -7)
                                                                    : 0.0;
            ok = error <= slack + step + 1e-6;
          }
          if (!ok && ++o.mismatches <= 5)
            ADD_FAILURE() << "y[n " << n << ", p " << oh << ", q " << ow << ", k " << k << "] (element " << at
                          << ") = " << gotValue << ", expected " << wantValue << " (exact sum " << sum << ")";
        }
  std::printf("[ int8conv ] %s: max abs error %g, %lld mismatches of %lld\n", describe(c, v).c_str(), o.maxError,
              (long long)o.mismatches, (long long)(rows * c.k));
  return o;
}

const std::vector<ConvCase> kShapes{
    // n, h, w, c, k, r, stride, pad, dilation
    {1, 7, 7, 16, 16, 1, 1, 0, 1},     // 1x1, one partial pixel tile
    {3, 13, 13, 48, 48, 1, 2, 0, 1},   // 1x1 stride 2; 48 channels: a stage spans three taps' chunks
    {1, 17, 17, 64, 144, 3, 1, 1, 1},  // 3x3 pad 1; 144 channels: a partial channel tile
    {3, 13, 7, 48, 64, 3, 2, 1, 1},    // 3x3 stride 2, odd and unequal H and W
    {1, 17, 13, 16, 64, 7, 2, 3, 1},   // ResNet's stem: 7x7 stride 2 pad 3 on 16 (padded) channels
    {1, 13, 13, 16, 48, 3, 1, 2, 2},   // dilation 2
    {3, 7, 7, 64, 16, 3, 1, 1, 1},     // 16 output channels: most of a channel tile idle
};

// Every shape with every tile, cycling the outputs and epilogues (offset by the shape, so each tile
// meets each of them).
void checkAll(bool fp8, const std::vector<ElementType>& outputs) {
  uint32_t seed = fp8 ? 101 : 7;
  for (size_t shape = 0; shape < kShapes.size(); ++shape)
    for (int t = 0; t < kInt8ConvTiles; ++t) {
      const size_t i = shape + size_t(t);
      Variant v;
      v.fp8 = fp8, v.tile = Int8ConvTile(t);
      v.yType = outputs[i % outputs.size()];
      v.bias = i % 4 != 3;
      v.relu = (shape + i) % 2 == 0;
      v.residual = Residual((shape + 2 * size_t(t)) % 3);
      checkCase(kShapes[shape], v, ++seed);
    }
}

TEST(Int8Conv, Int8MatchesHostReference) {
  KILN_REQUIRE_GPU();
  checkAll(false, {ElementType::kFloat32, ElementType::kFloat16, ElementType::kInt8, ElementType::kBFloat16});
}

TEST(Int8Conv, Fp8AgreesWithHostReference) {
  KILN_REQUIRE_GPU();
  cudaDeviceProp properties{};
  KILN_CUDA_OK(cudaGetDeviceProperties(&properties, 0));
  if (properties.major * 10 + properties.minor < 89) GTEST_SKIP() << "fp8 mma needs sm_89 or later";
  checkAll(true, {ElementType::kFloat32, ElementType::kFloat16, ElementType::kFloat8E4M3});
}

// Every epilogue combination on one small shape, int8 exact.
TEST(Int8Conv, EpiloguesMatchHostReference) {
  KILN_REQUIRE_GPU();
  uint32_t seed = 300;
  for (ElementType y : {ElementType::kFloat32, ElementType::kFloat16, ElementType::kInt8})
    for (Residual r : {Residual::kNone, Residual::kBefore, Residual::kAfter})
      for (bool relu : {false, true}) {
        Variant v;
        v.yType = y, v.residual = r, v.relu = relu, v.tile = Int8ConvTile::k128x64;
        checkCase({1, 9, 9, 32, 32, 3, 1, 1, 1}, v, ++seed);
      }
}

// y only pair-aligned (as the API allows): the epilogue stores element by element instead of 16 bytes.
TEST(Int8Conv, UnalignedOutputMatchesHostReference) {
  KILN_REQUIRE_GPU();
  uint32_t seed = 400;
  for (ElementType y : {ElementType::kFloat32, ElementType::kFloat16, ElementType::kInt8}) {
    Variant v;
    v.yType = y, v.residual = Residual::kAfter, v.relu = true, v.tile = Int8ConvTile::k64x64, v.unalignedY = true;
    checkCase({1, 9, 9, 32, 80, 3, 1, 1, 1}, v, ++seed);
  }
}

// An int8 residual with its scale (kiln.QuantizedConv's z_scale): every shape and tile, the float
// and int8 outputs, before and after the ReLU, 16-byte loads; then element-wise loads where the
// residual is only pair-aligned. Exact.
TEST(Int8Conv, Int8ResidualMatchesHostReference) {
  KILN_REQUIRE_GPU();
  const std::vector<ElementType> outputs{ElementType::kInt8, ElementType::kFloat16, ElementType::kFloat32,
                                         ElementType::kBFloat16};
  uint32_t seed = 500;
  for (size_t shape = 0; shape < kShapes.size(); ++shape)
    for (int t = 0; t < kInt8ConvTiles; ++t) {
      const size_t i = shape + size_t(t);
      Variant v;
      v.tile = Int8ConvTile(t), v.yType = outputs[i % outputs.size()], v.relu = true, v.bias = i % 3 != 2;
      v.residual = i % 2 ? Residual::kAfter : Residual::kBefore;
      v.int8Residual = true;
      v.unalignedResidual = shape == kShapes.size() - 1 && t == 0;
      EXPECT_EQ(checkCase(kShapes[shape], v, ++seed).mismatches, 0);
    }
  for (ElementType y : outputs) {
    Variant v;
    v.yType = y, v.residual = Residual::kBefore, v.relu = true, v.tile = Int8ConvTile::k64x64;
    v.int8Residual = v.unalignedResidual = true;
    EXPECT_EQ(checkCase({1, 9, 9, 32, 80, 3, 1, 1, 1}, v, ++seed).mismatches, 0);
  }
}

TEST(Int8Conv, RefusesWhatItCannotCompute) {
  Int8ConvProblem p;
  alignas(16) static uint8_t bytes[64] = {};
  static float one[16] = {};
  p.x = p.w = bytes, p.multipliers = one;
  p.batch = p.inH = p.inW = p.outH = p.outW = 1, p.channels = 16, p.outChannels = 16;
  EXPECT_TRUE(int8ConvTakes(p)) << int8ConvRefusal(p);
  p.channels = 24;
  EXPECT_FALSE(int8ConvTakes(p));
  p.channels = 16, p.outChannels = 8;
  EXPECT_FALSE(int8ConvTakes(p));
  p.outChannels = 16, p.x = bytes + 1;
  EXPECT_FALSE(int8ConvTakes(p));
  p.x = bytes, p.batch = int64_t(1) << 20, p.inH = p.inW = 64;
  EXPECT_FALSE(int8ConvTakes(p));  // 2^36 input elements
  p.batch = 1;
  EXPECT_EQ(int8Conv(p, Int8ConvTile::k64x64, bytes, ElementType::kInt32, nullptr), cudaErrorInvalidValue);
  p.residual = bytes, p.residualType = ElementType::kInt8;
  EXPECT_TRUE(int8ConvTakes(p)) << int8ConvRefusal(p);
  p.fp8 = true;  // an int8 residual in an fp8 convolution
  EXPECT_FALSE(int8ConvTakes(p));
  p.fp8 = false, p.residualType = ElementType::kInt32;
  EXPECT_FALSE(int8ConvTakes(p));
}

// Informational: the kernel's time at ResNet-50's layers on the H200 (cuDNN fp16 takes about
// 0.13 ms for the 3x3 one). Prints; asserts nothing.
TEST(Int8ConvTiming, ResNet50Shapes) {
  KILN_REQUIRE_GPU();
#if defined(KILN_CUDA_EMULATION)
  GTEST_SKIP() << "timing means nothing in the emulator";
#endif
  struct Shape {
    const char* name;
    ConvCase c;
  };
  const Shape shapes[] = {{"128x56x56x64 -> 64 3x3", {128, 56, 56, 64, 64, 3, 1, 1, 1}},
                          {"128x56x56x256 -> 64 1x1", {128, 56, 56, 256, 64, 1, 1, 0, 1}},
                          {"128x56x56x64 -> 256 1x1", {128, 56, 56, 64, 256, 1, 1, 0, 1}},
                          {"128x28x28x128 -> 128 3x3", {128, 28, 28, 128, 128, 3, 1, 1, 1}}};
  for (const Shape& s : shapes) {
    const ConvCase& c = s.c;
    const int64_t p = outDim(c.h, c), q = outDim(c.w, c), rows = c.n * p * q;
    std::mt19937 rng(5);
    std::vector<uint8_t> x(size_t(c.n * c.h * c.w * c.c)), w(size_t(c.k * c.r * c.r * c.c));
    for (uint8_t& b : x) b = uint8_t(rng() % 7);
    for (uint8_t& b : w) b = uint8_t(rng() % 7);
    std::vector<float> m(size_t(c.k), 1e-3f);
    DeviceBuffer dX(x), dW(w), dM(m), dY(size_t(rows * c.k) * 2);
    const double ops = 2.0 * double(rows) * double(c.k) * double(c.r * c.r * c.c);
    for (bool fp8 : {false, true})
      for (int t = 0; t < kInt8ConvTiles; ++t) {
        Int8ConvProblem pr;
        pr.x = dX.data(), pr.w = dW.data(), pr.fp8 = fp8, pr.multipliers = dM.as<float>();
        pr.batch = c.n, pr.inH = c.h, pr.inW = c.w, pr.channels = c.c, pr.outH = p, pr.outW = q, pr.outChannels = c.k;
        pr.kernelH = pr.kernelW = c.r, pr.strideH = pr.strideW = c.stride, pr.padTop = pr.padLeft = c.pad;
        pr.activation = cpu::Activation::kRelu;
        const Int8ConvTile tile = Int8ConvTile(t);
        cudaEvent_t start, stop;
        cudaEventCreate(&start);
        cudaEventCreate(&stop);
        for (int i = 0; i < 3; ++i) int8Conv(pr, tile, dY.data(), ElementType::kFloat16, nullptr);
        constexpr int kRuns = 20;
        cudaEventRecord(start);
        cudaError_t status = cudaSuccess;
        for (int i = 0; i < kRuns; ++i) status = int8Conv(pr, tile, dY.data(), ElementType::kFloat16, nullptr);
        cudaEventRecord(stop);
        cudaEventSynchronize(stop);
        float ms = 0;
        cudaEventElapsedTime(&ms, start, stop);
        cudaEventDestroy(start);
        cudaEventDestroy(stop);
        ms /= kRuns;
        std::printf("[ timing   ] %s %s tile %s -> fp16: %.4f ms, %.0f TOPS (%s)\n", s.name, fp8 ? "fp8 " : "int8",
                    toString(tile), ms, ops / (ms * 1e-3) / 1e12, cudaGetErrorString(status));
      }
  }
}

}  // namespace
