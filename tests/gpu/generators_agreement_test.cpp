// CPU and CUDA engines agree on the ops that make tensors from a few numbers: Range, EyeLike,
// ConstantOfShape, OneHot and Trilu, with their scalars as weights and as graph inputs (host
// shape inputs), in float and integer types.
#include <kiln/shape.h>

#include "gpu/agreement_models.h"
#include "gpu/backend_agreement.h"

#include <gtest/gtest.h>

using namespace kiln;
using kiln::test::ModelBuilder;
using namespace kiln::test::onnx_types;

namespace {

// start and limit are graph inputs, so nothing folds Range into a constant.
TEST(GeneratorsAgreement, RangeInFloatsAndIntegers) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (Precision precision : test::kFloatPrecisions) {
    SCOPED_TRACE(toString(precision));
    ModelBuilder mb;
    mb.input("start", kFloat, {}).input("limit", kFloat, {}).input("istart", kInt64, {}).input("ilimit", kInt64, {});
    mb.input("i32limit", kInt32, {}).output("floats").output("ints").output("none").output("int32s");
    mb.initializer("delta", HostTensor::scalar<float>(0.7f)).initializer("idelta", HostTensor::scalar<int64_t>(-2));
    mb.initializer("up", HostTensor::scalar<int64_t>(3)).initializer("i32start", HostTensor::scalar<int32_t>(-5));
    mb.initializer("i32delta", HostTensor::scalar<int32_t>(3));
    mb.node("Range", {"start", "limit", "delta"}, {"floats"}, "range_float");    // 10 values
    mb.node("Range", {"istart", "ilimit", "idelta"}, {"ints"}, "range_int64");   // 7 values
    mb.node("Range", {"istart", "istart", "up"}, {"none"}, "range_empty");       // none
    mb.node("Range", {"i32start", "i32limit", "i32delta"}, {"int32s"}, "range_int32");
    test::expectBackendsAgree(mb.bytes(), {{"start", HostTensor::scalar<float>(0.5f)},
                                           {"limit", HostTensor::scalar<float>(7.3f)},
                                           {"istart", HostTensor::scalar<int64_t>(3)},
                                           {"ilimit", HostTensor::scalar<int64_t>(-10)},
                                           {"i32limit", HostTensor::scalar<int32_t>(30)}},
                              precision);
  }
}

TEST(GeneratorsAgreement, EyeLikeOnEveryDiagonal) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (Precision precision : test::kFloatPrecisions) {
    SCOPED_TRACE(toString(precision));
    ModelBuilder mb;
    mb.input("wide", kFloat, {4, 6}).input("tall", kFloat, {5, 3}).input("one", kFloat, {1, 1});
    mb.output("upper").output("lower").output("single").output("ints");
    ModelBuilder::setInt(mb.node("EyeLike", {"wide"}, {"upper"}, "eye_upper"), "k", 1);
    ModelBuilder::setInt(mb.node("EyeLike", {"tall"}, {"lower"}, "eye_lower"), "k", -2);
    mb.node("EyeLike", {"one"}, {"single"}, "eye_single");
    ModelBuilder::setInt(mb.node("EyeLike", {"wide"}, {"ints"}, "eye_int32"), "dtype", kInt32);
    test::expectBackendsAgree(mb.bytes(), {{"wide", test::randomFloats({4, 6}, 81)},
                                           {"tall", test::randomFloats({5, 3}, 82)},
                                           {"one", test::randomFloats({1, 1}, 83)}},
                              precision);
  }
}

// The shape comes from Shape of an input with a dynamic dim, so the layer stays in the engine.
TEST(GeneratorsAgreement, ConstantOfShapeWithAndWithoutAValue) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (const std::vector<int64_t>& dims : {std::vector<int64_t>{3, 3, 5}, {1, 3, 5}, {0, 3, 5}})
    for (Precision precision : test::kFloatPrecisions) {
      SCOPED_TRACE(dimsToString(dims) + " " + toString(precision));
      ModelBuilder mb;
      mb.symbolicInput("x", kFloat, {"N", "3", "5"}).output("filled").output("zeros").output("ints").output("sum");
      mb.node("Shape", {"x"}, {"shape"}, "shape");
      test::setTensorAttr(mb.node("ConstantOfShape", {"shape"}, {"filled"}, "fill_float"), "value",
                          HostTensor::fromVector<float>({1}, {2.5f}));
      mb.node("ConstantOfShape", {"shape"}, {"zeros"}, "fill_zero");
      test::setTensorAttr(mb.node("ConstantOfShape", {"shape"}, {"ints"}, "fill_int64"), "value",
                          test::int64s({1}, {-7}));
      mb.node("Add", {"x", "filled"}, {"sum"}, "add");
      test::expectBackendsAgree(mb.bytes(), {{"x", test::randomFloats(dims, 84)}}, precision);
    }
}

