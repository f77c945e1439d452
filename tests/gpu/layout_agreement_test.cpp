// CPU and CUDA engines agree on the layout ops: Transpose, Concat, Split, Slice, Tile, Expand, Pad
// (every mode), DepthToSpace, SpaceToDepth and ReverseSequence, at odd sizes, batch 1 and empty
// dims, with their parameters as attributes (old opsets), weights and graph inputs (host shape
// inputs).
#include <kiln/shape.h>

#include "gpu/agreement_models.h"
#include "gpu/backend_agreement.h"

#include <gtest/gtest.h>

using namespace kiln;
using kiln::test::ModelBuilder;
using namespace kiln::test::onnx_types;

namespace {

struct TransposeCase {
  std::vector<int64_t> dims, perm;  // empty perm: the default (reversed axes)
};

TEST(LayoutAgreement, TransposeAtEveryRank) {
  KILN_REQUIRE_CUDA_BACKEND();
  const std::vector<TransposeCase> cases = {{{7}, {}},
                                            {{33, 65}, {}},
                                            {{2, 3, 4}, {2, 0, 1}},
                                            {{1, 5, 7, 3}, {0, 3, 1, 2}},
                                            {{2, 40, 9, 37}, {0, 2, 3, 1}},
                                            {{3, 1, 2, 1, 4, 2, 1, 3}, {}},
                                            {{2, 0, 3}, {1, 2, 0}}};
  for (const auto& c : cases)
    for (Precision precision : test::kFloatPrecisions) {
      SCOPED_TRACE(dimsToString(c.dims) + " perm " + dimsToString(c.perm) + " " + toString(precision));
      ModelBuilder mb;
      mb.input("x", kFloat, c.dims).output("y");
      auto& node = mb.node("Transpose", {"x"}, {"y"}, "transpose");
      if (!c.perm.empty()) ModelBuilder::setInts(node, "perm", c.perm);
      test::expectBackendsAgree(mb.bytes(), {{"x", test::randomFloats(c.dims, 21)}}, precision);
    }
}

// 8-byte and 1-byte elements move by size too.
TEST(LayoutAgreement, TransposeAndConcatOfIntegersAndBools) {
  KILN_REQUIRE_CUDA_BACKEND();
  std::vector<int64_t> values(30);
  std::vector<bool> flags(30);
  for (size_t i = 0; i < values.size(); ++i) values[i] = int64_t(i * 7919 % 101) - 50, flags[i] = i % 3 == 1;
  ModelBuilder mb;
  mb.input("a", kInt64, {2, 3, 5}).input("b", kBool, {2, 3, 5}).output("at").output("bt").output("ab");
  ModelBuilder::setInts(mb.node("Transpose", {"a"}, {"at"}, "transpose_int64"), "perm", {2, 0, 1});
  ModelBuilder::setInts(mb.node("Transpose", {"b"}, {"bt"}, "transpose_bool"), "perm", {1, 2, 0});
  ModelBuilder::setInt(mb.node("Concat", {"a", "a"}, {"ab"}, "concat_int64"), "axis", 1);
  test::expectBackendsAgree(mb.bytes(), {{"a", test::int64s({2, 3, 5}, values)},
                                         {"b", HostTensor::fromVector<bool>({2, 3, 5}, flags)}});
}

TEST(LayoutAgreement, ConcatAlongEveryAxisWithWeightsAndEmptyParts) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (Precision precision : test::kFloatPrecisions) {
    SCOPED_TRACE(toString(precision));
    ModelBuilder mb;
    mb.input("a", kFloat, {2, 3, 5}).input("b", kFloat, {2, 1, 5}).input("e", kFloat, {2, 0, 5});
    mb.input("p", kFloat, {3, 7}).input("q", kFloat, {3, 1});
    mb.output("y1").output("y2").output("y3");
    mb.initializer("w", test::randomFloats({2, 4, 5}, 22));
    ModelBuilder::setInt(mb.node("Concat", {"a", "e", "b", "w", "e"}, {"y1"}, "concat_middle"), "axis", 1);
    ModelBuilder::setInt(mb.node("Concat", {"p", "q", "p"}, {"y2"}, "concat_last"), "axis", -1);
    ModelBuilder::setInt(mb.node("Concat", {"a", "a"}, {"y3"}, "concat_first"), "axis", 0);
    test::expectBackendsAgree(mb.bytes(), {{"a", test::randomFloats({2, 3, 5}, 23)},
                                           {"b", test::randomFloats({2, 1, 5}, 24)},
                                           {"e", test::randomFloats({2, 0, 5}, 25)},
                                           {"p", test::randomFloats({3, 7}, 26)},
                                           {"q", test::randomFloats({3, 1}, 27)}},
                              precision);
  }
}

