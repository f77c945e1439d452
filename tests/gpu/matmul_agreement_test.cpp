// CPU and CUDA engines agree on MatMul (2-D to 5-D, broadcast batch dims, 1-D operands), Gemm
// (transposes, alpha, beta, every C shape) and the kiln.FusedMatMul layers the fusion passes make
// (bias, each epilogue activation, residual before or after it), at odd sizes and batch 1, in
// fp32 (TF32 off), tf32 and fp16; every cuBLASLt heuristic candidate the builder times must run,
// and each of them, forced, must agree too.
#include <kiln/shape.h>

#include "common/test_models.h"
#include "gpu/backend_agreement.h"

#include <gtest/gtest.h>

using namespace kiln;
using kiln::test::ModelBuilder;
using namespace kiln::test::onnx_types;

namespace {

const std::vector<Precision> kPrecisions = {Precision::kFP32, Precision::kTF32, Precision::kFP16};

std::string traceOf(const std::string& what, Precision precision) { return what + " " + toString(precision); }

// The product layer ran on the GPU with a cuBLASLt tactic.
void expectOnCublas(const test::Agreement& agreement, const std::string& type) {
  const LayerSummary* layer = agreement.gpuLayerOfType(type);
  ASSERT_NE(layer, nullptr) << "no " << type << " layer on the CUDA backend";
  EXPECT_EQ(layer->tactic.rfind("cublaslt.gemm.", 0), 0u) << layer->tactic;
  test::expectNoFailedTactics(agreement);
}

struct MatMulCase {
  std::vector<int64_t> a, b;
};

std::string matMulModel(const MatMulCase& c, bool bIsWeight) {
  ModelBuilder mb;
  mb.input("a", kFloat, c.a).output("y");
  if (bIsWeight)
    mb.initializer("b", test::randomFloats(c.b, 11));
  else
    mb.input("b", kFloat, c.b);
  mb.node("MatMul", {"a", "b"}, {"y"}, "mm");
  return mb.bytes();
}

std::map<std::string, HostTensor> matMulInputs(const MatMulCase& c, bool bIsWeight) {
  std::map<std::string, HostTensor> inputs{{"a", test::randomFloats(c.a, 10)}};
  if (!bIsWeight) inputs["b"] = test::randomFloats(c.b, 11);
  return inputs;
}

// Batch dims folded into M, strided batches (broadcast strides of 0 on either side), batch dims
// looped over on the host, 1-D operands on either side and both.
const std::vector<MatMulCase> kMatMulCases = {
    {{3, 5}, {5, 7}},
    {{1, 17, 33}, {33, 19}},
    {{2, 3, 5}, {2, 5, 7}},
    {{4, 1, 9}, {1, 9, 6}},
    {{3, 9}, {4, 9, 6}},
    {{2, 1, 3, 5}, {4, 5, 7}},
    {{1, 4, 3, 5}, {2, 1, 5, 7}},
    {{2, 3, 4, 6, 5}, {3, 1, 5, 7}},
    {{5}, {5, 7}},
    {{2, 3, 5}, {5}},
    {{5}, {5}},
    {{3, 1, 5}, {5}},
    {{2, 5}, {3, 5, 1}},
    {{1, 1, 64}, {64, 40}},
    {{6, 40, 24}, {6, 24, 1}},
};

TEST(MatMulAgreement, ShapesBroadcastingAndOneDimOperands) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (const MatMulCase& c : kMatMulCases)
    for (Precision precision : kPrecisions)
      for (bool bIsWeight : {false, true}) {
        SCOPED_TRACE(traceOf(
            "MatMul " + dimsToString(c.a) + " x " + dimsToString(c.b) + (bIsWeight ? " (B a weight)" : ""), precision));
        auto agreement = test::expectBackendsAgree(matMulModel(c, bIsWeight), matMulInputs(c, bIsWeight), precision);
        expectOnCublas(agreement, "MatMul");
      }
}

