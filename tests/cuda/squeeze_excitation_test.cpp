// The squeeze-and-excitation gate (kernels/cuda/pool/squeeze_excitation.h) against a host
// reference (means in double, the products in double, the CPU's fused-epilogue activations):
// channels-last maps pooled by the packed kernel's split sums (a large map at batch 1, so its
// positions split over blocks) and unsplit, channel counts that are not whole vectors and
// channels-first maps (pooled by globalPool first), odd channel and hidden counts, an output
// channel count unlike the input's, no biases, many images (a block per group of four), a
// misaligned input; float32, float16 and bfloat16. The weight rows of the products spread over
// blocks (16 a block): 960 -> 240 -> 960 leaves partial blocks at both ends.
#include "layout_test_support.h"

#include <kernels/cpu/fused/epilogue.h>
#include <kernels/cuda/pool/squeeze_excitation.h>

#include <cmath>
#include <random>

using namespace kiln::kernels::cuda;
using namespace kiln::test;
namespace cpu = kiln::kernels;

namespace {

struct Case {
  std::string name;
  int64_t batch, channels, spatial, hidden, outChannels;
  PoolLayout layout;
  ElementType type;
  cpu::Activation squeeze, excite;
  float exciteAlpha = 0, exciteBeta = 0;
  bool biases = true;
};

// Seeded values in +-[lo, hi], rounded to `type`.
std::vector<double> seededValues(int64_t count, double lo, double hi, uint32_t seed, ElementType type) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> magnitude(lo, hi);
  std::vector<double> v(static_cast<size_t>(count));
  for (double& x : v) x = (rng() & 1 ? -1 : 1) * magnitude(rng);
  return valuesOf(fromValues(v, type), type);
}

std::vector<double> activated(std::vector<double> v, cpu::Activation a, float alpha, float beta) {
  std::vector<float> f(v.begin(), v.end());
  cpu::Epilogue e;
  e.activation = a, e.alpha = alpha, e.beta = beta;
  cpu::applyEpilogue(f.data(), int64_t(f.size()), e);
  return std::vector<double>(f.begin(), f.end());
}

// rows [rows, columns] · v [columns] + bias, per image.
std::vector<double> product(const std::vector<double>& w, const std::vector<double>* bias, const std::vector<double>& v,
                            int64_t images, int64_t rows, int64_t columns) {
  std::vector<double> out(size_t(images * rows));
  for (int64_t n = 0; n < images; ++n)
    for (int64_t r = 0; r < rows; ++r) {
      double sum = bias ? (*bias)[size_t(r)] : 0.0;
      for (int64_t c = 0; c < columns; ++c) sum += w[size_t(r * columns + c)] * v[size_t(n * columns + c)];
      out[size_t(n * rows + r)] = sum;
    }
  return out;
}

void check(const Case& c, int misalignBy = 0) {
  SCOPED_TRACE(c.name);
  SqueezeExcitation p;
  p.batch = c.batch, p.channels = c.channels, p.spatial = c.spatial, p.hidden = c.hidden;
  p.outChannels = c.outChannels, p.squeeze = c.squeeze, p.excite = c.excite;
  p.exciteAlpha = c.exciteAlpha, p.exciteBeta = c.exciteBeta;
  ASSERT_TRUE(squeezeExcitationTakes(p));
  const uint32_t seed = uint32_t(c.batch * 7 + c.channels * 3 + c.spatial + c.hidden);
  // x [N, C, spatial] with a per-channel offset, so the means are not all near zero.
  std::vector<double> x = seededValues(c.batch * c.channels * c.spatial, 0.05, 2.0, seed, c.type);
  for (int64_t i = 0; i < int64_t(x.size()); ++i) x[size_t(i)] += double((i / c.spatial) % 5) * 0.25;
  x = valuesOf(fromValues(x, c.type), c.type);
  const double w1Scale = 2.0 / std::sqrt(double(c.channels)), w2Scale = 2.0 / std::sqrt(double(c.hidden));
  const std::vector<double> w1 = seededValues(c.hidden * c.channels, 0.05 * w1Scale, w1Scale, seed + 1, c.type);
  const std::vector<double> b1 = seededValues(c.hidden, 0.05, 0.5, seed + 2, c.type);
  const std::vector<double> w2 = seededValues(c.outChannels * c.hidden, 0.05 * w2Scale, w2Scale, seed + 3, c.type);
  const std::vector<double> b2 = seededValues(c.outChannels, 0.05, 0.5, seed + 4, c.type);

  std::vector<double> means(size_t(c.batch * c.channels));
  for (int64_t plane = 0; plane < c.batch * c.channels; ++plane) {
    double sum = 0;
    for (int64_t s = 0; s < c.spatial; ++s) sum += x[size_t(plane * c.spatial + s)];
    means[size_t(plane)] = sum / double(c.spatial);
  }
  const std::vector<double> hidden =
      activated(product(w1, c.biases ? &b1 : nullptr, means, c.batch, c.hidden, c.channels), c.squeeze, 0, 0);
  const std::vector<double> expected =
      activated(product(w2, c.biases ? &b2 : nullptr, hidden, c.batch, c.outChannels, c.hidden), c.excite,
                c.exciteAlpha, c.exciteBeta);

  const std::vector<double> stored =
      c.layout == PoolLayout::kChannelsLast ? transposedBlocks(x, c.batch, c.channels, c.spatial) : x;
  Bytes xBytes = fromValues(stored, c.type);
  xBytes.insert(xBytes.begin(), size_t(misalignBy) * elementBytes(c.type), 0);
  DeviceBuffer dx(xBytes), dw1(fromValues(w1, c.type)), db1(fromValues(b1, c.type)), dw2(fromValues(w2, c.type));
  DeviceBuffer db2(fromValues(b2, c.type)), gate(byteSize(c.type, c.batch * c.outChannels));
  const uint64_t workspaceBytes = squeezeExcitationWorkspaceBytes(p, c.layout, c.type);
  DeviceBuffer workspace(std::max<uint64_t>(workspaceBytes, 16));
  const void* xStart = static_cast<const char*>(dx.data()) + size_t(misalignBy) * elementBytes(c.type);
  ASSERT_TRUE(launchOverPoison(gate, [&] {
    return squeezeExcitation(p, xStart, dw1.data(), c.biases ? db1.data() : nullptr, dw2.data(),
                             c.biases ? db2.data() : nullptr, gate.data(), c.layout, c.type, workspace.data(),
                             workspaceBytes, nullptr);
  }));
  EXPECT_TRUE(closeValues(valuesOf(gate.download(), c.type), expected, toleranceFor(c.type)))
      << "gate [" << c.batch << ", " << c.outChannels << "]";
}