TEST(LayoutAgreement, SplitByAttributeInputAndNumOutputs) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (Precision precision : test::kFloatPrecisions) {
    SCOPED_TRACE(toString(precision));
    {  // opset 11: the 'split' attribute, negative axis
      ModelBuilder mb(11);
      mb.input("x", kFloat, {3, 4, 5}).output("s0").output("s1");
      auto& node = mb.node("Split", {"x"}, {"s0", "s1"}, "split_attr");
      ModelBuilder::setInt(node, "axis", -1);
      ModelBuilder::setInts(node, "split", {1, 4});
      test::expectBackendsAgree(mb.bytes(), {{"x", test::randomFloats({3, 4, 5}, 31)}}, precision);
    }
    {  // opset 13: sizes as a weight (one empty part), and equal parts without it
      ModelBuilder mb(13);
      mb.input("x", kFloat, {4, 6, 3}).output("s0").output("s1").output("s2").output("e0").output("e1");
      mb.initializer("sizes", test::int64s({3}, {2, 0, 4}));
      ModelBuilder::setInt(mb.node("Split", {"x", "sizes"}, {"s0", "s1", "s2"}, "split_input"), "axis", 1);
      mb.node("Split", {"x"}, {"e0", "e1"}, "split_equal");
      test::expectBackendsAgree(mb.bytes(), {{"x", test::randomFloats({4, 6, 3}, 32)}}, precision);
    }
    {  // opset 18: num_outputs with a smaller last part (7 = 3 + 3 + 1); sizes from a graph input
      ModelBuilder mb(18);
      mb.input("x", kFloat, {7, 2}).input("sizes", kInt64, {2}).output("n0").output("n1").output("n2");
      mb.output("g0").output("g1");
      ModelBuilder::setInt(mb.node("Split", {"x"}, {"n0", "n1", "n2"}, "split_num_outputs"), "num_outputs", 3);
      mb.node("Split", {"x", "sizes"}, {"g0", "g1"}, "split_host_sizes");
      test::expectBackendsAgree(mb.bytes(), {{"x", test::randomFloats({7, 2}, 33)}, {"sizes", test::int64s({2}, {5, 2})}},
                                precision);
    }
  }
}

TEST(LayoutAgreement, SliceWithClampingNegativeStepsAndEmptyResults) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (Precision precision : test::kFloatPrecisions) {
    SCOPED_TRACE(toString(precision));
    {  // opset 13, weights: out-of-range ends clamp, a negative step walks backwards
      ModelBuilder mb;
      mb.input("x", kFloat, {5, 7, 9}).output("y").output("empty").output("tail");
      mb.initializer("starts", test::int64s({3}, {1, -1, 0})).initializer("ends", test::int64s({3}, {4, -8, 100}));
      mb.initializer("axes", test::int64s({3}, {0, 1, 2})).initializer("steps", test::int64s({3}, {1, -2, 3}));
      mb.initializer("s1", test::int64s({1}, {3})).initializer("e1", test::int64s({1}, {3}));
      mb.initializer("a1", test::int64s({1}, {-1})).initializer("big", test::int64s({1}, {INT64_MAX}));
      mb.node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"y"}, "slice");
      mb.node("Slice", {"x", "s1", "e1", "a1"}, {"empty"}, "slice_empty");
      mb.node("Slice", {"x", "s1", "big", "a1"}, {"tail"}, "slice_tail");
      test::expectBackendsAgree(mb.bytes(), {{"x", test::randomFloats({5, 7, 9}, 41)}}, precision);
    }
    {  // opset 13, starts and ends as graph inputs (host shape inputs)
      ModelBuilder mb;
      mb.input("x", kFloat, {1, 6, 10}).input("starts", kInt64, {2}).input("ends", kInt64, {2}).output("y");
      mb.node("Slice", {"x", "starts", "ends"}, {"y"}, "slice_host");
      test::expectBackendsAgree(mb.bytes(), {{"x", test::randomFloats({1, 6, 10}, 42)},
                                             {"starts", test::int64s({2}, {0, 1})},
                                             {"ends", test::int64s({2}, {1, 5})}},
                                precision);
    }
    {  // opset 9: attributes
      ModelBuilder mb(9);
      mb.input("x", kFloat, {4, 11}).output("y");
      auto& node = mb.node("Slice", {"x"}, {"y"}, "slice_attr");
      ModelBuilder::setInts(node, "starts", {1, 2});
      ModelBuilder::setInts(node, "ends", {-1, 9});
      ModelBuilder::setInts(node, "axes", {0, 1});
      test::expectBackendsAgree(mb.bytes(), {{"x", test::randomFloats({4, 11}, 43)}}, precision);
    }
  }
}