TEST(MatMulAgreement, BFloat16) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (const MatMulCase& c : {MatMulCase{{7, 24}, {24, 9}}, MatMulCase{{2, 3, 16}, {2, 16, 5}}}) {
    SCOPED_TRACE("MatMul " + dimsToString(c.a) + " x " + dimsToString(c.b));
    auto agreement = test::expectBackendsAgree(matMulModel(c, true), matMulInputs(c, true), Precision::kBF16);
    expectOnCublas(agreement, "MatMul");
  }
}

// Each heuristic candidate, forced, gives the right answer (not only the fastest).
TEST(MatMulAgreement, EveryHeuristicCandidateAgrees) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (const auto& [c, precision] : {std::pair{MatMulCase{{2, 3, 5}, {5, 7}}, Precision::kFP32},
                                     std::pair{MatMulCase{{1, 17, 33}, {33, 19}}, Precision::kFP16},
                                     std::pair{MatMulCase{{4, 64, 48}, {4, 48, 80}}, Precision::kTF32},
                                     std::pair{MatMulCase{{96, 128}, {128, 72}}, Precision::kFP16}}) {
    const std::string model = matMulModel(c, true);
    const auto inputs = matMulInputs(c, true);
    const auto first = test::expectBackendsAgree(model, inputs, precision);
    const LayerSummary* mm = first.gpuLayerOfType("MatMul");
    ASSERT_NE(mm, nullptr);
    EXPECT_FALSE(mm->tacticCandidates.empty());
    for (const TacticCandidate& candidate : mm->tacticCandidates) {
      SCOPED_TRACE(
          traceOf(dimsToString(c.a) + " x " + dimsToString(c.b) + " forced to " + candidate.tactic, precision));
      test::AgreementOptions options;
      options.precision = precision;
      options.forcedTactics = {{"mm", candidate.tactic}};
      const auto forced = test::expectBackendsAgree(model, inputs, options);
      ASSERT_NE(forced.gpuLayerOfType("MatMul"), nullptr);
      EXPECT_EQ(forced.gpuLayerOfType("MatMul")->tactic, candidate.tactic);
    }
  }
}

// ---- Gemm ----

struct GemmC {
  const char* name;
  std::vector<int64_t> dims;  // empty with present = true: a scalar
  bool present, weight;
};

TEST(GemmAgreement, TransposesAlphaBetaAndEveryCShape) {
  KILN_REQUIRE_CUDA_BACKEND();
  const int64_t M = 7, K = 13, N = 9;
  const std::vector<GemmC> cs = {{"no C", {}, false, false},
                                 {"C [N] weight", {N}, true, true},
                                 {"C [1,N] input", {1, N}, true, false},
                                 {"C [M,1] input", {M, 1}, true, false},
                                 {"C [M,N] input", {M, N}, true, false},
                                 {"C [M,N] weight", {M, N}, true, true},
                                 {"C scalar weight", {}, true, true},
                                 {"C [1] input", {1}, true, false}};
  const std::vector<std::pair<float, float>> scales = {{1.0f, 1.0f}, {0.5f, 2.0f}, {1.5f, 0.0f}};
  for (int transA = 0; transA < 2; ++transA)
    for (int transB = 0; transB < 2; ++transB)
      for (const GemmC& c : cs)
        for (const auto& [alpha, beta] : scales)
          for (Precision precision : {Precision::kFP32, Precision::kFP16}) {
            SCOPED_TRACE(traceOf(std::string("Gemm transA ") + std::to_string(transA) + " transB " +
                                     std::to_string(transB) + " " + c.name + " alpha " + std::to_string(alpha) +
                                     " beta " + std::to_string(beta),
                                 precision));
            const std::vector<int64_t> aDims = transA ? std::vector<int64_t>{K, M} : std::vector<int64_t>{M, K};
            const std::vector<int64_t> bDims = transB ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N};
            ModelBuilder mb;
            mb.input("a", kFloat, aDims).output("y");
            mb.initializer("b", test::randomFloats(bDims, 21));
            std::map<std::string, HostTensor> inputs{{"a", test::randomFloats(aDims, 20)}};
            std::vector<std::string> gemmInputs{"a", "b"};
            if (c.present) {
              HostTensor value = c.dims.empty() ? HostTensor::scalar<float>(0.75f) : test::randomFloats(c.dims, 22);
              if (c.weight)
                mb.initializer("c", value);
              else
                mb.input("c", kFloat, c.dims), inputs["c"] = value;
              gemmInputs.push_back("c");
            }
            auto& gemm = mb.node("Gemm", gemmInputs, {"y"}, "gemm");
            ModelBuilder::setInt(gemm, "transA", transA);
            ModelBuilder::setInt(gemm, "transB", transB);
            ModelBuilder::setFloat(gemm, "alpha", alpha);
            ModelBuilder::setFloat(gemm, "beta", beta);
            auto agreement = test::expectBackendsAgree(mb.bytes(), inputs, precision);
            expectOnCublas(agreement, "Gemm");
          }
}

