// CPU and CUDA engines agree on kiln.Attention with cuDNN's SDPA tactics (cudnn.sdpa.<prec>.c<i>)
// forced, each engine config the builder lists: heads [B, H, L, D], the exporters' interleaved
// [B, L, H, D] read in place, BERT's packed QKV product read in place, odd sequence lengths (17,
// 77, 197), head dims 64 and 80, fp16 and bf16. The builder lists them beside the flash tactics and
// the two-product step and times them all; where cuDNN's single SDPA operation cannot take a layer
// (GPT-2's causal mask, a padding mask, a head dim off a multiple of 8) it lists one unavailable
// tactic saying why, and the layer runs another. Needs the GPU (and cuDNN 9.13.1 or later; where
// the library has no SDPA operation, the tests that force it skip saying so).
#include <kiln/shape.h>

#include "common/attention_models.h"
#include "common/test_models.h"
#include "gpu/backend_agreement.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace kiln;
using kiln::test::ModelBuilder;
using namespace kiln::test::onnx_types;

namespace {

constexpr const char* kSdpaPrefix = "cudnn.sdpa.";

struct SdpaCase {
  std::string name;
  int64_t batch, heads, lq, lk, d;
  bool interleaved = false;  // Q, K, V and the output stored [B, L, H, D]
  bool causal = false;       // GPT-2's additive causal mask [1, 1, L, L] (0 / -inf)
};

std::vector<int64_t> swapping(size_t a, size_t b) {
  std::vector<int64_t> perm{0, 1, 2, 3};
  std::swap(perm[a], perm[b]);
  return perm;
}

struct Model {
  std::string bytes;
  std::map<std::string, HostTensor> inputs;
};

// MatMul(Q, Kᵀ) / sqrt(D) (+ causal mask) -> Softmax -> MatMul(·, V), which the fusion makes one
// kiln.Attention (absorbing the Transposes around interleaved heads).
Model sdpaModel(const SdpaCase& c) {
  auto stored = [&](int64_t l) {
    return c.interleaved ? std::vector<int64_t>{c.batch, l, c.heads, c.d}
                         : std::vector<int64_t>{c.batch, c.heads, l, c.d};
  };
  ModelBuilder mb;
  mb.input("q", kFloat, stored(c.lq)).input("k", kFloat, stored(c.lk)).input("v", kFloat, stored(c.lk)).output("y");
  std::string q = "q", k = "k", v = "v";
  if (c.interleaved) {
    for (std::string* name : {&q, &k, &v}) {
      ModelBuilder::setInts(mb.node("Transpose", {*name}, {*name + "_heads"}, *name + "_heads"), "perm",
                            swapping(1, 2));
      *name += "_heads";
    }
  }
  ModelBuilder::setInts(mb.node("Transpose", {k}, {"kt"}, "k_transpose"), "perm", swapping(2, 3));
  mb.node("MatMul", {q, "kt"}, {"scores"}, "qk");
  mb.initializer("scale", HostTensor::scalar<float>(std::sqrt(float(c.d))));
  mb.node("Div", {"scores", "scale"}, {"scaled"}, "scale");
  std::string logits = "scaled";
  if (c.causal) {
    HostTensor mask(DataType::kFloat32, {1, 1, c.lq, c.lk});
    for (int64_t i = 0; i < c.lq; ++i)
      for (int64_t j = 0; j < c.lk; ++j)
        mask.data<float>()[i * c.lk + j] = j <= i ? 0.0f : -std::numeric_limits<float>::infinity();
    mb.initializer("causal_mask", mask);
    mb.node("Add", {"scaled", "causal_mask"}, {"masked"}, "mask_add");
    logits = "masked";
  }
  ModelBuilder::setInt(mb.node("Softmax", {logits}, {"p"}, "softmax"), "axis", -1);
  if (c.interleaved) {
    mb.node("MatMul", {"p", v}, {"y_heads"}, "pv");
    ModelBuilder::setInts(mb.node("Transpose", {"y_heads"}, {"y"}, "y_interleave"), "perm", swapping(1, 2));
  } else {
    mb.node("MatMul", {"p", v}, {"y"}, "pv");
  }
  const auto s = stored(c.lq), t = stored(c.lk);
  return {mb.bytes(),
          {{"q", test::randomFloats(s, 80, -1.0f, 1.0f)},
           {"k", test::randomFloats(t, 81, -1.0f, 1.0f)},
           {"v", test::randomFloats(t, 82)}}};
}

bool isSdpa(const TacticCandidate& candidate) { return candidate.tactic.rfind(kSdpaPrefix, 0) == 0; }
bool unavailable(const TacticCandidate& candidate) { return candidate.status.rfind("unavailable", 0) == 0; }

// The layer's cuDNN SDPA candidates that cuDNN took (engine configs), after the unforced build.
std::vector<std::string> listedSdpaTactics(const LayerSummary& layer) {
  std::vector<std::string> tactics;
  for (const TacticCandidate& candidate : layer.tacticCandidates)
    if (isSdpa(candidate) && !unavailable(candidate)) tactics.push_back(candidate.tactic);
  return tactics;
}

// Why no SDPA tactic was listed (the unavailable candidate's status), or "".
std::string sdpaRefusal(const LayerSummary& layer) {
  for (const TacticCandidate& candidate : layer.tacticCandidates)
    if (isSdpa(candidate) && unavailable(candidate)) return candidate.status;
  return "";
}

// Builds unforced (agreeing), then forces each cuDNN SDPA tactic listed and checks it agrees too.
// Skips (saying why) where this cuDNN has no SDPA operation.
void expectEverySdpaTacticAgrees(const std::string& bytes, const std::map<std::string, HostTensor>& inputs,
                                 Precision precision, bool packedBlock = false) {
  const auto first = test::expectBackendsAgree(bytes, inputs, precision);
  const LayerSummary* layer = first.gpuLayerOfType("kiln.Attention");
  ASSERT_NE(layer, nullptr) << "the attention was not fused, or not run on the CUDA backend";
  test::expectNoFailedTactics(first);
  const std::vector<std::string> tactics = listedSdpaTactics(*layer);
  if (tactics.empty()) {
    const std::string why = sdpaRefusal(*layer);
    if (why.find("no single SDPA operation") != std::string::npos) GTEST_SKIP() << why;
    FAIL() << "no cuDNN SDPA tactic listed: " << (why.empty() ? "none at all" : why);
  }
  for (const std::string& tactic : tactics) {
    SCOPED_TRACE("forced to " + tactic);
    test::AgreementOptions options;
    options.precision = precision;
    options.forcedTactics = {{layer->name, tactic}};
    const auto forced = test::expectBackendsAgree(bytes, inputs, options);
    const LayerSummary* ran = forced.gpuLayerOfType("kiln.Attention");
    ASSERT_NE(ran, nullptr);
    EXPECT_EQ(ran->tactic, tactic);
    if (packedBlock)
      for (const char* copy : {"Transpose", "Gather", "Split"})
        EXPECT_EQ(forced.gpuLayerOfType(copy), nullptr) << "a " << copy << " was left around the heads";
  }
}

const std::vector<SdpaCase> kCases = {
    {"heads, L 17, D 64", 2, 3, 17, 17, 64},
    {"heads, Lq 17 Lk 77, D 80", 1, 4, 17, 77, 80},
    {"interleaved heads (the exporters'), L 197, D 64", 2, 2, 197, 197, 64, true},
    {"interleaved heads, L 77, D 80", 3, 2, 77, 77, 80, true},
};

}  // namespace