TEST(LayoutAgreement, TileAndExpand) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (Precision precision : test::kFloatPrecisions) {
    SCOPED_TRACE(toString(precision));
    ModelBuilder mb;
    mb.input("x", kFloat, {2, 3}).input("v", kFloat, {1, 4, 1}).input("repeats", kInt64, {3});
    mb.input("shape", kInt64, {4});
    mb.output("tiled").output("tiled_host").output("tiled_empty").output("expanded").output("expanded_host");
    mb.output("expanded_scalar");
    mb.initializer("r", test::int64s({2}, {2, 3})).initializer("r0", test::int64s({2}, {0, 2}));
    mb.initializer("to", test::int64s({3}, {4, 2, 1})).initializer("one", HostTensor::scalar<float>(1.5f));
    mb.node("Tile", {"x", "r"}, {"tiled"}, "tile");
    mb.node("Tile", {"v", "repeats"}, {"tiled_host"}, "tile_host");
    mb.node("Tile", {"x", "r0"}, {"tiled_empty"}, "tile_empty");
    mb.node("Expand", {"x", "to"}, {"expanded"}, "expand");            // [4, 2, 3]
    mb.node("Expand", {"v", "shape"}, {"expanded_host"}, "expand_host");  // [2, 3, 4, 5]
    mb.node("Expand", {"one", "shape"}, {"expanded_scalar"}, "expand_weight");
    test::expectBackendsAgree(mb.bytes(), {{"x", test::randomFloats({2, 3}, 51)},
                                           {"v", test::randomFloats({1, 4, 1}, 52)},
                                           {"repeats", test::int64s({3}, {3, 1, 2})},
                                           {"shape", test::int64s({4}, {2, 3, 1, 5})}},
                              precision);
  }
}

TEST(LayoutAgreement, PadInEveryMode) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (Precision precision : test::kFloatPrecisions)
    for (const char* mode : {"constant", "reflect", "edge", "wrap"}) {
      SCOPED_TRACE(std::string(mode) + " " + toString(precision));
      ModelBuilder mb(19);
      mb.input("x", kFloat, {3, 4, 5}).input("pads_in", kInt64, {6}).output("y").output("cropped").output("host");
      mb.output("on_axes");
      mb.initializer("pads", test::int64s({6}, {1, 0, 2, 2, 1, 0}));
      mb.initializer("crop", test::int64s({6}, {0, -1, 1, -1, 2, -2}));
      mb.initializer("value", HostTensor::scalar<float>(-2.5f));
      mb.initializer("axis_pads", test::int64s({2}, {3, 1})).initializer("axes", test::int64s({1}, {-1}));
      ModelBuilder::setString(mb.node("Pad", {"x", "pads", "value"}, {"y"}, "pad"), "mode", mode);
      ModelBuilder::setString(mb.node("Pad", {"x", "crop"}, {"cropped"}, "pad_crop"), "mode", mode);
      ModelBuilder::setString(mb.node("Pad", {"x", "pads_in", "value"}, {"host"}, "pad_host"), "mode", mode);
      ModelBuilder::setString(mb.node("Pad", {"x", "axis_pads", "", "axes"}, {"on_axes"}, "pad_axes"), "mode", mode);
      test::expectBackendsAgree(mb.bytes(), {{"x", test::randomFloats({3, 4, 5}, 61)},
                                             {"pads_in", test::int64s({6}, {0, 2, 1, 1, 0, 3})}},
                                precision);
    }
}

// The constant as a graph input (device data), and opset 2's attributes.
TEST(LayoutAgreement, PadConstantFromDataAndFromTheOldAttribute) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (Precision precision : test::kFloatPrecisions) {
    SCOPED_TRACE(toString(precision));
    {
      ModelBuilder mb;
      mb.input("x", kFloat, {1, 2, 3, 3}).input("c", kFloat, {}).output("y");
      mb.initializer("pads", test::int64s({8}, {0, 0, 1, 2, 0, 1, 2, 1}));
      mb.node("Pad", {"x", "pads", "c"}, {"y"}, "pad_data_constant");
      test::expectBackendsAgree(mb.bytes(), {{"x", test::randomFloats({1, 2, 3, 3}, 62)},
                                             {"c", HostTensor::scalar<float>(0.75f)}},
                                precision);
    }
    {
      ModelBuilder mb(10);
      mb.input("x", kFloat, {2, 5}).output("y");
      auto& node = mb.node("Pad", {"x"}, {"y"}, "pad_attr");
      ModelBuilder::setInts(node, "pads", {1, 2, 0, 3});
      ModelBuilder::setFloat(node, "value", 1.25f);
      test::expectBackendsAgree(mb.bytes(), {{"x", test::randomFloats({2, 5}, 63)}}, precision);
    }
  }
}