TEST(GeneratorsAgreement, OneHotAlongAxesWithValuesFromWeightsAndInputs) {
  KILN_REQUIRE_CUDA_BACKEND();
  // Depth 4: -4 counts from the end; 4 and -5 are outside and make no hot element.
  const std::vector<int64_t> indices = {0, 3, -1, 2, 4, -5, 1, -4, 3, 0, 2, 1};
  for (Precision precision : test::kFloatPrecisions) {
    SCOPED_TRACE(toString(precision));
    ModelBuilder mb(11);
    mb.input("i64", kInt64, {3, 4}).input("i32", kInt32, {2, 6}).input("depth_in", kInt64, {});
    mb.input("values_in", kFloat, {2});
    mb.output("last").output("first").output("middle").output("host_values");
    mb.initializer("depth", HostTensor::scalar<int64_t>(4)).initializer("values", HostTensor::fromVector<float>({2}, {0.5f, 2.0f}));
    mb.initializer("int_values", test::int64s({2}, {-1, 9}));
    mb.node("OneHot", {"i64", "depth", "values"}, {"last"}, "one_hot_last");
    ModelBuilder::setInt(mb.node("OneHot", {"i32", "depth", "int_values"}, {"first"}, "one_hot_first"), "axis", 0);
    ModelBuilder::setInt(mb.node("OneHot", {"i64", "depth_in", "values"}, {"middle"}, "one_hot_middle"), "axis", 1);
    mb.node("OneHot", {"i64", "depth", "values_in"}, {"host_values"}, "one_hot_host_values");
    test::expectBackendsAgree(mb.bytes(), {{"i64", test::int64s({3, 4}, indices)},
                                           {"i32", test::int32s({2, 6}, indices)},
                                           {"depth_in", HostTensor::scalar<int64_t>(4)},
                                           {"values_in", HostTensor::fromVector<float>({2}, {-1.5f, 3.0f})}},
                              precision);
  }
}

TEST(GeneratorsAgreement, TriluUpperAndLowerAtEveryDiagonal) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (const std::vector<int64_t>& dims : {std::vector<int64_t>{3, 4, 5}, {6, 3}, {1, 1, 7, 7}, {0, 3, 3}})
    for (Precision precision : test::kFloatPrecisions) {
      SCOPED_TRACE(dimsToString(dims) + " " + toString(precision));
      ModelBuilder mb(14);
      mb.input("x", kFloat, dims).input("k_in", kInt64, {}).output("upper").output("lower").output("host_k");
      mb.initializer("k1", HostTensor::scalar<int64_t>(1)).initializer("kneg", HostTensor::scalar<int64_t>(-1));
      mb.node("Trilu", {"x", "k1"}, {"upper"}, "trilu_upper");
      ModelBuilder::setInt(mb.node("Trilu", {"x", "kneg"}, {"lower"}, "trilu_lower"), "upper", 0);
      ModelBuilder::setInt(mb.node("Trilu", {"x", "k_in"}, {"host_k"}, "trilu_host_k"), "upper", 0);
      test::expectBackendsAgree(mb.bytes(), {{"x", test::randomFloats(dims, 85)}, {"k_in", HostTensor::scalar<int64_t>(2)}},
                                precision);
    }
}

// The kernel reads int32 and int64 indices; the CPU runs OneHot on float ones.
TEST(GeneratorsAgreement, OneHotOfFloatIndicesRunsOnTheCpu) {
  KILN_REQUIRE_CUDA_BACKEND();
  ModelBuilder mb(11);
  mb.input("i", kFloat, {5}).output("y");
  mb.initializer("depth", HostTensor::scalar<int64_t>(3)).initializer("values", HostTensor::fromVector<float>({2}, {0, 1}));
  mb.node("OneHot", {"i", "depth", "values"}, {"y"}, "one_hot");
  const auto agreement = test::expectBackendsAgree(
      mb.bytes(), {{"i", HostTensor::fromVector<float>({5}, {0, 2, 1, -1, 2})}}, Precision::kFP32,
      /*requireEveryLayerOnGpu=*/false);
  EXPECT_FALSE(agreement.everyLayerOnGpu);
}

}  // namespace
