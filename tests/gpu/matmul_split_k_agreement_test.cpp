// cuBLASLt's widened candidate list (backends/cuda/cublaslt_candidates.h) on the GPU: a product
// whose output launches far fewer CTAs than the GPU has SMs (BERT-base at batch 1: M = 128) lists
// split-K candidates ("cublaslt.gemm.fp16.h0.k8"); every candidate, forced, runs and agrees with
// the CPU at odd sizes in fp16, bf16, fp32 and tf32 with the bias + GELU and residual epilogues
// cuBLASLt takes; a plan replays a forced split-K candidate; optimisation level 4 adds algorithms
// enumerated by id ("cublaslt.gemm.fp16.a23.t20.s8.k1"), which agree too.
#include <kiln/shape.h>

#include "common/test_models.h"
#include "gpu/backend_agreement.h"

#include <gtest/gtest.h>

#include <iostream>
#include <regex>

using namespace kiln;
using kiln::test::ModelBuilder;
using namespace kiln::test::onnx_types;

namespace {

// The split count a cuBLASLt tactic id names (".k8", ".k4i"), 1 where it names none.
int splitKOf(const std::string& tactic) {
  static const std::regex split(R"(\.k([0-9]+)[io]?$)");
  std::smatch m;
  return std::regex_search(tactic, m, split) ? std::stoi(m[1].str()) : 1;
}

bool enumerated(const std::string& tactic) { return tactic.find(".a") != std::string::npos; }

// x [rows..., K] · W [K, N] (+ bias [N]) (+ residual [rows..., N]) -> activation: one
// kiln.FusedMatMul (or a MatMul without an epilogue) named "mm" by the fusion pass's origins.
struct Case {
  std::vector<int64_t> x;
  int64_t n;
  bool bias;
  std::string activation;  // "", "Relu", "GeluTanh"
  bool residual;           // added before the activation: cuBLASLt's C
  Precision precision;

