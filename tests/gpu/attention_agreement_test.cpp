// CPU and CUDA engines agree on kiln.Attention, the layer the attention fusion makes of
// MatMul(Q, Kᵀ) · scale (+ mask) -> Softmax -> MatMul(·, V): K transposed by a Transpose the
// fusion absorbs or given transposed, with and without masks of several broadcast shapes (one
// row masked entirely to -inf), odd sizes, batch 1, fp32 (TF32 off), tf32 and fp16; and each
// flash-attention tactic forced at fp16, bf16 and tf32. DISABLED_TimeFlashAgainstTwoProducts (run with
// --gtest_also_run_disabled_tests) prints the builder's timings of every tactic at ViT-B/16, BERT
// and GPT-2 sizes.
#include <kiln/builder.h>
#include <kiln/error.h>
#include <kiln/onnx_importer.h>
#include <kiln/shape.h>

#include "common/test_models.h"
#include "gpu/backend_agreement.h"

#include <gtest/gtest.h>

#ifdef KILN_TESTS_HAVE_CUDA_RUNTIME
#include <cuda_runtime.h>
#endif

#include <cmath>
#include <cstdio>
#include <limits>

using namespace kiln;
using kiln::test::ModelBuilder;
using namespace kiln::test::onnx_types;

namespace {

struct AttentionCase {
  std::string name;
  std::vector<int64_t> batch;  // leading dims (batch, heads)
  int64_t lq, lk, d, dv;
  bool kGivenTransposed;      // K as [..., D, Lk] (no Transpose in the model)
  std::vector<int64_t> mask;  // empty: no mask
  bool divide = true;         // scale as Div by sqrt(D) (else Mul by a constant)
  // Q, K, V and the output stored [..., L, H, D] with Transposes to and from [..., H, L, D] in
  // the model, as exporters write heads; the fusion absorbs them (read through strides).
  bool interleaved = false;
};

std::vector<int64_t> withTail(std::vector<int64_t> dims, int64_t a, int64_t b) {
  dims.push_back(a);
  dims.push_back(b);
  return dims;
}

struct AttentionModel {
  std::string bytes;
  std::map<std::string, HostTensor> inputs;
};

// The identity permutation of `rank` dims with dims a and b swapped.
std::vector<int64_t> swapping(size_t rank, size_t a, size_t b) {
  std::vector<int64_t> perm;
  for (size_t i = 0; i < rank; ++i) perm.push_back(int64_t(i == a ? b : i == b ? a : i));
  return perm;
}

// MatMul(Q, Kᵀ) · scale (+ mask) -> Softmax -> MatMul(·, V), which the fusion makes one layer.
AttentionModel attentionModel(const AttentionCase& c, bool maskOneRow = false) {
  const size_t rank = c.batch.size() + 2;
  // Interleaved: stored with the row dim and the last batch dim swapped.
  auto stored = [&](std::vector<int64_t> dims) {
    if (c.interleaved) std::swap(dims[rank - 3], dims[rank - 2]);
    return dims;
  };
  const std::vector<int64_t> q = stored(withTail(c.batch, c.lq, c.d)), v = stored(withTail(c.batch, c.lk, c.dv));
  const std::vector<int64_t> k = c.interleaved          ? stored(withTail(c.batch, c.lk, c.d))
                                 : c.kGivenTransposed ? withTail(c.batch, c.d, c.lk)
                                                      : withTail(c.batch, c.lk, c.d);
  ModelBuilder mb;
  mb.input("q", kFloat, q).input("k", kFloat, k).input("v", kFloat, v).output("y");
  std::string qIn = "q", kt = "k", vIn = "v";
  if (c.interleaved) {
    ModelBuilder::setInts(mb.node("Transpose", {"q"}, {"q_heads"}, "q_heads"), "perm", swapping(rank, rank - 3, rank - 2));
    ModelBuilder::setInts(mb.node("Transpose", {"v"}, {"v_heads"}, "v_heads"), "perm", swapping(rank, rank - 3, rank - 2));
    qIn = "q_heads";
    vIn = "v_heads";
    if (c.kGivenTransposed) {  // [..., Lk, H, D] -> [..., H, D, Lk] in one Transpose, as BERT's export
      std::vector<int64_t> perm = swapping(rank, rank - 3, rank - 2);
      perm[rank - 2] = int64_t(rank - 1);
      perm[rank - 1] = int64_t(rank - 3);
      ModelBuilder::setInts(mb.node("Transpose", {"k"}, {"kt"}, "k_heads_transposed"), "perm", perm);
    } else {  // two Transposes, as PyTorch's SDPA export
      ModelBuilder::setInts(mb.node("Transpose", {"k"}, {"k_heads"}, "k_heads"), "perm", swapping(rank, rank - 3, rank - 2));
      ModelBuilder::setInts(mb.node("Transpose", {"k_heads"}, {"kt"}, "k_transpose"), "perm", swapping(rank, rank - 2, rank - 1));
    }
    kt = "kt";
  } else if (!c.kGivenTransposed) {
    ModelBuilder::setInts(mb.node("Transpose", {"k"}, {"kt"}, "k_transpose"), "perm", swapping(rank, rank - 2, rank - 1));
    kt = "kt";
  }
  mb.node("MatMul", {qIn, kt}, {"scores"}, "qk");
  if (c.divide) {
    mb.initializer("scale", HostTensor::scalar<float>(std::sqrt(float(c.d))));
    mb.node("Div", {"scores", "scale"}, {"scaled"}, "scale");
  } else {
    mb.initializer("scale", HostTensor::scalar<float>(0.3f));
    mb.node("Mul", {"scores", "scale"}, {"scaled"}, "scale");
  }
  std::string logits = "scaled";
  std::map<std::string, HostTensor> inputs{{"q", test::randomFloats(q, 90, -2.0f, 2.0f)},
                                           {"k", test::randomFloats(k, 91, -2.0f, 2.0f)},
                                           {"v", test::randomFloats(v, 92)}};
  if (!c.mask.empty()) {
    mb.input("mask", kFloat, c.mask);
    mb.node("Add", {"scaled", "mask"}, {"masked"}, "mask_add");
    logits = "masked";
    HostTensor mask = test::randomFloats(c.mask, 93, -3.0f, 0.0f);
    if (maskOneRow) {  // the mask's first row hidden entirely: the CPU gives zeros there
      const int64_t lk = c.mask.back();
      for (int64_t j = 0; j < lk; ++j) mask.data<float>()[j] = -std::numeric_limits<float>::infinity();
    }
    inputs["mask"] = mask;
  }
  ModelBuilder::setInt(mb.node("Softmax", {logits}, {"p"}, "softmax"), "axis", -1);
  if (c.interleaved) {
    mb.node("MatMul", {"p", vIn}, {"y_heads"}, "pv");
    ModelBuilder::setInts(mb.node("Transpose", {"y_heads"}, {"y"}, "y_interleave"), "perm", swapping(rank, rank - 3, rank - 2));
  } else {
    mb.node("MatMul", {"p", vIn}, {"y"}, "pv");
  }
  return {mb.bytes(), inputs};
}

void checkAttention(const AttentionCase& c, Precision precision, bool maskOneRow = false) {
  const AttentionModel model = attentionModel(c, maskOneRow);
  auto agreement = test::expectBackendsAgree(model.bytes, model.inputs, precision);
  const LayerSummary* layer = agreement.gpuLayerOfType("kiln.Attention");
  ASSERT_NE(layer, nullptr) << "the attention was not fused, or not run on the CUDA backend";
  EXPECT_TRUE(layer->tactic.rfind("cuda.attention.", 0) == 0 || layer->tactic.rfind("cudnn.sdpa.", 0) == 0)
      << layer->tactic;
  if (c.interleaved) EXPECT_EQ(agreement.gpuLayerOfType("Transpose"), nullptr) << "a Transpose around heads was left";
  test::expectNoFailedTactics(agreement);
}

const std::vector<AttentionCase> kCases = {
    {"heads, no mask", {2, 3}, 7, 9, 16, 8, false, {}},
    {"batch 1, K given transposed", {1, 4}, 5, 11, 8, 12, true, {}},
    {"mask [Lq, Lk]", {2, 2}, 6, 10, 16, 16, false, {6, 10}},
    {"padding mask [B, 1, 1, Lk]", {3, 2}, 9, 13, 8, 8, false, {3, 1, 1, 13}},
    {"full mask [B, H, Lq, Lk], scale by Mul", {2, 2}, 4, 4, 32, 24, true, {2, 2, 4, 4}, false},
    {"rank 3", {5}, 17, 33, 24, 40, false, {1, 33}},
    {"rank 2", {}, 12, 20, 16, 7, false, {12, 20}},
    {"long keys", {1, 2}, 3, 1500, 64, 64, false, {1, 1, 1, 1500}},
    {"interleaved heads, padding mask (BERT's export)", {2, 3}, 7, 9, 16, 8, true, {2, 1, 1, 9}, true, true},
    {"interleaved heads, K by two Transposes (SDPA's export)", {1, 4}, 5, 11, 8, 12, false, {}, false, true},
    {"interleaved rank 3 (ViT's export)", {6}, 17, 33, 24, 40, false, {}, true, true},
    {"interleaved rank 3, 197 keys (ViT's at batch 1: key splits)", {4}, 197, 197, 64, 64, false, {}, true, true},
};

TEST(AttentionAgreement, ShapesMasksAndPrecisions) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (const AttentionCase& c : kCases)
    for (Precision precision : {Precision::kFP32, Precision::kTF32, Precision::kFP16}) {
      SCOPED_TRACE(c.name + " " + toString(precision));
      checkAttention(c, precision);
    }
}

