// The CUDA backend's kiln.Attention planning (backends/cuda/ops/attention_plan.h) run with
// cuBLASLt's arithmetic emulated, against a direct computation: K transposed or not, masks of
// every broadcast shape (a row masked entirely to -inf gives zeros), and chunks of batch-heads
// at budgets that fit one head, some, or all.
#include "backends/cuda/ops/attention_plan.h"
#include "cuda_plans/library_emulation.h"

#include <kiln/error.h>
#include <kiln/shape.h>

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace kiln;
using namespace kiln::cuda;
using kiln::test::broadcastAt;
using kiln::test::countOf;

namespace {

constexpr float kScale = 0.37f;

// Softmax of each row in place: NaN where a row has only -inf, as the GPU kernel gives.
void softmaxRows(float* s, int64_t rows, int64_t n) {
  for (int64_t r = 0; r < rows; ++r) {
    float* x = s + r * n;
    float max = -std::numeric_limits<float>::infinity();
    for (int64_t j = 0; j < n; ++j) max = std::max(max, x[j]);
    double sum = 0;
    for (int64_t j = 0; j < n; ++j) sum += std::exp(double(x[j]) - max);
    for (int64_t j = 0; j < n; ++j) x[j] = float(std::exp(double(x[j]) - max) / sum);
  }
}

struct Case {
  std::vector<int64_t> batch;
  int64_t lq, lk, d, dv;
  bool kTransposed;
  std::vector<int64_t> mask;  // empty: none
  bool maskFirstRow = false;  // the mask's first row all -inf
};

void checkCase(const Case& c, uint64_t budget) {
  SCOPED_TRACE("batch " + dimsToString(c.batch) + " Lq " + std::to_string(c.lq) + " Lk " + std::to_string(c.lk) +
               " mask " + (c.mask.empty() ? "none" : dimsToString(c.mask)) + " budget " + std::to_string(budget));
  Layer layer;
  layer.name = "attention";
  layer.domain = "kiln";
  layer.opType = "Attention";
  layer.attributes["k_transposed"] = int64_t(c.kTransposed);
  layer.attributes["scale"] = kScale;
  const auto with = [&](int64_t a, int64_t b) {
    std::vector<int64_t> dims = c.batch;
    dims.push_back(a);
    dims.push_back(b);
    return dims;
  };
  const auto q = with(c.lq, c.d), k = c.kTransposed ? with(c.d, c.lk) : with(c.lk, c.d), v = with(c.lk, c.dv);
  const bool hasMask = !c.mask.empty();
  const AttentionPlan p = attentionPlanOf(layer, DataType::kFloat32, q, k, v, hasMask ? &c.mask : nullptr, budget);
  ASSERT_EQ(p.chunk * p.chunks, countOf(c.batch));
  const auto Q = test::randomValues(countOf(q), 1), K = test::randomValues(countOf(k), 2);
  const auto V = test::randomValues(countOf(v), 3);
  auto mask = test::randomValues(hasMask ? countOf(c.mask) : 1, 4);
  if (c.maskFirstRow)
    for (int64_t j = 0; j < c.lk; ++j) mask[size_t(j)] = -std::numeric_limits<float>::infinity();
  // Directly, one batch-head at a time.
  const int64_t heads = countOf(c.batch);
  const std::vector<int64_t> scoreDims = with(c.lq, c.lk);
  std::vector<float> want(size_t(heads * c.lq * c.dv));
  for (int64_t h = 0; h < heads; ++h) {
    std::vector<float> s(size_t(c.lq * c.lk));
    for (int64_t i = 0; i < c.lq; ++i)
      for (int64_t j = 0; j < c.lk; ++j) {
        double sum = 0;
        for (int64_t t = 0; t < c.d; ++t)
          sum += double(Q[size_t(h * c.lq * c.d + i * c.d + t)]) *
                 (c.kTransposed ? K[size_t(h * c.d * c.lk + t * c.lk + j)] : K[size_t(h * c.lk * c.d + j * c.d + t)]);
        float value = float(sum * kScale);
        if (hasMask) value += broadcastAt(mask, c.mask, scoreDims, (h * c.lq + i) * c.lk + j);
        s[size_t(i * c.lk + j)] = value;
      }
    softmaxRows(s.data(), c.lq, c.lk);
    for (float& x : s)
      if (std::isnan(x)) x = 0;  // the CPU: a row masked entirely gives zeros
    for (int64_t i = 0; i < c.lq; ++i)
      for (int64_t j = 0; j < c.dv; ++j) {
        double sum = 0;
        for (int64_t t = 0; t < c.lk; ++t) sum += double(s[size_t(i * c.lk + t)]) * V[size_t(h * c.lk * c.dv + t * c.dv + j)];
        want[size_t(h * c.lq * c.dv + i * c.dv + j)] = float(sum);
      }
  }
  // The step's chunks, emulated.
  std::vector<float> y(want.size(), 1e30f), scores(size_t(p.chunk * c.lq * c.lk));
  const LtGemm scoresGemm(scoresShape(p, CUDA_R_32F, CUBLAS_COMPUTE_32F));
  const LtGemm valuesGemm(valuesShape(p, CUDA_R_32F, CUBLAS_COMPUTE_32F));
  for (int64_t chunk = 0; chunk < p.chunks; ++chunk) {
    const int64_t head = chunk * p.chunk;
    test::emulateLtMatmul(scoresGemm, kScale, Q.data() + head * c.lq * c.d, K.data() + head * c.lk * c.d, 0,
                          scores.data(), scores.data(), nullptr);
    if (hasMask)
      for (int64_t i = 0; i < countOf(p.scoreDims); ++i)
        scores[size_t(i)] += broadcastAt(mask, p.maskDims, p.scoreDims, i, size_t(p.maskOffsets[size_t(chunk)]));
    softmaxRows(scores.data(), p.chunk * c.lq, c.lk);
    if (hasMask)
      for (float& x : scores)
        if (std::isnan(x)) x = 0;
    test::emulateLtMatmul(valuesGemm, 1.0f, scores.data(), V.data() + head * c.lk * c.dv, 0,
                          y.data() + head * c.lq * c.dv, y.data() + head * c.lq * c.dv, nullptr);
  }
  double worst = 0;
  for (size_t i = 0; i < y.size(); ++i) worst = std::max(worst, double(std::fabs(y[i] - want[i])));
  EXPECT_LE(worst, 1e-5);
}

TEST(AttentionPlan, ShapesAndMasks) {
  for (const Case& c : std::vector<Case>{
           {{2, 3}, 7, 9, 16, 8, false, {}},
           {{1, 4}, 5, 11, 8, 12, true, {}},
           {{2, 2}, 6, 10, 16, 16, false, {6, 10}},
           {{3, 2}, 9, 13, 8, 8, false, {3, 1, 1, 13}},
           {{2, 2}, 4, 4, 32, 24, true, {2, 2, 4, 4}},
           {{5}, 17, 33, 24, 40, false, {1, 33}},
           {{}, 12, 20, 16, 7, false, {12, 20}},
           {{2, 2}, 6, 10, 16, 16, false, {6, 10}, true},
       })
    checkCase(c, kAttentionScoresBudget);
}

TEST(AttentionPlan, ChunksOfBatchHeads) {
  const uint64_t oneHead = 9 * 13 * 5;  // Lq · Lk · (4 bytes of scores + 1 of flags)
  for (uint64_t budget : {uint64_t(1), 2 * oneHead, 6 * oneHead})
    for (const Case& c : std::vector<Case>{
             {{3, 2}, 9, 13, 8, 8, false, {3, 1, 1, 13}},
             {{3, 2}, 9, 13, 8, 8, false, {3, 2, 9, 13}},
             {{3, 2}, 9, 13, 8, 8, false, {2, 1, 13}},
             {{2, 3, 2}, 5, 6, 4, 3, true, {2, 1, 2, 5, 1}},
             {{2, 3, 2}, 5, 6, 4, 3, true, {}},
         })
      checkCase(c, budget);
  const std::vector<int64_t> mask{3, 1, 1, 13};
  Layer layer;
  layer.name = "attention";
  const AttentionPlan p =
      attentionPlanOf(layer, DataType::kFloat32, {3, 2, 9, 8}, {3, 2, 13, 8}, {3, 2, 13, 8}, &mask, 2 * oneHead);
  EXPECT_EQ(p.chunk, 2);  // one batch entry's two heads fit, three batch entries do not
  EXPECT_EQ(p.chunks, 3);
}

TEST(AttentionPlan, WorkspaceHoldsNarrowProbabilitiesAndTheWidenedMask) {
  Layer layer;
  layer.name = "attention";
  const std::vector<int64_t> mask{1, 1, 4, 6};
  const AttentionPlan half = attentionPlanOf(layer, DataType::kFloat16, {2, 3, 4, 8}, {2, 3, 6, 8}, {2, 3, 6, 5}, &mask);
  EXPECT_TRUE(half.narrowProbabilities);
  EXPECT_EQ(half.probabilitiesAt, 768u);  // after the 576 bytes of fp32 scores, 256-byte aligned
  EXPECT_GT(half.flagsAt, half.probabilitiesAt);
  EXPECT_GT(half.cublasAt, half.maskAt);  // room for the mask widened to fp32
  EXPECT_EQ(half.maskElements, 24);
  EXPECT_EQ(attentionComputeType(DataType::kFloat32, Precision::kTF32), CUBLAS_COMPUTE_32F_FAST_TF32);
  EXPECT_EQ(attentionComputeType(DataType::kFloat32, Precision::kFP32), CUBLAS_COMPUTE_32F);
}

// A packed layer ([B, L, 3, H, D] for all three inputs): Q, K and V computed on as [B, H, L, D],
// their re-laid-out copies back to back from one transpose, and cuBLASLt's workspace after them
// on 256 bytes however many bytes the parts take.
TEST(AttentionPlan, PackedPartsLieBackToBackAndTheWorkspaceStaysAligned) {
  Layer layer;
  layer.name = "attention";
  layer.attributes["qkv_packed"] = int64_t(1);
  for (const char* tensor : {"q_interleaved", "k_interleaved", "v_interleaved"}) layer.attributes[tensor] = int64_t(1);
  const std::vector<int64_t> packed{2, 7, 3, 3, 16};
  const AttentionPlan p = attentionPlanOf(layer, DataType::kFloat16, packed, packed, packed, nullptr);
  EXPECT_TRUE(p.packed);
  EXPECT_EQ(p.partStride, 3 * 16);
  EXPECT_EQ(p.q, (std::vector<int64_t>{2, 3, 7, 16}));
  EXPECT_EQ(p.k, p.q);
  EXPECT_EQ(p.out, p.q);
  const uint64_t partBytes = 2 * 3 * 7 * 16 * 2;  // 1344: not a multiple of 256
  EXPECT_EQ(p.relaidAt[1], p.relaidAt[0] + partBytes);
  EXPECT_EQ(p.relaidAt[2], p.relaidAt[1] + partBytes);
  EXPECT_EQ(p.cublasAt % 256, 0u);
  EXPECT_EQ(packedToComputedPermutation(5), (std::vector<int64_t>{2, 0, 3, 1, 4}));
  const std::vector<int64_t> notPacked{2, 7, 4, 3, 16};
  EXPECT_THROW(attentionPlanOf(layer, DataType::kFloat16, notPacked, notPacked, notPacked, nullptr), Error);
}

// The flash step reads the mask through these strides: 0 where it broadcasts, dense elsewhere,
// right-aligned against [batch..., Lq, Lk].
TEST(AttentionPlan, MaskStridesAreZeroWhereItBroadcasts) {
  Layer layer;
  layer.name = "attention";
  const std::vector<int64_t> q{3, 2, 9, 8}, k{3, 2, 13, 8};
  for (const auto& [mask, strides] : {std::pair{std::vector<int64_t>{3, 1, 1, 13}, std::vector<int64_t>{13, 0, 0, 1}},
                                      std::pair{std::vector<int64_t>{1, 1, 9, 13}, std::vector<int64_t>{0, 0, 13, 1}},
                                      std::pair{std::vector<int64_t>{2, 9, 1}, std::vector<int64_t>{0, 9, 1, 0}},
                                      std::pair{std::vector<int64_t>{13}, std::vector<int64_t>{0, 0, 0, 1}}}) {
    const AttentionPlan p = attentionPlanOf(layer, DataType::kFloat16, q, k, k, &mask);
    EXPECT_EQ(p.maskStrides, strides) << dimsToString(mask);
  }
}

}  // namespace
