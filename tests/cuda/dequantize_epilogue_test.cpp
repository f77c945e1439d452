// The dequantizing epilogue of the cuBLASLt int8 form (kernels/cuda/quant/quantized_gemm.h) with an
// int8 residual and its scale: random int32 sums (never all zeros), per-channel multipliers, bias,
// the residual float(q) * scale added before or after ReLU; float32 / float16 / int8 outputs;
// channels-last with 8-channel vectors (24 channels), element by element (13 channels, odd rows),
// and channels-first (output and residual [n, channels, plane]). The arithmetic is the CPU's, one
// rounding a step, so every output matches bit for bit.
#include "cuda/cuda_test_util.h"
#include "cuda/device_buffer.h"
#include "cuda/gpu_test_support.h"

#include <kernels/cpu/common/numeric_types.h>
#include <kernels/cuda/quant/quant_math.h>
#include <kernels/cuda/quant/quantized_gemm.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace kiln::kernels::cuda;
using namespace kiln::test;
namespace cpu = kiln::kernels;

namespace {

struct EpilogueCase {
  int64_t images, plane, channels;
  bool channelsFirst, residualBefore;
  ElementType yType;
};

size_t bytesOf(ElementType t) { return t == ElementType::kFloat32 ? 4 : t == ElementType::kFloat16 ? 2 : 1; }

void checkEpilogue(const EpilogueCase& c, uint32_t seed) {
  SCOPED_TRACE(std::to_string(c.images) + " images x " + std::to_string(c.plane) + " pixels x " +
               std::to_string(c.channels) + " channels" + (c.channelsFirst ? ", channels-first" : "") +
               (c.residualBefore ? ", residual before" : ", residual after") + " -> " + toString(c.yType));
  std::mt19937 rng(seed);
  const int64_t rows = c.images * c.plane, count = rows * c.channels;
  std::vector<int32_t> sums(static_cast<size_t>(count));
  std::vector<int8_t> residual(static_cast<size_t>(count));
  std::vector<float> multipliers(size_t(c.channels)), bias(size_t(c.channels));
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f), spread(0.5f, 2.0f);
  for (int32_t& s : sums) s = int32_t(rng() % 40001) - 20000;
  for (int8_t& r : residual) r = int8_t(int(rng() % 256) - 128);
  for (float& m : multipliers) m = spread(rng) / 20000;
  for (float& b : bias) b = unit(rng);
  const float residualScale = 1.0f / 101, outputScale = 1.0f / 50;

  DeviceBuffer dSums(sums), dResidual(residual), dM(multipliers), dB(bias);
  DeviceBuffer dY(size_t(count) * bytesOf(c.yType));
  DequantizeEpilogue e;
  e.sums = dSums.data(), e.integerSums = true;
  e.rows = rows, e.channels = c.channels, e.plane = c.plane;
  e.channelsFirst = e.residualChannelsFirst = c.channelsFirst;
  e.multipliers = dM.as<float>(), e.bias = dB.as<float>();
  e.residual = dResidual.data(), e.residualType = ElementType::kInt8, e.residualScale = residualScale;
  e.residualBeforeActivation = c.residualBefore;
  e.activation = cpu::Activation::kRelu;
  e.outputScale = outputScale;
  ASSERT_EQ(dequantizeEpilogue(e, dY.data(), c.yType, nullptr), cudaSuccess);
  const std::vector<uint8_t> y = dY.download();

  int64_t mismatches = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t ch = 0; ch < c.channels; ++ch) {
      const int64_t n = r / c.plane, p = r % c.plane;
      const int64_t at = c.channelsFirst ? (n * c.channels + ch) * c.plane + p : r * c.channels + ch;
      // The CPU's epilogue: one rounding a step.
      volatile float v = float(sums[size_t(r * c.channels + ch)]);
      v = v * multipliers[size_t(ch)];
      v = v + bias[size_t(ch)];
      volatile float z = float(residual[size_t(at)]);
      z = z * residualScale;
      if (c.residualBefore) v = v + z;
      v = std::max(0.0f, float(v));
      if (!c.residualBefore) v = v + z;
      std::vector<uint8_t> want(bytesOf(c.yType));
      if (c.yType == ElementType::kInt8) {
        want[0] = uint8_t(quantizeToInteger<int8_t>(v, outputScale, int8_t(0)));
      } else if (c.yType == ElementType::kFloat16) {
        const float f = v;
        const cpu::Float16 h(f);
        std::memcpy(want.data(), &h.bits, 2);
      } else {
        const float f = v;
        std::memcpy(want.data(), &f, 4);
      }
      if (std::memcmp(&y[size_t(at) * want.size()], want.data(), want.size()) != 0 && ++mismatches <= 5)
        ADD_FAILURE() << "row " << r << " channel " << ch << " differs from the host's epilogue";
    }
  EXPECT_EQ(mismatches, 0);
}

}  // namespace

TEST(DequantizeEpilogue, Int8ResidualMatchesHostBitForBit) {
  KILN_REQUIRE_GPU();
  uint32_t seed = 700;
  for (ElementType y : {ElementType::kFloat32, ElementType::kFloat16, ElementType::kInt8})
    for (bool before : {true, false}) {
      checkEpilogue({3, 7, 24, false, before, y}, ++seed);   // 8-channel vectors
      checkEpilogue({1, 37, 13, false, before, y}, ++seed);  // element by element
      checkEpilogue({2, 15, 24, true, before, y}, ++seed);   // channels-first
    }
}
