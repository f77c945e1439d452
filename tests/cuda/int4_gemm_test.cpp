// The fused INT4 weight-only GEMM (kernels/cuda/quant/int4_gemm.h) against the CPU's int4 weights
// (kernels/cpu/quant/int4_weights.h) on random packed weights, scales, zero points, activations and
// epilogues (bias, residual before / after an activation): odd M and N (partial tiles), K off the
// tile and the group (short last group, a scalar A path at K % 8 != 0), group sizes off 32 (a
// chunk spanning groups), split K (M = 1), fp16 and bf16. Two references: the CPU's dequantized
// weights rounded once into the activations' type, as the kernel rounds them (tight: only fp32
// accumulation order and the output's rounding differ), and the CPU's fp32 int4MatMul (loose by
// the weights' rounding).
#include "cuda/cuda_test_util.h"
#include "cuda/device_buffer.h"
#include "cuda/gpu_test_support.h"

#include <kernels/cpu/common/numeric_types.h>
#include <kernels/cpu/quant/int4_weight_format.h>
#include <kernels/cpu/quant/int4_weights.h>
#include <kernels/cuda/quant/int4_gemm.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace kiln::kernels::cuda;
using namespace kiln::test;
namespace cpu = kiln::kernels;

namespace {

struct GemmCase {
  int64_t m, n, k, groupSize;
};

// The epilogues checked, in turn: none, a bias, bias + residual + Relu, bias + GeluTanh + residual.
enum class Epilogue { kNone, kBias, kResidualRelu, kGeluTanhResidual };
constexpr int kEpilogues = 4;

std::string caseName(const GemmCase& c, ElementType type, bool zeros, Epilogue e) {
  static const char* const names[] = {"", " bias", " bias, residual, relu", " bias, gelu tanh, residual"};
  return "M " + std::to_string(c.m) + " N " + std::to_string(c.n) + " K " + std::to_string(c.k) + " G " +
         std::to_string(c.groupSize) + " " + toString(type) + (zeros ? " zero points" : " symmetric") + names[int(e)];
}

// The epilogue on an exact sum, in double.
double finishReference(double v, Epilogue e, double bias, double residual) {
  if (e == Epilogue::kNone) return v;
  v += bias;
  if (e == Epilogue::kResidualRelu) return std::max(0.0, v + residual);
  if (e == Epilogue::kGeluTanhResidual)
    return 0.5 * v * (1 + std::tanh(0.79788456080286536 * (v + 0.044715 * v * v * v))) + residual;
  return v;
}

// Rounds to the activations' type and back, and gives its bits.
float roundTo(ElementType type, float v, uint16_t* bits = nullptr) {
  if (type == ElementType::kFloat16) {
    const cpu::Float16 h(v);
    if (bits) *bits = h.bits;
    return float(h);
  }
  const cpu::BFloat16 b(v);
  if (bits) *bits = b.bits;
  return float(b);
}

void checkCase(const GemmCase& c, ElementType type, bool asymmetric, Epilogue epilogue, uint32_t seed) {
  SCOPED_TRACE(caseName(c, type, asymmetric, epilogue));
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte(0, 255), zero(cpu::kInt4Min, cpu::kInt4Max);
  std::uniform_real_distribution<float> scale(0.01f, 0.05f), uniform(-1.0f, 1.0f);
  const int64_t groups = cpu::int4GroupCount(c.k, c.groupSize), columnBytes = groups * c.groupSize / 2;
  // Packed weights: random nibbles below K, zeros past it (the format's padding).
  std::vector<uint8_t> packed(size_t(c.n * columnBytes));
  for (int64_t n = 0; n < c.n; ++n)
    for (int64_t j = 0; j < columnBytes; ++j) {
      uint8_t b = uint8_t(byte(rng));
      if (2 * j >= c.k) b = 0;
      if (2 * j + 1 >= c.k) b &= 0x0F;
      packed[size_t(n * columnBytes + j)] = b;
    }
  std::vector<float> scales(size_t(c.n * groups)), bias(size_t(c.n));
  for (float& s : scales) s = scale(rng);
  for (float& b : bias) b = uniform(rng);
  std::vector<int8_t> zeros(size_t(c.n * groups));
  for (int8_t& z : zeros) z = int8_t(zero(rng));
  std::vector<uint16_t> aBits(size_t(c.m * c.k));
  std::vector<float> a(aBits.size());
  for (size_t i = 0; i < a.size(); ++i) a[i] = roundTo(type, uniform(rng), &aBits[i]);
  std::vector<uint16_t> residualBits(size_t(c.m * c.n));
  std::vector<float> residual(residualBits.size());
  for (size_t i = 0; i < residual.size(); ++i) residual[i] = roundTo(type, uniform(rng), &residualBits[i]);

  // The CPU's dequantized weights [N, K], and its fp32 product.
  cpu::Int4Weights cw;
  cw.packed = packed.data(), cw.scales = scales.data(), cw.zeros = asymmetric ? zeros.data() : nullptr;
  cw.k = c.k, cw.n = c.n, cw.groupSize = c.groupSize;
  std::vector<float> wt(size_t(c.n * c.k));
  cpu::dequantizeInt4Tile(cw, 0, c.k, wt.data());
  std::vector<float> cpuY(size_t(c.m * c.n)), scratch(size_t(cpu::int4MatMulWorkspaceFloats(cw)));
  cpu::int4MatMul(a.data(), c.m, cw, cpuY.data(), scratch.data());

  DeviceBuffer dA(aBits), dPacked(packed), dScales(scales), dZeros(zeros), dBias(bias), dResidual(residualBits);
  DeviceBuffer dY(size_t(c.m * c.n) * 2);
  const uint64_t workspaceBytes = int4GemmWorkspaceBytes(c.m, c.n, c.k);
  DeviceBuffer workspace(workspaceBytes);
  Int4WeightsView w;
  w.packed = dPacked.as<uint8_t>(), w.scales = dScales.as<float>();
  w.zeros = asymmetric ? dZeros.as<int8_t>() : nullptr;
  w.k = c.k, w.n = c.n, w.groupSize = c.groupSize;
  Int4GemmEpilogue e;
  if (epilogue != Epilogue::kNone) e.bias = dBias.as<float>();
  if (epilogue == Epilogue::kResidualRelu) e.residual = dResidual.data(), e.activation = cpu::Activation::kRelu;
  if (epilogue == Epilogue::kGeluTanhResidual) {
    e.residual = dResidual.data(), e.activation = cpu::Activation::kGeluTanh;
    e.residualBeforeActivation = false;
  }
  KILN_CUDA_OK(int4Gemm(dA.data(), c.m, w, e, dY.data(), type, workspace.data(), workspaceBytes, nullptr));
  const std::vector<uint16_t> y = dY.read<uint16_t>();

  const double step = type == ElementType::kFloat16 ? std::ldexp(1.0, -10) : std::ldexp(1.0, -7);  // an ulp at 1
  int64_t failures = 0;
  for (int64_t m = 0; m < c.m && failures < 10; ++m)
    for (int64_t n = 0; n < c.n && failures < 10; ++n) {
      double sum = 0, magnitude = 1;  // 1: the bias and residual, at most 1 each
      for (int64_t k = 0; k < c.k; ++k) {
        const double av = a[size_t(m * c.k + k)], wv = wt[size_t(n * c.k + k)];
        sum += av * double(roundTo(type, float(wv)));
        magnitude += std::fabs(av * wv);
      }
      const double b = bias[size_t(n)], r = residual[size_t(m * c.n + n)];
      const double exact = finishReference(sum, epilogue, b, r);
      const double roundingFree = finishReference(double(cpuY[size_t(m * c.n + n)]), epilogue, b, r);
      const double got = halfBitsValue(type, y[size_t(m * c.n + n)]);
      // One rounding of the output (half an ulp, an ulp allowed) plus fp32 accumulation in any order
      // (the activations' slopes are at most 1.13) and the activation's fp32 evaluation.
      const double tight = step * std::fabs(exact) + 1.2 * (1e-5 * magnitude + 1e-6) + 1e-6 * std::fabs(exact);
      // The weights' own rounding into the type on top.
      const double loose = tight + 1.2 * step * magnitude;
      if (!(std::fabs(got - exact) <= tight) || !(std::fabs(got - roundingFree) <= loose)) {
        ++failures;
        ADD_FAILURE() << "y[" << m << ", " << n << "] = " << got << ", the rounded weights give " << exact
                      << " (tolerance " << tight << "), the CPU's fp32 int4MatMul " << roundingFree << " (tolerance "
                      << loose << ")";
      }
    }
}

void checkCases(const std::vector<GemmCase>& cases, uint32_t seed) {
  for (const GemmCase& c : cases)
    for (ElementType type : {ElementType::kFloat16, ElementType::kBFloat16})
      for (bool asymmetric : {false, true}) {
        ++seed;
        checkCase(c, type, asymmetric, Epilogue(seed % kEpilogues), seed);
      }
}

// Shapes that exercise the edges: one element, partial tiles, K tails, odd groups, scalar paths.
TEST(Int4Gemm, EdgeShapesAgreeWithCpu) {
  KILN_REQUIRE_GPU();
  checkCases({{1, 1, 64, 32},       // one output
              {3, 7, 96, 32},       // K off the 64-wide tile
              {2, 9, 70, 32},       // K % 8 != 0 (A element by element), last group of 6
              {5, 33, 72, 16},      // groups of 16: a 32-weight chunk spans two
              {33, 65, 130, 10},    // groups of 10: W's columns off 16 bytes (W byte by byte)
              {64, 64, 64, 64},     // whole tiles
              {17, 40, 200, 128}},  // one short group; M between the block shapes
             11);
}

// Transformer-sized products: GPT-2's (K 768, N 768 / 2304 / 3072; K 3072, N 768) at batch-1 decode
// (M = 1: split K), a few rows and a sequence of 128, with an odd N.
TEST(Int4Gemm, ModelShapesAgreeWithCpu) {
  KILN_REQUIRE_GPU();
  checkCases({{1, 2304, 768, 128},
              {1, 768, 3072, 128},
              {3, 768, 768, 64},
              {17, 768, 768, 128},
              {128, 2305, 1024, 128},
              {128, 768, 3072, 32}},
             23);
}

// dequantizeInt4Weights (the dequantize + cuBLASLt tactic's W [K, N]) is the CPU's dequantization
// rounded once into the output type, bit for bit.
TEST(Int4Dequantize, MatchesCpuBitForBit) {
  KILN_REQUIRE_GPU();
  const std::vector<GemmCase> cases{{0, 40, 72, 32}, {0, 9, 70, 16}, {0, 65, 131, 10}, {0, 300, 768, 128}};
  uint32_t seed = 41;
  for (const GemmCase& c : cases)
    for (bool asymmetric : {false, true}) {
      std::mt19937 rng(++seed);
      const int64_t groups = cpu::int4GroupCount(c.k, c.groupSize), columnBytes = groups * c.groupSize / 2;
      std::vector<uint8_t> packed(size_t(c.n * columnBytes));
      for (uint8_t& b : packed) b = uint8_t(rng());
      std::vector<float> scales(size_t(c.n * groups));
      for (float& s : scales) s = 0.001f + float(rng() % 1000) * 1e-4f;
      std::vector<int8_t> zeros(scales.size());
      for (int8_t& z : zeros) z = int8_t(int(rng() % 16) - 8);
      cpu::Int4Weights cw;
      cw.packed = packed.data(), cw.scales = scales.data(), cw.zeros = asymmetric ? zeros.data() : nullptr;
      cw.k = c.k, cw.n = c.n, cw.groupSize = c.groupSize;
      std::vector<float> wt(size_t(c.n * c.k));
      cpu::dequantizeInt4Tile(cw, 0, c.k, wt.data());
      DeviceBuffer dPacked(packed), dScales(scales), dZeros(zeros);
      Int4WeightsView w;
      w.packed = dPacked.as<uint8_t>(), w.scales = dScales.as<float>();
      w.zeros = asymmetric ? dZeros.as<int8_t>() : nullptr;
      w.k = c.k, w.n = c.n, w.groupSize = c.groupSize;
      for (ElementType type : {ElementType::kFloat32, ElementType::kFloat16, ElementType::kBFloat16}) {
        SCOPED_TRACE(caseName(c, type, asymmetric, Epilogue::kNone));
        const size_t bytes = type == ElementType::kFloat32 ? 4 : 2;
        DeviceBuffer out(size_t(c.k * c.n) * bytes);
        KILN_CUDA_OK(dequantizeInt4Weights(w, out.data(), type, nullptr));
        const std::vector<uint8_t> got = out.download();
        int64_t mismatches = 0;
        for (int64_t k = 0; k < c.k; ++k)
          for (int64_t n = 0; n < c.n; ++n) {
            const float expected = wt[size_t(n * c.k + k)];
            uint32_t want = 0, have = 0;
            if (type == ElementType::kFloat32)
              std::memcpy(&want, &expected, 4);
            else {
              uint16_t bits = 0;
              roundTo(type, expected, &bits);
              want = bits;
            }
            std::memcpy(&have, &got[size_t(k * c.n + n) * bytes], bytes);
            if (want != have && ++mismatches <= 5)
              ADD_FAILURE() << "W[" << k << ", " << n << "]: bits " << have << ", the CPU's " << want;
          }
      }
    }
}

// The split rule and the workspace are functions of the shape alone (no GPU needed).
TEST(Int4Gemm, SplitsAndWorkspaceFollowTheShape) {
  EXPECT_EQ(int4GemmSplits(4096, 4096, 4096), 1);  // the grid is full: no split
  EXPECT_EQ(int4GemmWorkspaceBytes(4096, 4096, 4096), 0u);
  EXPECT_EQ(int4GemmSplits(1, 768, 64), 1);  // one K-tile cannot split
  const int64_t splits = int4GemmSplits(1, 768, 3072);
  EXPECT_GT(splits, 1);
  EXPECT_EQ(int4GemmWorkspaceBytes(1, 768, 3072), uint64_t(splits * 768) * sizeof(float));
  // Every split holds at least one K-tile of 64.
  for (int64_t k : {128, 200, 768, 3072, 12288}) EXPECT_LE(int4GemmSplits(1, 64, k) * 64, k + 63) << k;
}

TEST(Int4Gemm, RefusesWhatItCannotCompute) {
  Int4WeightsView w;
  w.k = 64, w.n = 8, w.groupSize = 32;
  uint16_t dummy = 0;
  EXPECT_EQ(int4Gemm(&dummy, 1, w, {}, &dummy, ElementType::kFloat32, nullptr, 0, nullptr), cudaErrorInvalidValue);
  w.groupSize = 3;
  EXPECT_EQ(int4Gemm(&dummy, 1, w, {}, &dummy, ElementType::kFloat16, nullptr, 0, nullptr), cudaErrorInvalidValue);
  w.groupSize = 32, w.k = 3072, w.n = 768;  // split K without a workspace
  EXPECT_EQ(int4Gemm(&dummy, 1, w, {}, &dummy, ElementType::kFloat16, nullptr, 0, nullptr), cudaErrorInvalidValue);
}

}  // namespace