TEST(AttentionAgreement, BFloat16) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (size_t i : {0u, 2u}) {
    SCOPED_TRACE(kCases[i].name);
    checkAttention(kCases[i], Precision::kBF16);
  }
}

TEST(AttentionAgreement, RowMaskedEntirelyGivesZeros) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (Precision precision : {Precision::kFP32, Precision::kFP16}) {
    SCOPED_TRACE(toString(precision));
    checkAttention({"mask [Lq, Lk]", {2, 2}, 6, 10, 16, 16, false, {6, 10}}, precision, true);
  }
}

bool isFlash(const std::string& tactic) { return tactic.rfind("cuda.attention.flash.", 0) == 0; }

// The first GPU's multiprocessors (0 unknown).
int multiprocessors() {
#ifdef KILN_TESTS_HAVE_CUDA_RUNTIME
  cudaDeviceProp properties{};
  return cudaGetDeviceProperties(&properties, 0) == cudaSuccess ? properties.multiProcessorCount : 0;
#else
  return 0;
#endif
}

// Each fused tactic, forced, agrees with the CPU on every case (a row masked entirely where the
// mask has rows); tf32 layers get the TF32 kernel's three, fp32 layers (exact products) none. Where
// the keys span more than one 64-key tile (and these few batch-heads leave the GPU idle), the 64-
// and 32-row tactics that split the keys over blocks are offered too.
TEST(AttentionAgreement, FlashTacticsForcedAgree) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (const AttentionCase& c : kCases)
    for (Precision precision : {Precision::kFP16, Precision::kBF16, Precision::kTF32}) {
      SCOPED_TRACE(c.name + " " + toString(precision));
      const bool maskOneRow = !c.mask.empty() && c.mask.size() >= 2 && c.mask[c.mask.size() - 2] > 1;
      const AttentionModel model = attentionModel(c, maskOneRow);
      const auto first = test::expectBackendsAgree(model.bytes, model.inputs, precision);
      const LayerSummary* layer = first.gpuLayerOfType("kiln.Attention");
      ASSERT_NE(layer, nullptr) << "the attention was not fused, or not run on the CUDA backend";
      int flashTactics = 0, splitTactics = 0;
      for (const TacticCandidate& candidate : layer->tacticCandidates) {
        if (!isFlash(candidate.tactic)) continue;
        ++flashTactics;
        splitTactics += candidate.tactic.find(".split.") != std::string::npos;
        SCOPED_TRACE("forced to " + candidate.tactic);
        test::AgreementOptions options;
        options.precision = precision;
        options.forcedTactics = {{layer->name, candidate.tactic}};
        const auto forced = test::expectBackendsAgree(model.bytes, model.inputs, options);
        ASSERT_NE(forced.gpuLayerOfType("kiln.Attention"), nullptr);
        EXPECT_EQ(forced.gpuLayerOfType("kiln.Attention")->tactic, candidate.tactic);
      }
      EXPECT_EQ(flashTactics - splitTactics, 3) << "the 32-, 64- and 128-row flash tactics are offered";
      // 64 SMs or more (the H200's 132): these cases' few blocks leave most of them idle.
      const int expectedSplits = c.lk > 64 && multiprocessors() >= 64 ? 2 : 0;
      if (c.lk <= 64 || multiprocessors() >= 64)
        EXPECT_EQ(splitTactics, expectedSplits) << "the key-split tactics are offered where keys span tiles";
    }
  const AttentionModel model = attentionModel(kCases[0]);
  const auto agreement = test::expectBackendsAgree(model.bytes, model.inputs, Precision::kFP32);
  const LayerSummary* layer = agreement.gpuLayerOfType("kiln.Attention");
  ASSERT_NE(layer, nullptr);
  for (const TacticCandidate& candidate : layer->tacticCandidates)
    EXPECT_FALSE(isFlash(candidate.tactic)) << "fp32 offered " << candidate.tactic;
}

