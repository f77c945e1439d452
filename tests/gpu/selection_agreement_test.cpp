// CPU and CUDA engines agree on the ops whose output size follows from data: NonZero, Compress,
// Unique and NonMaxSuppression, with every layer on the GPU (the CUDA steps size their outputs
// through the output allocator and the engine synchronises there), a layer after them that runs
// once the shapes are known, empty results, odd sizes and batch 1, in fp32 and fp16.
#include <kiln/shape.h>

#include "gpu/agreement_models.h"
#include "gpu/backend_agreement.h"

#include <gtest/gtest.h>

#include <random>

using namespace kiln;
using kiln::test::ModelBuilder;
using namespace kiln::test::onnx_types;

namespace {

// Small integers with about `zeroShare` of them zero: selections neither empty nor full, values
// exact in fp16.
HostTensor smallIntegers(const std::vector<int64_t>& dims, uint32_t seed, float zeroShare, int range = 3) {
  HostTensor t(DataType::kFloat32, dims);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> value(-range, range);
  std::uniform_real_distribution<float> share(0, 1);
  for (int64_t i = 0; i < t.elementCount(); ++i) t.data<float>()[i] = share(rng) < zeroShare ? 0.0f : float(value(rng));
  return t;
}

HostTensor bools(const std::vector<int64_t>& dims, const std::vector<bool>& values) {
  HostTensor t(DataType::kBool, dims);
  for (size_t i = 0; i < values.size(); ++i) t.data<bool>()[i] = values[i];
  return t;
}

TEST(SelectionAgreement, NonZeroOnDataThenALayerAfterIt) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (const std::vector<int64_t>& dims : {std::vector<int64_t>{7}, {3, 5}, {1, 2, 333}, {4, 1}})
    for (float zeros : {0.5f, 1.0f})  // 1: no non-zero element, an empty [rank, 0] result
      for (Precision precision : test::kFloatPrecisions) {
        SCOPED_TRACE(dimsToString(dims) + " zeros " + std::to_string(zeros) + " " + toString(precision));
        ModelBuilder mb(13);
        mb.input("x", kFloat, dims).output("where").output("transposed");
        mb.node("NonZero", {"x"}, {"where"}, "nonzero");
        ModelBuilder::setInts(mb.node("Transpose", {"where"}, {"transposed"}, "transpose"), "perm", {1, 0});
        test::expectBackendsAgree(mb.bytes(), {{"x", smallIntegers(dims, 7 + uint32_t(dims.size()), zeros)}}, precision);
      }
}

TEST(SelectionAgreement, NonZeroOnBoolAndIntegerInputs) {
  KILN_REQUIRE_CUDA_BACKEND();
  ModelBuilder mb(13);
  mb.input("flags", kBool, {2, 3}).input("ints", kInt32, {5}).output("from_bool").output("from_int");
  mb.node("NonZero", {"flags"}, {"from_bool"}, "nonzero_bool");
  mb.node("NonZero", {"ints"}, {"from_int"}, "nonzero_int");
  test::expectBackendsAgree(mb.bytes(), {{"flags", bools({2, 3}, {true, false, false, true, true, false})},
                                         {"ints", test::int32s({5}, {0, 4, -1, 0, 9})}});
}

TEST(SelectionAgreement, CompressByConstantHostAndComputedConditions) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (Precision precision : test::kFloatPrecisions) {
    SCOPED_TRACE(toString(precision));
    ModelBuilder mb(11);
    mb.input("x", kFloat, {5, 3}).input("condition", kBool, {4}).output("by_weight").output("by_input");
    mb.output("by_data").output("flat").output("none");
    mb.initializer("keep", bools({3}, {true, false, true}));
    mb.initializer("zero", HostTensor::scalar<float>(0.0f));
    mb.initializer("nothing", bools({2}, {false, false}));
    ModelBuilder::setInt(mb.node("Compress", {"x", "keep"}, {"by_weight"}, "compress_weight"), "axis", 1);
    ModelBuilder::setInt(mb.node("Compress", {"x", "condition"}, {"by_input"}, "compress_input"), "axis", 0);
    // A condition computed on the GPU: its values decide the shape, read once the streams are waited for.
    mb.node("Slice", {"x", "zero_i", "one_i", "one_axis"}, {"first_column"}, "slice");
    mb.initializer("zero_i", test::int64s({1}, {0})).initializer("one_i", test::int64s({1}, {1}));
    mb.initializer("one_axis", test::int64s({1}, {1}));
    mb.node("Reshape", {"first_column", "flat_shape"}, {"column"}, "reshape");
    mb.initializer("flat_shape", test::int64s({1}, {5}));
    mb.node("Greater", {"column", "zero"}, {"positive"}, "greater");
    ModelBuilder::setInt(mb.node("Compress", {"x", "positive"}, {"by_data"}, "compress_data"), "axis", 0);
    mb.node("Compress", {"x", "condition"}, {"flat"}, "compress_flat");  // no axis: over the elements
    ModelBuilder::setInt(mb.node("Compress", {"x", "nothing"}, {"none"}, "compress_nothing"), "axis", -2);
    test::expectBackendsAgree(mb.bytes(), {{"x", test::randomFloats({5, 3}, 41, -1.0f, 1.0f)},
                                           {"condition", bools({4}, {false, true, true, false})}},
                              precision);
  }
}

