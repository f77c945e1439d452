// CPU and CUDA engines agree on kiln.Attention, the layer the attention fusion makes of
// MatMul(Q, Kᵀ) · scale (+ mask) -> Softmax -> MatMul(·, V): K transposed by a Transpose the
// fusion absorbs or given transposed, with and without masks of several broadcast shapes (one
// row masked entirely to -inf), odd sizes, batch 1, fp32 (TF32 off), tf32 and fp16.
#include <kiln/shape.h>

#include "common/test_models.h"
#include "gpu/backend_agreement.h"

#include <gtest/gtest.h>

#include <cmath>
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
};

std::vector<int64_t> withTail(std::vector<int64_t> dims, int64_t a, int64_t b) {
  dims.push_back(a);
  dims.push_back(b);
  return dims;
}

void checkAttention(const AttentionCase& c, Precision precision, bool maskOneRow = false) {
  const std::vector<int64_t> q = withTail(c.batch, c.lq, c.d), v = withTail(c.batch, c.lk, c.dv);
  const std::vector<int64_t> k = c.kGivenTransposed ? withTail(c.batch, c.d, c.lk) : withTail(c.batch, c.lk, c.d);
  ModelBuilder mb;
  mb.input("q", kFloat, q).input("k", kFloat, k).input("v", kFloat, v).output("y");
  std::string kt = "k";
  if (!c.kGivenTransposed) {
    std::vector<int64_t> perm;
    for (size_t i = 0; i < c.batch.size(); ++i) perm.push_back(int64_t(i));
    perm.push_back(int64_t(c.batch.size()) + 1);
    perm.push_back(int64_t(c.batch.size()));
    ModelBuilder::setInts(mb.node("Transpose", {"k"}, {"kt"}, "k_transpose"), "perm", perm);
    kt = "kt";
  }
  mb.node("MatMul", {"q", kt}, {"scores"}, "qk");
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
  mb.node("MatMul", {"p", "v"}, {"y"}, "pv");
  auto agreement = test::expectBackendsAgree(mb.bytes(), inputs, precision);
  const LayerSummary* layer = agreement.gpuLayerOfType("kiln.Attention");
  ASSERT_NE(layer, nullptr) << "the attention was not fused, or not run on the CUDA backend";
  EXPECT_EQ(layer->tactic.rfind("cuda.attention.", 0), 0u) << layer->tactic;
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

}  // namespace
