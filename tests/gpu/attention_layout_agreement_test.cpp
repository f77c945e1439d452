// CPU and CUDA engines agree on whole attention blocks whose heads the passes
// read in place: BERT's self-attention (Q, K, V from one merged product,
// qkv_packed) and torch's nn.MultiheadAttention export (its sequence-first
// slicing and output projection folded away too), at odd sizes, every
// precision, and with each attention tactic forced (the flash kernels read the
// packed tensor through strides, the two-product step re-lays it out with one
// copy).
#include "common/attention_models.h"
#include "gpu/backend_agreement.h"

#include <gtest/gtest.h>

using namespace kiln;

namespace {

const std::vector<test::AttentionBlockDims> kDims = {{2, 7, 3, 16}, {1, 17, 2, 24}, {3, 33, 4, 8}};

struct Block {
  const char* name;
  test::ModelBuilder (*build)(const test::AttentionBlockDims&);
};
const Block kBlocks[] = {{"BERT self-attention", test::bertSelfAttention},
                         {"nn.MultiheadAttention export", test::multiheadAttentionExport}};

// Unit-scale activations, as the LayerNorm in front of a real block gives: bf16's 8-bit mantissa
// through three products and a softmax stays within its NMSE bound (at [-2, 2] it reached 1.02e-4).
std::map<std::string, HostTensor> inputsOf(const test::AttentionBlockDims& d) {
  return {{"x", test::randomFloats({d.batch, d.length, d.width()}, 70, -1.0f, 1.0f)}};
}

void expectPackedOnGpu(const test::Agreement& agreement) {
  const LayerSummary* attention = agreement.gpuLayerOfType("kiln.Attention");
  ASSERT_NE(attention, nullptr) << "the attention was not fused, or not run on the CUDA backend";
  for (const char* copy : {"Transpose", "Gather", "Split"})
    EXPECT_EQ(agreement.gpuLayerOfType(copy), nullptr) << "a " << copy << " was left around the heads";
  test::expectNoFailedTactics(agreement);
}

}  // namespace

TEST(AttentionLayoutAgreement, PackedBlocksEveryPrecision) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (const Block& block : kBlocks)
    for (const test::AttentionBlockDims& d : kDims)
      for (Precision precision : {Precision::kFP32, Precision::kTF32, Precision::kFP16, Precision::kBF16}) {
        SCOPED_TRACE(std::string(block.name) + " B" + std::to_string(d.batch) + " L" + std::to_string(d.length) + " H" +
                     std::to_string(d.heads) + " D" + std::to_string(d.depth) + " " + toString(precision));
        expectPackedOnGpu(test::expectBackendsAgree(block.build(d).bytes(), inputsOf(d), precision));
      }
}

TEST(AttentionLayoutAgreement, EveryAttentionTacticForced) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (const Block& block : kBlocks)
    for (const test::AttentionBlockDims& d : kDims) {
      const std::string bytes = block.build(d).bytes();
      const auto first = test::expectBackendsAgree(bytes, inputsOf(d), Precision::kFP16);
      const LayerSummary* layer = first.gpuLayerOfType("kiln.Attention");
      ASSERT_NE(layer, nullptr);
      int tactics = 0;
      for (const TacticCandidate& candidate : layer->tacticCandidates) {
        if (candidate.tactic.rfind("cuda.attention.", 0) != 0) continue;
        ++tactics;
        SCOPED_TRACE(std::string(block.name) + " L" + std::to_string(d.length) + " forced to " + candidate.tactic);
        test::AgreementOptions options;
        options.precision = Precision::kFP16;
        options.forcedTactics = {{layer->name, candidate.tactic}};
        const auto forced = test::expectBackendsAgree(bytes, inputsOf(d), options);
        ASSERT_NE(forced.gpuLayerOfType("kiln.Attention"), nullptr);
        EXPECT_EQ(forced.gpuLayerOfType("kiln.Attention")->tactic, candidate.tactic);
        expectPackedOnGpu(forced);
      }
      EXPECT_GE(tactics, 4) << "three flash tactics and the two-product step";
    }
}