TEST(GemmAgreement, TensorFloat32AndBatchOne) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (const auto& [m, k, n] : {std::tuple<int64_t, int64_t, int64_t>{1, 64, 33}, {31, 17, 1}, {64, 96, 48}}) {
    SCOPED_TRACE("Gemm " + std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n));
    ModelBuilder mb;
    mb.input("a", kFloat, {m, k}).output("y");
    mb.initializer("b", test::randomFloats({n, k}, 31)).initializer("c", test::randomFloats({n}, 32));
    ModelBuilder::setInt(mb.node("Gemm", {"a", "b", "c"}, {"y"}, "gemm"), "transB", 1);
    auto agreement = test::expectBackendsAgree(mb.bytes(), {{"a", test::randomFloats({m, k}, 30)}}, Precision::kTF32);
    expectOnCublas(agreement, "Gemm");
  }
}

// ---- kiln.FusedMatMul ----

// The activation layers after `x`, writing `y` (the fusion pass's patterns).
void addActivation(ModelBuilder& mb, const std::string& activation, const std::string& x, const std::string& y) {
  if (activation == "SiLU") {
    mb.node("Sigmoid", {x}, {x + "_sigmoid"}, "sigmoid");
    mb.node("Mul", {x, x + "_sigmoid"}, {y}, "silu");
  } else if (activation == "Clip") {
    mb.initializer("clip_lo", HostTensor::scalar<float>(-0.4f)).initializer("clip_hi", HostTensor::scalar<float>(0.6f));
    mb.node("Clip", {x, "clip_lo", "clip_hi"}, {y}, "clip");
  } else if (activation == "GeluTanh") {
    ModelBuilder::setString(mb.node("Gelu", {x}, {y}, "gelu"), "approximate", "tanh");
  } else {
    auto& node = mb.node(activation, {x}, {y}, "act");
    if (activation == "LeakyRelu") ModelBuilder::setFloat(node, "alpha", 0.15f);
    if (activation == "HardSigmoid") {
      ModelBuilder::setFloat(node, "alpha", 0.3f);
      ModelBuilder::setFloat(node, "beta", 0.45f);
    }
  }
}

enum class Residual { kNone, kBefore, kAfter };

const char* residualName(Residual r) {
  return r == Residual::kNone ? "no residual" : r == Residual::kBefore ? "residual before" : "residual after";
}

// [rows..., K] x W [K, N] (+ bias [N]) -> activation, with a residual Add before or after it.
struct FusedCase {
  std::vector<int64_t> x;
  int64_t n;
  bool bias;
  std::string activation;  // "" for none
  Residual residual;
  bool gemmBase = false;  // Gemm(transB = 1) instead of MatMul (x must be 2-D)
};

