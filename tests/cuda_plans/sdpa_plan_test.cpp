// The views cuDNN's SDPA operation is given of kiln.Attention's tensors (backends/cuda/ops/
// sdpa_plan.h): for each layout the layer carries ([B, H, L, D], the exporters' interleaved
// [B, L, H, D], BERT's packed [B, L, 3, H, D] product, ranks 2 to 5) every element of every view
// lands where the stored tensor holds it, worked out here from the stored dims alone; and the
// problems cuDNN cannot take are refused with the reason.
#include "backends/cuda/ops/sdpa_plan.h"

#include <kiln/shape.h>

#include <gtest/gtest.h>

#include <functional>

using namespace kiln;
using namespace kiln::cuda;

namespace {

Layer attentionLayer() {
  Layer layer;
  layer.name = "attention";
  layer.domain = "kiln";
  layer.opType = "Attention";
  return layer;
}

// Row-major offset of `index` in a dense tensor of `dims`.
int64_t offsetIn(const std::vector<int64_t>& dims, const std::vector<int64_t>& index) {
  int64_t offset = 0;
  for (size_t i = 0; i < dims.size(); ++i) offset = offset * dims[i] + index[i];
  return offset;
}

// Where element (b, h, l, d) of view t sits in its stored tensor, in elements.
using StoredOffset = std::function<int64_t(size_t t, int64_t b, int64_t h, int64_t l, int64_t d)>;

void expectViews(const SdpaLayout& layout, const std::vector<std::vector<int64_t>>& wantDims,
                 const StoredOffset& want) {
  ASSERT_EQ(layout.refusal, "");
  for (size_t t = 0; t < 4; ++t) {
    SCOPED_TRACE("view " + std::to_string(t) + " dims " + dimsToString(layout.dims[t]) + " strides " +
                 dimsToString(layout.strides[t]));
    ASSERT_EQ(layout.dims[t], wantDims[t]);
    const auto& n = layout.dims[t];
    const auto& s = layout.strides[t];
    EXPECT_EQ(s[3], 1) << "the head dim is contiguous";
    for (int64_t b = 0; b < n[0]; ++b)
      for (int64_t h = 0; h < n[1]; ++h)
        for (int64_t l = 0; l < n[2]; ++l)
          for (int64_t d = 0; d < n[3]; ++d)
            ASSERT_EQ(b * s[0] + h * s[1] + l * s[2] + d * s[3], want(t, b, h, l, d))
                << "at " << b << "," << h << "," << l << "," << d;
  }
}

SdpaLayout layoutOf(const Layer& layer, const std::vector<int64_t>& q, const std::vector<int64_t>& k,
                    const std::vector<int64_t>& v, DataType type = DataType::kFloat16,
                    const std::vector<int64_t>* mask = nullptr) {
  const AttentionPlan plan = attentionPlanOf(layer, type, q, k, v, mask);
  LayerShapes stored{q, k, v};
  if (mask) stored.push_back(*mask);
  return sdpaLayoutOf(plan, stored, type);
}

}  // namespace

TEST(SdpaPlan, HeadsLayoutOddLengths) {
  const int64_t B = 2, H = 3, Lq = 17, Lk = 77, D = 64;
  const std::vector<int64_t> q{B, H, Lq, D}, k{B, H, Lk, D}, v{B, H, Lk, D}, out{B, H, Lq, D};
  const SdpaLayout layout = layoutOf(attentionLayer(), q, k, v, DataType::kBFloat16);
  const std::vector<int64_t>* stored[4] = {&q, &k, &v, &out};
  expectViews(layout, {q, k, v, out}, [&](size_t t, int64_t b, int64_t h, int64_t l, int64_t d) {
    return offsetIn(*stored[t], {b, h, l, d});
  });
}

TEST(SdpaPlan, InterleavedHeadsReadInPlace) {
  const int64_t B = 2, H = 4, Lq = 197, Lk = 197, D = 80;
  Layer layer = attentionLayer();
  for (const char* name : {"q_interleaved", "k_interleaved", "v_interleaved", "out_interleaved"})
    layer.attributes[name] = int64_t(1);
  const std::vector<int64_t> q{B, Lq, H, D}, k{B, Lk, H, D};
  const SdpaLayout layout = layoutOf(layer, q, k, k);
  const std::vector<int64_t>* stored[4] = {&q, &k, &k, &q};
  expectViews(layout, {{B, H, Lq, D}, {B, H, Lk, D}, {B, H, Lk, D}, {B, H, Lq, D}},
              [&](size_t t, int64_t b, int64_t h, int64_t l, int64_t d) {
                return offsetIn(*stored[t], {b, l, h, d});
              });
}

