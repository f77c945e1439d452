// CPU and CUDA engines agree on the indexed ops: Gather, GatherElements and GatherND (batch_dims),
// ScatterND and ScatterElements with every reduction, indices int32 and int64, negative ones,
// duplicates (reduction 'none': the last update wins on both), as graph inputs and as weights.
#include <kiln/shape.h>

#include "gpu/agreement_models.h"
#include "gpu/backend_agreement.h"

#include <gtest/gtest.h>

using namespace kiln;
using kiln::test::ModelBuilder;
using namespace kiln::test::onnx_types;

namespace {

// `count` indices into an axis of length `dim`, negative ones among them, repeats allowed.
std::vector<int64_t> someIndices(int64_t count, int64_t dim, int64_t seed) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < count; ++i) {
    const int64_t at = (i * 7 + seed * 3) % dim;
    v.push_back(i % 3 == 1 ? at - dim : at);
  }
  return v;
}

TEST(IndexingAgreement, GatherAlongEveryAxis) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (Precision precision : test::kFloatPrecisions) {
    SCOPED_TRACE(toString(precision));
    ModelBuilder mb;
    mb.input("data", kFloat, {5, 4, 3}).input("i64", kInt64, {2, 3}).input("i32", kInt32, {7});
    mb.input("empty", kInt64, {0}).output("axis0").output("axis1").output("last").output("scalar").output("none");
    mb.initializer("scalar_index", HostTensor::scalar<int64_t>(-2));
    mb.node("Gather", {"data", "i64"}, {"axis0"}, "gather_axis0");
    ModelBuilder::setInt(mb.node("Gather", {"data", "i32"}, {"axis1"}, "gather_axis1"), "axis", 1);
    ModelBuilder::setInt(mb.node("Gather", {"data", "scalar_index"}, {"scalar"}, "gather_scalar"), "axis", -1);
    ModelBuilder::setInt(mb.node("Gather", {"data", "i64"}, {"last"}, "gather_last"), "axis", 2);
    mb.node("Gather", {"data", "empty"}, {"none"}, "gather_none");
    test::expectBackendsAgree(mb.bytes(), {{"data", test::randomFloats({5, 4, 3}, 91)},
                                           {"i64", test::int64s({2, 3}, someIndices(6, 3, 1))},
                                           {"i32", test::int32s({7}, someIndices(7, 4, 2))},
                                           {"empty", test::int64s({0}, {})}},
                              precision);
  }
}

TEST(IndexingAgreement, GatherElementsAndGatherND) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (Precision precision : test::kFloatPrecisions) {
    SCOPED_TRACE(toString(precision));
    ModelBuilder mb(13);
    mb.input("data", kFloat, {4, 5}).input("rows", kInt64, {3, 5}).input("cols", kInt32, {4, 2});
    mb.input("cube", kFloat, {3, 4, 5}).input("pairs", kInt64, {2, 2}).input("batched", kInt64, {3, 2, 1});
    mb.output("elements0").output("elements1").output("nd").output("nd_batched");
    mb.node("GatherElements", {"data", "rows"}, {"elements0"}, "gather_elements_axis0");
    ModelBuilder::setInt(mb.node("GatherElements", {"data", "cols"}, {"elements1"}, "gather_elements_axis1"), "axis", -1);
    mb.node("GatherND", {"cube", "pairs"}, {"nd"}, "gather_nd");
    ModelBuilder::setInt(mb.node("GatherND", {"cube", "batched"}, {"nd_batched"}, "gather_nd_batched"), "batch_dims", 1);
    test::expectBackendsAgree(mb.bytes(), {{"data", test::randomFloats({4, 5}, 92)},
                                           {"rows", test::int64s({3, 5}, someIndices(15, 4, 3))},
                                           {"cols", test::int32s({4, 2}, someIndices(8, 5, 4))},
                                           {"cube", test::randomFloats({3, 4, 5}, 93)},
                                           {"pairs", test::int64s({2, 2}, {1, -1, 2, 0})},
                                           {"batched", test::int64s({3, 2, 1}, {3, 0, -2, 1, 2, 2})}},
                              precision);
  }
}