std::string fusedModel(const FusedCase& c, std::vector<int64_t>& outDims) {
  const int64_t k = c.x.back();
  outDims = c.x;
  outDims.back() = c.n;
  ModelBuilder mb;
  mb.input("x", kFloat, c.x).output("y");
  if (c.residual != Residual::kNone) mb.input("r", kFloat, outDims);
  std::string t = "mm";
  if (c.gemmBase) {
    mb.initializer("w", test::randomFloats({c.n, k}, 41));
    ModelBuilder::setInt(mb.node("Gemm", {"x", "w"}, {t}, "mm"), "transB", 1);
  } else {
    mb.initializer("w", test::randomFloats({k, c.n}, 41));
    mb.node("MatMul", {"x", "w"}, {t}, "mm");
  }
  // The epilogue's layers in order, the last one writing "y".
  std::vector<std::string> steps;
  if (c.bias) steps.push_back("bias");
  if (c.residual == Residual::kBefore) steps.push_back("residual");
  if (!c.activation.empty()) steps.push_back("activation");
  if (c.residual == Residual::kAfter) steps.push_back("residual");
  for (size_t i = 0; i < steps.size(); ++i) {
    const std::string out = i + 1 == steps.size() ? "y" : steps[i] + "_out";
    if (steps[i] == "bias") {
      mb.initializer("bias", test::randomFloats({c.n}, 42));
      mb.node("Add", {t, "bias"}, {out}, "bias_add");
    } else if (steps[i] == "residual") {
      mb.node("Add", {t, "r"}, {out}, "residual_add");
    } else {
      addActivation(mb, c.activation, t, out);
    }
    t = out;
  }
  if (steps.empty()) mb.node("Identity", {t}, {"y"}, "identity");
  return mb.bytes();
}

void checkFused(const FusedCase& c, Precision precision) {
  std::vector<int64_t> outDims;
  const std::string model = fusedModel(c, outDims);
  std::map<std::string, HostTensor> inputs{{"x", test::randomFloats(c.x, 40)}};
  if (c.residual != Residual::kNone) inputs["r"] = test::randomFloats(outDims, 43);
  auto agreement = test::expectBackendsAgree(model, inputs, precision);
  const bool fusable = c.bias || !c.activation.empty() || c.residual != Residual::kNone;
  if (fusable) {
    expectOnCublas(agreement, "kiln.FusedMatMul");
    const LayerSummary* fusedLayer = agreement.gpuLayerOfType("kiln.FusedMatMul");
    if (fusedLayer) EXPECT_GE(fusedLayer->origins.size(), 2u) << "the epilogue was not fused into the product";
  }
}

const std::vector<std::string> kActivations = {"",          "Relu", "Sigmoid", "Tanh",     "LeakyRelu", "HardSigmoid",
                                               "HardSwish", "Clip", "Gelu",    "GeluTanh", "SiLU"};

TEST(FusedMatMulAgreement, BiasAndEveryActivation) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (const std::vector<int64_t>& x : {std::vector<int64_t>{7, 24}, std::vector<int64_t>{2, 5, 24}})
    for (const std::string& activation : kActivations)
      for (Precision precision : {Precision::kFP32, Precision::kFP16}) {
        SCOPED_TRACE(traceOf("MatMul " + dimsToString(x) + " + bias + " + (activation.empty() ? "nothing" : activation),
                             precision));
        checkFused({x, 10, true, activation, Residual::kNone}, precision);
      }
}

TEST(FusedMatMulAgreement, ResidualBeforeAndAfterTheActivation) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (const std::vector<int64_t>& x : {std::vector<int64_t>{9, 16}, std::vector<int64_t>{1, 3, 5, 16}})
    for (const std::string& activation : {"", "Relu", "GeluTanh", "Sigmoid", "SiLU", "Clip"})
      for (Residual residual : {Residual::kBefore, Residual::kAfter})
        for (bool bias : {true, false})
          for (Precision precision : kPrecisions) {
            if (activation.empty() && residual == Residual::kAfter) continue;  // the same as before
            SCOPED_TRACE(traceOf("MatMul " + dimsToString(x) + (bias ? " + bias" : "") + " + " +
                                     (activation.empty() ? "nothing" : activation) + ", " + residualName(residual),
                                 precision));
            checkFused({x, 11, bias, activation, residual}, precision);
          }
}

