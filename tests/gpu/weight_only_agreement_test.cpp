// CPU and CUDA engines agree on INT4 weight-only products (kiln.WeightOnlyMatMul, made from
// onnxruntime's MatMulNBits): K not a multiple of the block (the last block short), symmetric and
// asymmetric zero points, batch dims, a bias, fp32 (the CPU's weights exactly), fp16 and bf16.
// Two tactics: cuda_weight_only.cpp dequantizes the packed weights into its workspace and multiplies
// with cuBLASLt; cuda_int4_fused_gemm.cpp (fp16 / bf16) dequantizes in its GEMM's prologue. Each is
// forced once, and the builder's pick agrees too.
#include "common/test_models.h"
#include "gpu/backend_agreement.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>

using namespace kiln;
using kiln::test::ModelBuilder;
using namespace kiln::test::onnx_types;

namespace {

constexpr int64_t kK = 72, kN = 40, kBlock = 32, kBlocks = 3;  // the last block holds 8 values
const std::string kDequantTactic = "cuda.matmul.int4_dequant_gemm.", kFusedTactic = "cuda.matmul.int4_fused_gemm.";

bool startsWith(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// MatMulNBits as ContribOperators.md packs it: B [N, blocks, block / 2] of unsigned nibbles, the
// low one first; zero points two blocks a byte.
ModelBuilder nbitsModel(bool asymmetric, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> code(0, 15);
  std::uniform_real_distribution<float> scale(0.01f, 0.05f);
  HostTensor b(DataType::kUInt8, {kN, kBlocks, kBlock / 2});
  std::fill(b.data<uint8_t>(), b.data<uint8_t>() + b.elementCount(), uint8_t(0));
  for (int64_t n = 0; n < kN; ++n)
    for (int64_t k = 0; k < kK; ++k)
      b.data<uint8_t>()[(n * kBlocks + k / kBlock) * (kBlock / 2) + (k % kBlock) / 2] |=
          uint8_t(code(rng) << (4 * (k % 2)));
  std::vector<float> scales(size_t(kN * kBlocks));
  for (float& s : scales) s = scale(rng);
  ModelBuilder mb;
  auto* contrib = mb.model().add_opset_import();
  contrib->set_domain("com.microsoft");
  contrib->set_version(1);
  mb.input("x", kFloat, {2, 5, kK}).output("y");
  mb.initializer("B", b).initializer("scales", HostTensor::fromVector<float>({kN, kBlocks}, scales));
  mb.initializer("bias", test::randomFloats({kN}, seed + 1));
  std::string zeroPoints;
  if (asymmetric) {
    zeroPoints = "zero_points";
    HostTensor z(DataType::kUInt8, {kN, (kBlocks + 1) / 2});
    for (int64_t i = 0; i < z.elementCount(); ++i) z.data<uint8_t>()[i] = uint8_t(code(rng) | (code(rng) << 4));
    mb.initializer(zeroPoints, z);
  }
  auto& node = mb.node("MatMulNBits", {"x", "B", "scales", zeroPoints, "", "bias"}, {"m"}, "nbits");
  node.set_domain("com.microsoft");
  ModelBuilder::setInt(node, "K", kK);
  ModelBuilder::setInt(node, "N", kN);
  ModelBuilder::setInt(node, "bits", 4);
  ModelBuilder::setInt(node, "block_size", kBlock);
  mb.node("Relu", {"m"}, {"y"}, "relu");
  return mb;
}

TEST(WeightOnlyAgreement, MatMulNBitsSymmetricAndAsymmetric) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (bool asymmetric : {false, true})
    for (Precision precision : {Precision::kFP32, Precision::kFP16}) {
      SCOPED_TRACE(std::string(asymmetric ? "asymmetric " : "symmetric ") + toString(precision));
      const test::Agreement a = test::expectBackendsAgree(nbitsModel(asymmetric, 71).bytes(),
                                                          {{"x", test::randomFloats({2, 5, kK}, 72)}}, precision);
      const LayerSummary* layer = a.gpuLayerOfType("kiln.WeightOnlyMatMul");
      ASSERT_NE(layer, nullptr) << "no int4 layer on the GPU";
      if (precision == Precision::kFP32)
        EXPECT_TRUE(startsWith(layer->tactic, kDequantTactic)) << layer->tactic;
      else
        EXPECT_TRUE(startsWith(layer->tactic, kDequantTactic) || startsWith(layer->tactic, kFusedTactic))
            << layer->tactic;
      test::expectNoFailedTactics(a);
    }
}

// fp16 / bf16 layers are offered both tactics, and each, forced, agrees with the CPU; fp32 layers
// keep the dequantize + cuBLASLt one alone.
TEST(WeightOnlyAgreement, EachTacticForcedAgrees) {
  KILN_REQUIRE_CUDA_BACKEND();
  const std::map<std::string, HostTensor> inputs{{"x", test::randomFloats({2, 5, kK}, 73)}};
  for (bool asymmetric : {false, true})
    for (Precision precision : {Precision::kFP16, Precision::kBF16}) {
      SCOPED_TRACE(std::string(asymmetric ? "asymmetric " : "symmetric ") + toString(precision));
      const std::string model = nbitsModel(asymmetric, 74).bytes();
      const test::Agreement a = test::expectBackendsAgree(model, inputs, precision);
      const LayerSummary* layer = a.gpuLayerOfType("kiln.WeightOnlyMatMul");
      ASSERT_NE(layer, nullptr) << "no int4 layer on the GPU";
      test::expectNoFailedTactics(a);
      const std::string tag = precision == Precision::kFP16 ? "fp16" : "bf16";
      for (const std::string& tactic : {kFusedTactic + tag, kDequantTactic + tag}) {
        SCOPED_TRACE("forced to " + tactic);
        bool offered = false;
        for (const TacticCandidate& candidate : layer->tacticCandidates)
          offered = offered || candidate.tactic == tactic;
        EXPECT_TRUE(offered) << tactic << " was not offered";
        test::AgreementOptions options;
        options.precision = precision;
        options.forcedTactics = {{layer->name, tactic}};
        const test::Agreement forced = test::expectBackendsAgree(model, inputs, options);
        ASSERT_NE(forced.gpuLayerOfType("kiln.WeightOnlyMatMul"), nullptr);
        EXPECT_EQ(forced.gpuLayerOfType("kiln.WeightOnlyMatMul")->tactic, tactic);
      }
    }
  const test::Agreement fp32 = test::expectBackendsAgree(nbitsModel(false, 75).bytes(), inputs, Precision::kFP32);
  const LayerSummary* layer = fp32.gpuLayerOfType("kiln.WeightOnlyMatMul");
  ASSERT_NE(layer, nullptr);
  for (const TacticCandidate& candidate : layer->tacticCandidates)
    EXPECT_FALSE(startsWith(candidate.tactic, kFusedTactic)) << "fp32 offered " << candidate.tactic;
}

}  // namespace
