// CPU and CUDA engines agree on squeeze-and-excitation blocks, which the CUDA build fuses into one
// kiln.SqueezeExcitation layer (FuseSqueezeExcitation; cuda_squeeze_excitation.cpp): the gate of
// EfficientNet (SiLU, Sigmoid) and of MobileNetV3 (Relu, HardSigmoid) after a 1x1 expansion (the
// map channels-last in fp16 / bf16) or on a graph input (channels-first), odd channel counts, no
// biases, a large map at batch 1 (its positions split over blocks), every precision; the CPU build
// runs the unfused layers.
#include "common/test_models.h"
#include "gpu/backend_agreement.h"

#include <gtest/gtest.h>

using namespace kiln;
using kiln::test::ModelBuilder;
using namespace kiln::test::onnx_types;

namespace {

struct Block {
  std::string name;
  std::vector<int64_t> x;  // [N, C, H, W] of the block's input
  int64_t squeezed;
  bool efficientNet;  // SiLU and Sigmoid; else Relu and HardSigmoid
  bool expandFirst;   // a 1x1 expansion (C -> 2C) makes the map the gate reads
  bool biases = true;
};

ModelBuilder seBlock(const Block& b) {
  ModelBuilder mb;
  mb.input("x", kFloat, b.x).output("y");
  uint32_t seed = 500;
  auto conv = [&](const std::string& in, const std::string& out, std::vector<int64_t> w, bool bias) {
    mb.initializer(out + "_w", test::randomFloats(w, seed++, -0.5f, 0.5f));
    std::vector<std::string> inputs{in, out + "_w"};
    if (bias) {
      mb.initializer(out + "_b", test::randomFloats({w[0]}, seed++));
      inputs.push_back(out + "_b");
    }
    mb.node("Conv", inputs, {out}, out);
  };
  int64_t c = b.x[1];
  std::string map = "x";
  if (b.expandFirst) {
    conv("x", "expand", {2 * c, c, 1, 1}, true);
    c *= 2;
    map = "expand";
  }
  mb.node("GlobalAveragePool", {map}, {"se_pool"}, "se_pool");
  conv("se_pool", "se_reduce", {b.squeezed, c, 1, 1}, b.biases);
  if (b.efficientNet) {
    mb.node("Sigmoid", {"se_reduce"}, {"se_reduce_sig"}, "se_reduce_sig");
    mb.node("Mul", {"se_reduce", "se_reduce_sig"}, {"se_act"}, "se_silu");
  } else {
    mb.node("Relu", {"se_reduce"}, {"se_act"}, "se_relu");
  }
  conv("se_act", "se_expand", {c, b.squeezed, 1, 1}, b.biases);
  mb.node(b.efficientNet ? "Sigmoid" : "HardSigmoid", {"se_expand"}, {"se_gate"}, "se_gate");
  mb.node("Mul", {map, "se_gate"}, {"y"}, "se_scale");
  return mb;
}

const std::vector<Block> kBlocks{
    {"EfficientNet gate after an expansion, 24 -> 48 -> 12", {2, 24, 14, 14}, 12, true, true},
    {"MobileNetV3 gate on a graph input, odd channels 21 -> 5", {3, 21, 9, 11}, 5, false, false},
    {"EfficientNet gate at batch 1 over 56x56 (split positions)", {1, 16, 56, 56}, 8, true, true},
    {"no biases, 40 -> 80 -> 20", {2, 40, 7, 7}, 20, true, true, false},
};

}  // namespace

TEST(SqueezeExcitationAgreement, FusedBlocksEveryPrecision) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (const Block& b : kBlocks)
    for (Precision precision : {Precision::kFP32, Precision::kTF32, Precision::kFP16, Precision::kBF16}) {
      SCOPED_TRACE(b.name + " " + toString(precision));
      const auto agreement =
          test::expectBackendsAgree(seBlock(b).bytes(), {{"x", test::randomFloats(b.x, 11, 0.1f, 2.0f)}}, precision);
      test::expectNoFailedTactics(agreement);
      const LayerSummary* fused = agreement.gpuLayerOfType("kiln.SqueezeExcitation");
      ASSERT_NE(fused, nullptr) << "the block was not fused, or its layer did not run on the CUDA backend";
      EXPECT_EQ(fused->tactic.rfind("cuda.squeeze_excitation.", 0), 0u) << fused->tactic;
      EXPECT_EQ(agreement.gpuLayerOfType("GlobalAveragePool"), nullptr) << "the pool still runs alone";
    }
}