TEST(LayoutAgreement, DepthToSpaceAndSpaceToDepth) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (Precision precision : test::kFloatPrecisions) {
    SCOPED_TRACE(toString(precision));
    ModelBuilder mb;
    mb.input("d", kFloat, {1, 8, 3, 2}).input("d3", kFloat, {2, 18, 2, 3}).input("s", kFloat, {1, 2, 6, 4});
    mb.input("s3", kFloat, {2, 3, 9, 3});
    mb.output("dcr").output("crd").output("dcr3").output("s2d").output("s2d3");
    auto& dcr = mb.node("DepthToSpace", {"d"}, {"dcr"}, "depth_to_space_dcr");
    ModelBuilder::setInt(dcr, "blocksize", 2);
    auto& crd = mb.node("DepthToSpace", {"d"}, {"crd"}, "depth_to_space_crd");
    ModelBuilder::setInt(crd, "blocksize", 2);
    ModelBuilder::setString(crd, "mode", "CRD");
    ModelBuilder::setInt(mb.node("DepthToSpace", {"d3"}, {"dcr3"}, "depth_to_space_3"), "blocksize", 3);
    ModelBuilder::setInt(mb.node("SpaceToDepth", {"s"}, {"s2d"}, "space_to_depth"), "blocksize", 2);
    ModelBuilder::setInt(mb.node("SpaceToDepth", {"s3"}, {"s2d3"}, "space_to_depth_3"), "blocksize", 3);
    test::expectBackendsAgree(mb.bytes(), {{"d", test::randomFloats({1, 8, 3, 2}, 71)},
                                           {"d3", test::randomFloats({2, 18, 2, 3}, 72)},
                                           {"s", test::randomFloats({1, 2, 6, 4}, 73)},
                                           {"s3", test::randomFloats({2, 3, 9, 3}, 74)}},
                              precision);
  }
}

// Above the kernels' 8 dims the CPU runs the layer.
TEST(LayoutAgreement, TransposeOfNineDimsRunsOnTheCpu) {
  KILN_REQUIRE_CUDA_BACKEND();
  const std::vector<int64_t> dims = {1, 2, 1, 2, 1, 2, 1, 2, 3};
  ModelBuilder mb;
  mb.input("x", kFloat, dims).output("y");
  mb.node("Transpose", {"x"}, {"y"}, "transpose");
  const auto agreement = test::expectBackendsAgree(mb.bytes(), {{"x", test::randomFloats(dims, 28)}}, Precision::kFP32,
                                                   /*requireEveryLayerOnGpu=*/false);
  EXPECT_FALSE(agreement.everyLayerOnGpu);
}

TEST(LayoutAgreement, ReverseSequenceAlongEitherBatchAxis) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (const std::vector<int64_t>& dims : {std::vector<int64_t>{4, 4}, {5, 3, 7}, {6, 1, 2, 3}})
    for (int64_t batchAxis : {0, 1})
      for (Precision precision : test::kFloatPrecisions) {
        SCOPED_TRACE(dimsToString(dims) + " batch axis " + std::to_string(batchAxis) + " " + toString(precision));
        const int64_t batch = dims[size_t(batchAxis)], time = dims[size_t(1 - batchAxis)];
        std::vector<int64_t> lengths;
        for (int64_t b = 0; b < batch; ++b) lengths.push_back((b * 3 + 1) % (time + 1));
        ModelBuilder mb(10);
        mb.input("x", kFloat, dims).input("lengths", kInt64, {batch}).output("y");
        auto& node = mb.node("ReverseSequence", {"x", "lengths"}, {"y"}, "reverse");
        ModelBuilder::setInt(node, "batch_axis", batchAxis);
        ModelBuilder::setInt(node, "time_axis", 1 - batchAxis);
        test::expectBackendsAgree(
            mb.bytes(), {{"x", test::randomFloats(dims, 29)}, {"lengths", test::int64s({batch}, lengths)}}, precision);
      }
}

}  // namespace