TEST(AttentionSdpaAgreement, ForcedTacticsAgree) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (const SdpaCase& c : kCases)
    for (Precision precision : {Precision::kFP16, Precision::kBF16}) {
      SCOPED_TRACE(c.name + " " + toString(precision));
      const Model model = sdpaModel(c);
      expectEverySdpaTacticAgrees(model.bytes, model.inputs, precision);
      if (HasFatalFailure() || IsSkipped()) return;
    }
}

TEST(AttentionSdpaAgreement, PackedQkvBlocks) {
  KILN_REQUIRE_CUDA_BACKEND();
  // BERT's self-attention: Q, K, V from one merged product (qkv_packed), read in place.
  for (const test::AttentionBlockDims& d : {test::AttentionBlockDims{2, 17, 2, 64}, {1, 77, 2, 80}, {2, 197, 1, 64}})
    for (Precision precision : {Precision::kFP16, Precision::kBF16}) {
      SCOPED_TRACE("BERT self-attention B" + std::to_string(d.batch) + " L" + std::to_string(d.length) + " H" +
                   std::to_string(d.heads) + " D" + std::to_string(d.depth) + " " + toString(precision));
      const std::map<std::string, HostTensor> inputs{
          {"x", test::randomFloats({d.batch, d.length, d.width()}, 70, -1.0f, 1.0f)}};
      expectEverySdpaTacticAgrees(test::bertSelfAttention(d).bytes(), inputs, precision, true);
      if (HasFatalFailure() || IsSkipped()) return;
    }
}