TEST(SelectionAgreement, UniqueWithEveryOutputSortedAndUnsorted) {
  KILN_REQUIRE_CUDA_BACKEND();
  struct Case {
    std::vector<int64_t> dims;
    int64_t axis;  // kNoAxis: flattened
  };
  constexpr int64_t kNoAxis = 99;
  for (const Case& c : std::vector<Case>{{{9}, kNoAxis}, {{3, 3}, 0}, {{2, 7, 3}, 1}, {{4, 5}, -1}, {{1, 1}, kNoAxis},
                                         {{301}, kNoAxis}})
    for (int sorted : {1, 0})
      for (Precision precision : test::kFloatPrecisions) {
        SCOPED_TRACE(dimsToString(c.dims) + " axis " + std::to_string(c.axis) + " sorted " + std::to_string(sorted) +
                     " " + toString(precision));
        ModelBuilder mb(11);
        mb.input("x", kFloat, c.dims).output("y").output("indices").output("inverse").output("counts");
        auto& node = mb.node("Unique", {"x"}, {"y", "indices", "inverse", "counts"}, "unique");
        ModelBuilder::setInt(node, "sorted", sorted);
        if (c.axis != kNoAxis) ModelBuilder::setInt(node, "axis", c.axis);
        test::expectBackendsAgree(mb.bytes(), {{"x", smallIntegers(c.dims, 5, 0.3f, 1)}}, precision);
      }
}

TEST(SelectionAgreement, UniqueWithOnlyItsFirstOutputOnIntegers) {
  KILN_REQUIRE_CUDA_BACKEND();
  ModelBuilder mb(11);
  mb.input("x", kInt64, {8}).output("y");
  ModelBuilder::setInt(mb.node("Unique", {"x"}, {"y"}, "unique"), "sorted", 0);
  test::expectBackendsAgree(mb.bytes(), {{"x", test::int64s({8}, {3, -1, 3, 7, -1, 0, 0, 12})}});
}

// Boxes on a quarter grid and scores in tenths (ties included) stay exact in fp16.
std::pair<HostTensor, HostTensor> boxesAndScores(int64_t batches, int64_t classes, int64_t boxes, uint32_t seed) {
  HostTensor b(DataType::kFloat32, {batches, boxes, 4}), s(DataType::kFloat32, {batches, classes, boxes});
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> corner(0, 40), extent(2, 16), tenth(0, 10);
  for (int64_t i = 0; i < batches * boxes; ++i) {
    const float y = float(corner(rng)) / 4, x = float(corner(rng)) / 4, h = float(extent(rng)) / 4, w = float(extent(rng)) / 4;
    float* box = b.data<float>() + i * 4;
    box[0] = y, box[1] = x, box[2] = y + h, box[3] = x + w;
  }
  for (int64_t i = 0; i < s.elementCount(); ++i) s.data<float>()[i] = float(tenth(rng)) / 10;
  return {b, s};
}

TEST(SelectionAgreement, NonMaxSuppressionWithAndWithoutThresholds) {
  KILN_REQUIRE_CUDA_BACKEND();
  struct Case {
    int64_t batches, classes, boxes, centerPointBox, maxPerClass;
    float iou, score;  // score < 0: no score threshold input
  };
  for (const Case& c : std::vector<Case>{{1, 1, 1, 0, 3, 0.5f, -1},
                                         {1, 2, 6, 0, 3, 0.5f, 0.0f},
                                         {2, 3, 37, 0, 10, 0.4f, 0.3f},
                                         {1, 1, 129, 1, 200, 0.6f, -1},
                                         {2, 2, 9, 0, 4, 0.5f, 2.0f}})  // score above all: no box
    for (Precision precision : test::kFloatPrecisions) {
      SCOPED_TRACE(std::to_string(c.batches) + "x" + std::to_string(c.classes) + "x" + std::to_string(c.boxes) + " " +
                   toString(precision));
      ModelBuilder mb(11);
      mb.input("boxes", kFloat, {c.batches, c.boxes, 4}).input("scores", kFloat, {c.batches, c.classes, c.boxes});
      mb.input("max_per_class", kInt64, {1}).input("iou", kFloat, {1});
      std::vector<std::string> inputs{"boxes", "scores", "max_per_class", "iou"};
      if (c.score >= 0) {
        mb.input("score", kFloat, {1});
        inputs.push_back("score");
      }
      mb.output("selected").output("boxes_of_selected");
      ModelBuilder::setInt(mb.node("NonMaxSuppression", inputs, {"selected"}, "nms"), "center_point_box", c.centerPointBox);
      // The selected box indices, gathered once their count is known.
      ModelBuilder::setInt(mb.node("Gather", {"selected", "two"}, {"box_index"}, "box_index"), "axis", 1);
      mb.initializer("two", HostTensor::scalar<int64_t>(2));
      ModelBuilder::setInt(mb.node("Gather", {"boxes", "box_index"}, {"boxes_of_selected"}, "gather_boxes"), "axis", 1);
      auto [boxes, scores] = boxesAndScores(c.batches, c.classes, c.boxes, uint32_t(c.boxes));
      std::map<std::string, HostTensor> feeds{{"boxes", boxes},
                                              {"scores", scores},
                                              {"max_per_class", test::int64s({1}, {c.maxPerClass})},
                                              {"iou", HostTensor::fromVector<float>({1}, {c.iou})}};
      if (c.score >= 0) feeds["score"] = HostTensor::fromVector<float>({1}, {c.score});
      test::expectBackendsAgree(mb.bytes(), feeds, precision);
    }
}

}  // namespace