TEST(SdpaPlan, PackedQkvReadInPlace) {
  const int64_t B = 3, L = 33, H = 4, D = 64;
  Layer layer = attentionLayer();
  layer.attributes["qkv_packed"] = int64_t(1);
  for (const char* name : {"q_interleaved", "k_interleaved", "v_interleaved", "out_interleaved"})
    layer.attributes[name] = int64_t(1);
  const std::vector<int64_t> packed{B, L, 3, H, D}, out{B, L, H, D};
  const AttentionPlan plan = attentionPlanOf(layer, DataType::kFloat16, packed, packed, packed, nullptr);
  ASSERT_EQ(plan.partStride, H * D);
  const SdpaLayout layout = sdpaLayoutOf(plan, {packed, packed, packed}, DataType::kFloat16);
  // Part t of the packed tensor is bound at t * partStride elements in: the view is relative to it.
  expectViews(layout, {{B, H, L, D}, {B, H, L, D}, {B, H, L, D}, {B, H, L, D}},
              [&](size_t t, int64_t b, int64_t h, int64_t l, int64_t d) {
                if (t == 3) return offsetIn(out, {b, l, h, d});
                return offsetIn(packed, {b, l, int64_t(t), h, d}) - int64_t(t) * plan.partStride;
              });
}

TEST(SdpaPlan, BatchDimsFoldIntoB) {
  // Rank 5 [A, C, H, L, D] -> B = A * C; rank 3 [H, L, D] and rank 2 [L, D] -> B (and H) of 1.
  const std::vector<int64_t> q5{2, 3, 2, 9, 16}, k5{2, 3, 2, 11, 16};
  expectViews(layoutOf(attentionLayer(), q5, k5, k5), {{6, 2, 9, 16}, {6, 2, 11, 16}, {6, 2, 11, 16}, {6, 2, 9, 16}},
              [&](size_t t, int64_t b, int64_t h, int64_t l, int64_t d) {
                return offsetIn(t == 1 || t == 2 ? k5 : q5, {b / 3, b % 3, h, l, d});
              });
  const std::vector<int64_t> q3{5, 17, 24}, k3{5, 33, 24};
  expectViews(layoutOf(attentionLayer(), q3, k3, k3), {{1, 5, 17, 24}, {1, 5, 33, 24}, {1, 5, 33, 24}, {1, 5, 17, 24}},
              [&](size_t t, int64_t, int64_t h, int64_t l, int64_t d) {
                return offsetIn(t == 1 || t == 2 ? k3 : q3, {h, l, d});
              });
  const std::vector<int64_t> q2{12, 8}, k2{20, 8};
  expectViews(layoutOf(attentionLayer(), q2, k2, k2), {{1, 1, 12, 8}, {1, 1, 20, 8}, {1, 1, 20, 8}, {1, 1, 12, 8}},
              [&](size_t t, int64_t, int64_t, int64_t l, int64_t d) {
                return offsetIn(t == 1 || t == 2 ? k2 : q2, {l, d});
              });
}

TEST(SdpaPlan, InterleavedRank5Folds) {
  // Stored [A, C, L, H, D]: the batch dims A and C are outside L and H, so they still fold.
  Layer layer = attentionLayer();
  for (const char* name : {"q_interleaved", "k_interleaved", "v_interleaved", "out_interleaved"})
    layer.attributes[name] = int64_t(1);
  const std::vector<int64_t> q{2, 3, 7, 2, 8};
  expectViews(layoutOf(layer, q, q, q), {{6, 2, 7, 8}, {6, 2, 7, 8}, {6, 2, 7, 8}, {6, 2, 7, 8}},
              [&](size_t, int64_t b, int64_t h, int64_t l, int64_t d) {
                return offsetIn(q, {b / 3, b % 3, l, h, d});
              });
}

TEST(SdpaPlan, RefusesWhatCudnnCannotTake) {
  const std::vector<int64_t> q{2, 3, 7, 64}, k{2, 3, 9, 64};
  auto refusalOf = [](const SdpaLayout& l) { return l.refusal; };
  EXPECT_NE(refusalOf(layoutOf(attentionLayer(), q, k, k, DataType::kFloat32)).find("float16 or bfloat16"),
            std::string::npos);
  Layer masked = attentionLayer();
  masked.attributes["has_mask"] = int64_t(1);
  const std::vector<int64_t> mask{1, 1, 7, 9};
  EXPECT_NE(refusalOf(layoutOf(masked, q, k, k, DataType::kFloat16, &mask)).find("mask"), std::string::npos);
  for (int64_t d : {20, 264}) {
    const std::vector<int64_t> qd{2, 3, 7, d}, kd{2, 3, 9, d};
    EXPECT_NE(refusalOf(layoutOf(attentionLayer(), qd, kd, kd)).find("multiples of 8"), std::string::npos) << d;
  }
  const std::vector<int64_t> q256{1, 1, 5, 256}, k256{1, 1, 6, 256};
  EXPECT_EQ(refusalOf(layoutOf(attentionLayer(), q256, k256, k256)), "");
  // K given transposed [B, H, D, Lk], stored so: its head dim steps over Lk elements.
  Layer transposed = attentionLayer();
  transposed.attributes["k_transposed"] = int64_t(1);
  const std::vector<int64_t> kt{2, 3, 64, 9};
  EXPECT_NE(refusalOf(layoutOf(transposed, q, kt, k)).find("not contiguous"), std::string::npos);
  const std::vector<int64_t> none{2, 3, 0, 64};
  EXPECT_NE(refusalOf(layoutOf(attentionLayer(), q, none, none)).find("nothing to compute"), std::string::npos);
}