// The builder lists the cuDNN configs beside the three flash tactics and the two-product step and
// times every one; fp32 layers get none.
TEST(AttentionSdpaAgreement, ListedAndTimedBesideFlash) {
  KILN_REQUIRE_CUDA_BACKEND();
  const Model model = sdpaModel(kCases[0]);
  const auto agreement = test::expectBackendsAgree(model.bytes, model.inputs, Precision::kFP16);
  const LayerSummary* layer = agreement.gpuLayerOfType("kiln.Attention");
  ASSERT_NE(layer, nullptr);
  int flash = 0, sdpa = 0, twoProducts = 0;
  for (const TacticCandidate& candidate : layer->tacticCandidates) {
    SCOPED_TRACE(candidate.tactic + " " + candidate.status);
    if (candidate.tactic.rfind("cuda.attention.flash.", 0) == 0) ++flash;
    if (candidate.tactic == "cuda.attention.fp16") ++twoProducts;
    if (isSdpa(candidate) && !unavailable(candidate)) {
      ++sdpa;
      EXPECT_EQ(candidate.tactic.rfind("cudnn.sdpa.fp16.c", 0), 0u);
      EXPECT_GT(candidate.milliseconds, 0.0) << "timed by the builder";
    }
  }
  EXPECT_EQ(flash, 3);
  EXPECT_EQ(twoProducts, 1);
  if (sdpa == 0) {
    const std::string why = sdpaRefusal(*layer);
    if (why.find("no single SDPA operation") != std::string::npos) GTEST_SKIP() << why;
    ADD_FAILURE() << "no cuDNN SDPA tactic listed: " << why;
  }
  const auto fp32 = test::expectBackendsAgree(model.bytes, model.inputs, Precision::kFP32);
  for (const TacticCandidate& candidate : fp32.gpuLayerOfType("kiln.Attention")->tacticCandidates)
    EXPECT_FALSE(isSdpa(candidate)) << "an fp32 layer offered " << candidate.tactic;
}

// GPT-2's causal block: cuDNN 9.19's single SDPA operation adds no mask, so its tactic is listed
// unavailable with that reason and the layer (flash or two products) agrees with the CPU; a head
// dim off a multiple of 8 is refused the same way.
TEST(AttentionSdpaAgreement, RefusalsListedWithTheReason) {
  KILN_REQUIRE_CUDA_BACKEND();
  const SdpaCase refused[] = {{"GPT-2 causal block, L 77", 2, 2, 77, 77, 64, true, true},
                              {"head dim 20", 2, 2, 17, 17, 20}};
  for (const SdpaCase& c : refused)
    for (Precision precision : {Precision::kFP16, Precision::kBF16}) {
      SCOPED_TRACE(c.name + " " + toString(precision));
      const Model model = sdpaModel(c);
      const auto agreement = test::expectBackendsAgree(model.bytes, model.inputs, precision);
      const LayerSummary* layer = agreement.gpuLayerOfType("kiln.Attention");
      ASSERT_NE(layer, nullptr);
      test::expectNoFailedTactics(agreement);
      EXPECT_TRUE(listedSdpaTactics(*layer).empty());
      const std::string why = sdpaRefusal(*layer);
      EXPECT_NE(why, "") << "no unavailable cudnn.sdpa tactic saying why";
      if (why.find("no single SDPA operation") == std::string::npos)
        EXPECT_NE(why.find(c.causal ? "mask" : "multiples of 8"), std::string::npos) << why;
    }
}