TEST(IndexingAgreement, ScatterNDWithEveryReduction) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (Precision precision : test::kFloatPrecisions)
    for (const char* reduction : {"none", "add", "mul", "max", "min"}) {
      SCOPED_TRACE(std::string(reduction) + " " + toString(precision));
      ModelBuilder mb(18);
      mb.input("data", kFloat, {4, 5, 6}).input("rows", kInt64, {3, 1}).input("updates", kFloat, {3, 5, 6});
      mb.input("points", kInt64, {2, 3}).input("values", kFloat, {2}).output("y").output("y_points").output("y_weights");
      mb.initializer("w_indices", test::int64s({2, 2}, {0, 1, -1, -2})).initializer("w_updates", test::randomFloats({2, 6}, 94));
      ModelBuilder::setString(mb.node("ScatterND", {"data", "rows", "updates"}, {"y"}, "scatter_rows"), "reduction",
                              reduction);
      ModelBuilder::setString(mb.node("ScatterND", {"data", "points", "values"}, {"y_points"}, "scatter_points"),
                              "reduction", reduction);
      ModelBuilder::setString(mb.node("ScatterND", {"data", "w_indices", "w_updates"}, {"y_weights"}, "scatter_weights"),
                              "reduction", reduction);
      // Rows 2 and -2 are the same: a duplicate, which 'none' resolves as the CPU does (the last wins).
      test::expectBackendsAgree(mb.bytes(), {{"data", test::randomFloats({4, 5, 6}, 95)},
                                             {"rows", test::int64s({3, 1}, {2, 0, -2})},
                                             {"updates", test::randomFloats({3, 5, 6}, 96)},
                                             {"points", test::int64s({2, 3}, {1, 2, 3, -1, -1, -1})},
                                             {"values", test::randomFloats({2}, 97)}},
                                precision);
    }
}

TEST(IndexingAgreement, ScatterElementsWithEveryReduction) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (Precision precision : test::kFloatPrecisions)
    for (const char* reduction : {"none", "add", "mul", "max", "min"}) {
      SCOPED_TRACE(std::string(reduction) + " " + toString(precision));
      ModelBuilder mb(18);
      mb.input("data", kFloat, {3, 5}).input("rows", kInt64, {2, 5}).input("cols", kInt32, {3, 3});
      mb.input("updates", kFloat, {2, 5}).input("col_updates", kFloat, {3, 3}).output("y0").output("y1");
      ModelBuilder::setString(mb.node("ScatterElements", {"data", "rows", "updates"}, {"y0"}, "scatter_axis0"),
                              "reduction", reduction);
      auto& cols = mb.node("ScatterElements", {"data", "cols", "col_updates"}, {"y1"}, "scatter_axis1");
      ModelBuilder::setString(cols, "reduction", reduction);
      ModelBuilder::setInt(cols, "axis", 1);
      test::expectBackendsAgree(mb.bytes(), {{"data", test::randomFloats({3, 5}, 98)},
                                             {"rows", test::int64s({2, 5}, someIndices(10, 3, 5))},
                                             {"cols", test::int32s({3, 3}, {0, 4, -5, 2, 2, -1, 3, 1, 1})},
                                             {"updates", test::randomFloats({2, 5}, 99)},
                                             {"col_updates", test::randomFloats({3, 3}, 100)}},
                                precision);
    }
}

// Integer data through the reductions (exact on both), and the old Scatter.
TEST(IndexingAgreement, ScattersOnIntegersAndTheOldScatter) {
  KILN_REQUIRE_CUDA_BACKEND();
  ModelBuilder mb(18);
  mb.input("data", kInt32, {4, 3}).input("indices", kInt64, {4, 1}).input("updates", kInt32, {4, 3});
  mb.output("added").output("largest");
  ModelBuilder::setString(mb.node("ScatterND", {"data", "indices", "updates"}, {"added"}, "scatter_add"), "reduction", "add");
  ModelBuilder::setString(mb.node("ScatterND", {"data", "indices", "updates"}, {"largest"}, "scatter_max"), "reduction",
                          "max");
  const std::vector<int64_t> data = {5, -3, 7, 0, 12, -8, 4, 4, 9, -1, 2, 6};
  const std::vector<int64_t> updates = {1, 2, 3, -4, 15, -6, 7, 8, -9, 10, -11, 12};
  test::expectBackendsAgree(mb.bytes(), {{"data", test::int32s({4, 3}, data)},
                                         {"indices", test::int64s({4, 1}, {3, 0, 3, -4})},
                                         {"updates", test::int32s({4, 3}, updates)}});

  ModelBuilder old(10);
  old.input("data", kFloat, {3, 4}).input("indices", kInt64, {2, 4}).input("updates", kFloat, {2, 4}).output("y");
  ModelBuilder::setInt(old.node("Scatter", {"data", "indices", "updates"}, {"y"}, "scatter"), "axis", 0);
  test::expectBackendsAgree(old.bytes(), {{"data", test::randomFloats({3, 4}, 101)},
                                          {"indices", test::int64s({2, 4}, {0, 1, 2, 0, 2, 0, 1, 1})},
                                          {"updates", test::randomFloats({2, 4}, 102)}});
}

}  // namespace