  std::vector<int64_t> outDims() const {
    std::vector<int64_t> d = x;
    d.back() = n;
    return d;
  }
  std::string describe() const {
    return "x " + dimsToString(x) + " N " + std::to_string(n) + (bias ? " + bias" : "") +
           (residual ? " + residual" : "") + (activation.empty() ? "" : " -> " + activation) + " " +
           toString(precision);
  }
};

std::string modelOf(const Case& c) {
  const int64_t k = c.x.back();
  ModelBuilder mb;
  mb.input("x", kFloat, c.x).output("y");
  mb.initializer("w", test::randomFloats({k, c.n}, 61));
  std::string t = "p";
  mb.node("MatMul", {"x", "w"}, {t}, "mm");
  std::vector<std::string> steps;
  if (c.bias) steps.push_back("bias");
  if (c.residual) steps.push_back("residual");
  if (!c.activation.empty()) steps.push_back("activation");
  for (size_t i = 0; i < steps.size(); ++i) {
    const std::string out = i + 1 == steps.size() ? "y" : steps[i] + "_out";
    if (steps[i] == "bias") {
      mb.initializer("bias", test::randomFloats({c.n}, 62));
      mb.node("Add", {t, "bias"}, {out}, "bias_add");
    } else if (steps[i] == "residual") {
      mb.input("r", kFloat, c.outDims());
      mb.node("Add", {t, "r"}, {out}, "residual_add");
    } else if (c.activation == "GeluTanh") {
      ModelBuilder::setString(mb.node("Gelu", {t}, {out}, "gelu"), "approximate", "tanh");
    } else {
      mb.node(c.activation, {t}, {out}, "act");
    }
    t = out;
  }
  if (steps.empty()) mb.node("Identity", {t}, {"y"}, "identity");
  return mb.bytes();
}

std::map<std::string, HostTensor> inputsOf(const Case& c) {
  std::map<std::string, HostTensor> inputs{{"x", test::randomFloats(c.x, 60)}};
  if (c.residual) inputs["r"] = test::randomFloats(c.outDims(), 63);
  return inputs;
}

const LayerSummary* productLayer(const test::Agreement& agreement) {
  for (const char* type : {"kiln.FusedMatMul", "MatMul", "Gemm"})
    if (const LayerSummary* l = agreement.gpuLayerOfType(type)) return l;
  return nullptr;
}

test::AgreementOptions optionsOf(const Case& c, int optimizationLevel) {
  test::AgreementOptions options;
  options.precision = c.precision;
  options.configure = [optimizationLevel](BuilderConfig& config) { config.optimizationLevel = optimizationLevel; };
  return options;
}

// Builds `model`, then forces each candidate the build listed and checks it runs, is the one the
// plan names and agrees with the CPU. Returns the candidates' ids.
std::vector<std::string> expectEveryCandidateAgrees(const std::string& model,
                                                    const std::map<std::string, HostTensor>& inputs,
                                                    const test::AgreementOptions& options) {
  const auto first = test::expectBackendsAgree(model, inputs, options);
  const LayerSummary* layer = productLayer(first);
  if (!layer) {
    ADD_FAILURE() << "no product layer on the CUDA backend";
    return {};
  }
  test::expectNoFailedTactics(first);
  std::vector<std::string> ids;
  for (const TacticCandidate& candidate : layer->tacticCandidates) {
    SCOPED_TRACE("forced to " + candidate.tactic);
    EXPECT_EQ(candidate.tactic.rfind("cublaslt.gemm.", 0), 0u) << candidate.tactic;
    ids.push_back(candidate.tactic);
    test::AgreementOptions forcedOptions = options;
    forcedOptions.forcedTactics = {{layer->name, candidate.tactic}};
    const test::Agreement forcedRun = test::expectBackendsAgree(model, inputs, forcedOptions);
    const LayerSummary* forced = productLayer(forcedRun);  // points into forcedRun
    EXPECT_NE(forced, nullptr);
    if (forced) EXPECT_EQ(forced->tactic, candidate.tactic);
  }
  return ids;
}

std::vector<std::string> expectEveryCandidateAgrees(const Case& c, int optimizationLevel = 3) {
  return expectEveryCandidateAgrees(modelOf(c), inputsOf(c), optionsOf(c, optimizationLevel));
}

bool anySplit(const std::vector<std::string>& ids) {
  for (const std::string& id : ids)
    if (splitKOf(id) > 1) return true;
  return false;
}

std::string joined(const std::vector<std::string>& ids) {
  std::string s;
  for (const std::string& id : ids) s += (s.empty() ? "" : ", ") + id;
  return s;
}

// BERT-base's four products at batch 1 (M = 128), one at a time: each output is 6 to 24 tiles of
// 128x128 on a GPU of 100+ SMs, so each lists split-K candidates.
TEST(MatMulSplitK, SmallOutputsOfDeepProductsListSplitCandidates) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (const auto& [k, n] : {std::pair<int64_t, int64_t>{768, 2304}, {768, 768}, {768, 3072}, {3072, 768}}) {
    const Case c{{1, 128, k}, n, true, "", false, Precision::kFP16};
    SCOPED_TRACE(c.describe());
    const auto first = test::expectBackendsAgree(modelOf(c), inputsOf(c), c.precision);
    const LayerSummary* layer = productLayer(first);
    ASSERT_NE(layer, nullptr);
    test::expectNoFailedTactics(first);
    std::vector<std::string> ids;
    for (const TacticCandidate& candidate : layer->tacticCandidates) ids.push_back(candidate.tactic);
    EXPECT_TRUE(anySplit(ids)) << "no split-K candidate among " << joined(ids);
    std::cout << "[ info ] " << c.describe() << ": chose " << layer->tactic << " of " << joined(ids) << "\n";
  }
}

// Every candidate, split or not, forced: odd M, N and K, the epilogues cuBLASLt runs itself (bias
// with GELU or Relu, the residual as C), in each float precision.
TEST(MatMulSplitK, EveryCandidateAgreesAtOddSizesAndEpilogues) {
  KILN_REQUIRE_CUDA_BACKEND();
  const std::vector<Case> cases = {
      {{37, 1000}, 72, true, "GeluTanh", false, Precision::kFP16},
      {{2, 19, 776}, 40, true, "Relu", true, Precision::kBF16},
      {{45, 1003}, 24, true, "GeluTanh", true, Precision::kFP32},
      {{61, 1536}, 96, false, "", true, Precision::kTF32},
      {{1, 128, 3072}, 768, true, "", true, Precision::kFP16},  // BERT's FFN output with its residual
      {{33, 520}, 17, true, "GeluTanh", false, Precision::kBF16},
  };
  bool split = false;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.describe());
    const auto ids = expectEveryCandidateAgrees(c);
    split |= anySplit(ids);
    std::cout << "[ info ] " << c.describe() << ": " << joined(ids) << "\n";
  }
  EXPECT_TRUE(split) << "no case listed a split-K candidate";
}