using A = cpu::Activation;
constexpr PoolLayout kLast = PoolLayout::kChannelsLast, kFirst = PoolLayout::kChannelsFirst;
constexpr ElementType kF32 = ElementType::kFloat32, kF16 = ElementType::kFloat16, kBF16 = ElementType::kBFloat16;

#if defined(KILN_CUDA_EMULATION)
constexpr int64_t kLargeMap = 48 * 48;  // the emulator runs a fiber per thread
#else
constexpr int64_t kLargeMap = 112 * 112;
#endif

const std::vector<Case> kCases{
    {"EfficientNet's first block at batch 1: 32 channels, split positions", 1, 32, kLargeMap, 8, 32, kLast, kF16,
     A::kSiLU, A::kSigmoid},
    {"EfficientNet's last block: 1152 -> 48 -> 1152 over 7x7, batch 2", 2, 1152, 49, 48, 1152, kLast, kF16, A::kSiLU,
     A::kSigmoid},
    {"MobileNetV3: Relu, HardSigmoid, 72 -> 24 -> 72 over 28x28, bf16", 3, 72, 28 * 28, 24, 72, kLast, kBF16, A::kRelu,
     A::kHardSigmoid, 1.0f / 6, 0.5f},
    {"13 channels (not whole vectors) -> 5 -> 13, fp32", 3, 13, 35, 5, 13, kLast, kF32, A::kSiLU, A::kSigmoid},
    {"channels-first 40 -> 10 -> 40 over 9x9, bf16", 2, 40, 81, 10, 40, kFirst, kBF16, A::kRelu, A::kHardSigmoid, 0.2f,
     0.5f},
    {"channels-first over a large map, fp32", 1, 24, kLargeMap / 4, 7, 24, kFirst, kF32, A::kNone, A::kSigmoid},
    {"24 -> 6 -> 20 output channels, no biases", 5, 24, 100, 6, 20, kLast, kBF16, A::kSiLU, A::kNone, 0, 0, false},
    {"19 images (blocks of eight, the last of three): 16 -> 4 -> 16 over 2x2, fp32", 19, 16, 4, 4, 16, kLast, kF32,
     A::kRelu, A::kSigmoid},
    {"MobileNetV3's widest: 960 -> 240 -> 960 over 7x7, fp16", 1, 960, 49, 240, 960, kLast, kF16, A::kRelu,
     A::kHardSigmoid, 1.0f / 6, 0.5f},
    {"odd rows: 40 -> 37 -> 33 over 5x5, 17 images, bf16", 17, 40, 25, 37, 33, kLast, kBF16, A::kSiLU, A::kSigmoid},
};

}  // namespace

TEST(CudaSqueezeExcitation, MatchesTheHostReference) {
  KILN_REQUIRE_GPU();
  for (const Case& c : kCases) check(c);
}

TEST(CudaSqueezeExcitation, MisalignedInputIsPooledFirst) {
  KILN_REQUIRE_GPU();
  check({"fp16 16 channels, x one element off 16 bytes", 2, 16, 300, 4, 16, kLast, kF16, A::kSiLU, A::kSigmoid}, 1);
}