TEST(FusedMatMulAgreement, ActivationWithoutBias) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (const std::string& activation : {"Relu", "GeluTanh", "Gelu", "Tanh"})
    for (Precision precision : kPrecisions) {
      SCOPED_TRACE(traceOf("MatMul + " + activation, precision));
      checkFused({{2, 6, 20}, 13, false, activation, Residual::kNone}, precision);
    }
}

TEST(FusedMatMulAgreement, GemmBase) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (const std::string& activation : {"", "Relu", "GeluTanh", "HardSwish"})
    for (Residual residual : {Residual::kNone, Residual::kBefore, Residual::kAfter})
      for (Precision precision : kPrecisions) {
        if (activation.empty() && residual == Residual::kAfter) continue;
        SCOPED_TRACE(traceOf("Gemm + bias + " + (activation.empty() ? std::string("nothing") : activation) + ", " +
                                 residualName(residual),
                             precision));
        checkFused({{5, 18}, 12, true, activation, residual, true}, precision);
      }
}

// Gemm's own C (an M×N input, scaled) followed by an activation: C is cuBLASLt's C, the
// activation its epilogue; with alpha and a [M,1] C the C is broadcast into the output first.
TEST(FusedMatMulAgreement, GemmWithItsOwnC) {
  KILN_REQUIRE_CUDA_BACKEND();
  const int64_t M = 6, K = 10, N = 7;
  for (const std::vector<int64_t>& cDims : {std::vector<int64_t>{M, N}, std::vector<int64_t>{M, 1}})
    for (const char* activation : {"Relu", "Sigmoid"})
      for (Precision precision : {Precision::kFP32, Precision::kFP16}) {
        SCOPED_TRACE(traceOf("Gemm C " + dimsToString(cDims) + " + " + activation, precision));
        ModelBuilder mb;
        mb.input("a", kFloat, {M, K}).input("c", kFloat, cDims).output("y");
        mb.initializer("b", test::randomFloats({K, N}, 51));
        auto& gemm = mb.node("Gemm", {"a", "b", "c"}, {"g"}, "gemm");
        ModelBuilder::setFloat(gemm, "alpha", 0.75f);
        ModelBuilder::setFloat(gemm, "beta", 1.25f);
        mb.node(activation, {"g"}, {"y"}, "act");
        auto agreement = test::expectBackendsAgree(
            mb.bytes(), {{"a", test::randomFloats({M, K}, 50)}, {"c", test::randomFloats(cDims, 52)}}, precision);
        expectOnCublas(agreement, "kiln.FusedMatMul");
      }
}

TEST(FusedMatMulAgreement, EveryHeuristicCandidateAgrees) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (const auto& [c, precision] :
       {std::pair{FusedCase{{33, 48}, 40, true, "Relu", Residual::kBefore}, Precision::kFP16},
        std::pair{FusedCase{{2, 17, 24}, 24, true, "GeluTanh", Residual::kNone}, Precision::kFP32}}) {
    std::vector<int64_t> outDims;
    const std::string model = fusedModel(c, outDims);
    std::map<std::string, HostTensor> inputs{{"x", test::randomFloats(c.x, 40)}};
    if (c.residual != Residual::kNone) inputs["r"] = test::randomFloats(outDims, 43);
    const auto first = test::expectBackendsAgree(model, inputs, precision);
    const LayerSummary* layer = first.gpuLayerOfType("kiln.FusedMatMul");
    ASSERT_NE(layer, nullptr);
    for (const TacticCandidate& candidate : layer->tacticCandidates) {
      SCOPED_TRACE(traceOf(c.activation + " forced to " + candidate.tactic, precision));
      test::AgreementOptions options;
      options.precision = precision;
      options.forcedTactics = {{layer->name, candidate.tactic}};
      test::expectBackendsAgree(model, inputs, options);
    }
  }
}

}  // namespace