// Gemm's own C under a split: an M×N C scaled by beta (cuBLASLt's C), and an M×1 C broadcast into
// the output first, onto which the split product accumulates in place (C is D, beta 1).
TEST(MatMulSplitK, GemmCAgreesUnderEveryCandidate) {
  KILN_REQUIRE_CUDA_BACKEND();
  const int64_t M = 40, K = 1200, N = 24;
  for (const std::vector<int64_t>& cDims : {std::vector<int64_t>{M, N}, std::vector<int64_t>{M, 1}})
    for (Precision precision : {Precision::kFP16, Precision::kFP32}) {
      SCOPED_TRACE("Gemm C " + dimsToString(cDims) + " " + toString(precision));
      ModelBuilder mb;
      mb.input("a", kFloat, {M, K}).input("c", kFloat, cDims).output("y");
      mb.initializer("b", test::randomFloats({N, K}, 71));
      auto& gemm = mb.node("Gemm", {"a", "b", "c"}, {"y"}, "gemm");
      ModelBuilder::setInt(gemm, "transB", 1);
      ModelBuilder::setFloat(gemm, "alpha", 0.75f);
      ModelBuilder::setFloat(gemm, "beta", 1.25f);
      const std::string model = mb.bytes();
      const std::map<std::string, HostTensor> inputs{{"a", test::randomFloats({M, K}, 70)},
                                                     {"c", test::randomFloats(cDims, 72)}};
      test::AgreementOptions options;
      options.precision = precision;
      const auto ids = expectEveryCandidateAgrees(model, inputs, options);
      EXPECT_TRUE(anySplit(ids)) << "no split-K candidate among " << joined(ids);
    }
}

// A plan made with a split-K candidate forced names it and, loaded (the agreement harness runs the
// serialized plan), replays it from its payload with the right answer.
TEST(MatMulSplitK, PlanReplaysAForcedSplitCandidate) {
  KILN_REQUIRE_CUDA_BACKEND();
  const Case c{{1, 128, 3072}, 768, true, "GeluTanh", false, Precision::kFP16};
  const auto first = test::expectBackendsAgree(modelOf(c), inputsOf(c), c.precision);
  const LayerSummary* layer = productLayer(first);
  ASSERT_NE(layer, nullptr);
  std::string chosen;
  for (const TacticCandidate& candidate : layer->tacticCandidates)
    if (splitKOf(candidate.tactic) > 1) chosen = candidate.tactic;  // the deepest split listed last
  ASSERT_FALSE(chosen.empty()) << "no split-K candidate";
  test::AgreementOptions options;
  options.precision = c.precision;
  options.forcedTactics = {{layer->name, chosen}};
  const auto forced = test::expectBackendsAgree(modelOf(c), inputsOf(c), options);
  ASSERT_NE(productLayer(forced), nullptr);
  EXPECT_EQ(productLayer(forced)->tactic, chosen);
  EXPECT_GT(splitKOf(productLayer(forced)->tactic), 1);
}

// Optimisation level 4 adds algorithms enumerated by id; each, forced at that level, agrees.
TEST(MatMulSplitK, LevelFourAddsEnumeratedAlgorithmsThatAgree) {
  KILN_REQUIRE_CUDA_BACKEND();
  bool anyEnumerated = false;
  for (const Case& c : {Case{{1, 128, 768}, 768, true, "GeluTanh", true, Precision::kFP16},
                        Case{{29, 300}, 56, true, "", false, Precision::kFP32}}) {
    SCOPED_TRACE(c.describe() + " at optimization level 4");
    const auto ids = expectEveryCandidateAgrees(c, 4);
    for (const std::string& id : ids) anyEnumerated |= enumerated(id);
    std::cout << "[ info ] " << c.describe() << " at level 4: " << joined(ids) << "\n";
  }
  EXPECT_TRUE(anyEnumerated) << "level 4 listed no enumerated algorithm";
}

}  // namespace