// The builder's timings (median of its timed runs, cudaEvents) of every attention tactic at fp16,
// bf16 and tf32, printed; the CPU is not run. ViT-B/16 at batch 128, BERT-base at batch 32 with a padding mask,
// GPT-2 small at batch 8 with a causal mask.
TEST(AttentionAgreement, DISABLED_TimeFlashAgainstTwoProducts) {
  KILN_REQUIRE_CUDA_BACKEND();
  const std::vector<AttentionCase> sizes = {
      {"ViT-B/16 B=128 H=12 L=197 D=64", {128, 12}, 197, 197, 64, 64, false, {}},
      {"ViT-B/16 sizes, K given transposed (rows off 16 bytes)", {128, 12}, 197, 197, 64, 64, true, {}},
      {"BERT-base B=32 H=12 L=128 D=64, mask [B,1,1,L]", {32, 12}, 128, 128, 64, 64, false, {32, 1, 1, 128}},
      {"BERT-base B=32 H=12 L=128 D=64, K given transposed", {32, 12}, 128, 128, 64, 64, true, {}},
      {"GPT-2 B=8 H=12 L=1024 D=64, mask [1,1,L,L]", {8, 12}, 1024, 1024, 64, 64, true, {1, 1, 1024, 1024}},
      {"ViT-B/16 B=1 H=12 L=197 D=64 (key splits)", {1, 12}, 197, 197, 64, 64, false, {}},
      {"BERT-base B=1 H=12 L=128 D=64, mask [B,1,1,L] (key splits)", {1, 12}, 128, 128, 64, 64, false, {1, 1, 1, 128}},
      {"D=128 B=16 H=16 L=512", {16, 16}, 512, 512, 128, 128, false, {}},
  };
  for (const AttentionCase& c : sizes)
    for (Precision precision : {Precision::kFP16, Precision::kBF16, Precision::kTF32}) {
      const AttentionModel model = attentionModel(c);
      BuilderConfig config;
      config.backend = BackendKind::kCuda;
      config.allowFP16 = precision == Precision::kFP16;
      config.allowBF16 = precision == Precision::kBF16;
      config.allowTF32 = precision == Precision::kTF32;
      BuildResult build;
      try {
        build = Builder().build(*OnnxImporter().importBytes(model.bytes), config);
      } catch (const Error& e) {
        ADD_FAILURE() << c.name << ": building for CUDA failed: " << e.what();
        continue;
      }
      for (const LayerSummary& layer : build.report.layers) {
        if (layer.type != "kiln.Attention") continue;
        std::printf("%s, %s: chose %s\n", c.name.c_str(), toString(precision), layer.tactic.c_str());
        for (const TacticCandidate& candidate : layer.tacticCandidates)
          std::printf("  %-36s %8.4f ms  (%s)\n", candidate.tactic.c_str(), candidate.milliseconds,
                      candidate.status.c_str());
      }
    }
}

}  // namespace