TEST(CudaSqueezeExcitation, Refusals) {
  SqueezeExcitation p;
  p.batch = 1, p.channels = 32, p.spatial = 49, p.hidden = 8, p.outChannels = 32;
  EXPECT_TRUE(squeezeExcitationTakes(p));
  SqueezeExcitation wide = p;
  wide.channels = kSqueezeExcitationMaxValues;
  EXPECT_FALSE(squeezeExcitationTakes(wide));
  SqueezeExcitation noHidden = p;
  noHidden.hidden = 0;
  EXPECT_FALSE(squeezeExcitationTakes(noHidden));
  EXPECT_EQ(
      squeezeExcitation(wide, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, kLast, kF16, nullptr, 0, nullptr),
      cudaErrorInvalidValue);
  EXPECT_EQ(squeezeExcitation(p, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, kLast, ElementType::kInt8,
                              nullptr, 0, nullptr),
            cudaErrorInvalidValue);
}

TEST(CudaSqueezeExcitation, RefusesAWorkspaceTooSmall) {
  KILN_REQUIRE_GPU();
  SqueezeExcitation p;
  p.batch = 1, p.channels = 32, p.spatial = kLargeMap, p.hidden = 8, p.outChannels = 32;
  const uint64_t bytes = squeezeExcitationWorkspaceBytes(p, kLast, kF16);
  ASSERT_GT(bytes, 0u);
  DeviceBuffer x(byteSize(kF16, p.channels * p.spatial)), w(byteSize(kF16, 32 * 8)), gate(byteSize(kF16, 32));
  DeviceBuffer workspace(bytes);
  EXPECT_EQ(squeezeExcitation(p, x.data(), w.data(), nullptr, w.data(), nullptr, gate.data(), kLast, kF16,
                              workspace.data(), 16, nullptr),
            cudaErrorInvalidValue);
}

// Informational: the gate at EfficientNet-B0's and MobileNetV3's batch-128 dims (fp16 channels-
// last), next to a device copy of x's bytes (the pool's memory bound). In EfficientNet b128's
// per-layer profile on the H200 the 1152-channel 7x7 gates took 0.062 ms each while their 14.5 MB
// reads bound them near 0.004: this says how much of that is the products.
TEST(SqueezeExcitationTiming, EfficientNetAndMobileNetBatch128) {
  KILN_REQUIRE_GPU();
#if defined(KILN_CUDA_EMULATION)
  GTEST_SKIP() << "timing means nothing in the emulator";
#endif
  struct Dims {
    const char* name;
    int64_t channels, spatial, hidden;
  };
  for (const Dims& d : {Dims{"EfficientNet 32 -> 8 at 112x112", 32, 112 * 112, 8},
                        Dims{"EfficientNet 144 -> 6 at 56x56", 144, 56 * 56, 6},
                        Dims{"EfficientNet 480 -> 20 at 14x14", 480, 14 * 14, 20},
                        Dims{"EfficientNet 1152 -> 48 at 7x7", 1152, 7 * 7, 48},
                        Dims{"MobileNetV3 960 -> 240 at 7x7", 960, 7 * 7, 240}}) {
    SqueezeExcitation p;
    p.batch = 128, p.channels = d.channels, p.spatial = d.spatial, p.hidden = d.hidden, p.outChannels = d.channels;
    p.squeeze = A::kSiLU, p.excite = A::kSigmoid;
    const size_t xBytes = byteSize(kF16, p.batch * p.channels * p.spatial);
    DeviceBuffer dx(xBytes), copyTo(xBytes);
    dx.fill(0x3C);  // fp16 0x3C3C, about 1.06
    const DeviceBuffer dw1(fromValues(std::vector<double>(size_t(p.hidden * p.channels), 0.01), kF16));
    const DeviceBuffer dw2(fromValues(std::vector<double>(size_t(p.channels * p.hidden), 0.01), kF16));
    DeviceBuffer gate(byteSize(kF16, p.batch * p.outChannels));
    const uint64_t workspaceBytes = squeezeExcitationWorkspaceBytes(p, kLast, kF16);
    DeviceBuffer workspace(std::max<uint64_t>(workspaceBytes, 16));
    auto run = [&] {
      return squeezeExcitation(p, dx.data(), dw1.data(), nullptr, dw2.data(), nullptr, gate.data(), kLast, kF16,
                               workspace.data(), workspaceBytes, nullptr);
    };
    auto copy = [&] { return cudaMemcpyAsync(copyTo.data(), dx.data(), xBytes, cudaMemcpyDeviceToDevice); };
    const double ms = bestMilliseconds(run), copyMs = bestMilliseconds(copy);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::printf(
        "[ timing   ] squeeze-and-excitation %s, batch 128, fp16 NHWC: %.4f ms (%.0f GB/s of x); "
        "device copy of x: %.4f ms\n",
        d.name, ms, double(xBytes) / ms * 1e-6, copyMs);
  }
}
