// CPU and CUDA engines agree on the alias ops (Identity, Reshape, Flatten, Squeeze, Unsqueeze,
// Dropout): writing graph outputs (a copy into the output's own memory) and between layers (where
// the output shares its input's buffer), with shapes from weights, graph inputs and Shape.
#include <kiln/shape.h>

#include "gpu/agreement_models.h"
#include "gpu/backend_agreement.h"

#include <gtest/gtest.h>

using namespace kiln;
using kiln::test::ModelBuilder;
using namespace kiln::test::onnx_types;

namespace {

// [a, b, 1, c], including an empty one and batch 1.
const std::vector<std::vector<int64_t>> kShapes = {{2, 3, 1, 5}, {1, 1, 1, 7}, {3, 5, 1, 1}, {0, 3, 1, 5}};

TEST(ViewsAgreement, AliasOpsCopyIntoGraphOutputs) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (const auto& dims : kShapes)
    for (Precision precision : test::kFloatPrecisions) {
      SCOPED_TRACE(dimsToString(dims) + " " + toString(precision));
      ModelBuilder mb;
      mb.input("x", kFloat, dims).output("reshaped").output("flat").output("squeezed").output("unsqueezed").output("same");
      mb.initializer("shape", test::int64s({2}, {-1, dims[3]}));
      mb.initializer("squeeze_axes", test::int64s({1}, {2}));
      mb.initializer("unsqueeze_axes", test::int64s({2}, {0, 5}));
      mb.node("Reshape", {"x", "shape"}, {"reshaped"}, "reshape");
      ModelBuilder::setInt(mb.node("Flatten", {"x"}, {"flat"}, "flatten"), "axis", 2);
      mb.node("Squeeze", {"x", "squeeze_axes"}, {"squeezed"}, "squeeze");
      mb.node("Unsqueeze", {"x", "unsqueeze_axes"}, {"unsqueezed"}, "unsqueeze");
      mb.node("Identity", {"x"}, {"same"}, "identity");
      test::expectBackendsAgree(mb.bytes(), {{"x", test::randomFloats(dims, 11)}}, precision);
    }
}

// Between two layers the memory planner gives an alias op's output its input's buffer.
TEST(ViewsAgreement, AliasOpsBetweenLayers) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (const auto& dims : kShapes)
    for (Precision precision : test::kFloatPrecisions) {
      SCOPED_TRACE(dimsToString(dims) + " " + toString(precision));
      ModelBuilder mb;
      mb.input("x", kFloat, dims).output("y1").output("y2").output("y3");
      mb.initializer("shape", test::int64s({3}, {dims[3], 0, -1}));
      mb.node("Relu", {"x"}, {"r"}, "relu");
      mb.node("Reshape", {"r", "shape"}, {"reshaped"}, "reshape");
      mb.node("Neg", {"reshaped"}, {"y1"}, "neg");
      mb.node("Squeeze", {"r"}, {"squeezed"}, "squeeze_all_ones");
      mb.node("Flatten", {"squeezed"}, {"flat"}, "flatten");
      mb.node("Abs", {"flat"}, {"y2"}, "abs");
      mb.node("Identity", {"r"}, {"same"}, "identity");
      mb.node("Sigmoid", {"same"}, {"y3"}, "sigmoid");
      test::expectBackendsAgree(mb.bytes(), {{"x", test::randomFloats(dims, 12)}}, precision);
    }
}

// Reshape's shape as a graph input (a host shape input) and as Shape of another input.
TEST(ViewsAgreement, ReshapeToShapesKnownAtRunTime) {
  KILN_REQUIRE_CUDA_BACKEND();
  ModelBuilder mb;
  mb.input("x", kFloat, {2, 6}).input("shape", kInt64, {3}).symbolicInput("z", kFloat, {"N", "4"});
  mb.output("y").output("like_z");
  mb.node("Reshape", {"x", "shape"}, {"y"}, "reshape_to_input");
  mb.node("Shape", {"z"}, {"z_shape"}, "shape_of_z");
  mb.node("Reshape", {"x", "z_shape"}, {"like_z"}, "reshape_like_z");
  test::expectBackendsAgree(mb.bytes(), {{"x", test::randomFloats({2, 6}, 13)},
                                         {"shape", test::int64s({3}, {3, 2, 2})},
                                         {"z", test::randomFloats({3, 4}, 14)}});
}

TEST(ViewsAgreement, DropoutInInferenceWithItsMask) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (Precision precision : test::kFloatPrecisions) {
    SCOPED_TRACE(toString(precision));
    const std::vector<int64_t> dims = {3, 17};
    {  // opset 13: ratio and training_mode inputs, bool mask
      ModelBuilder mb;
      mb.input("x", kFloat, dims).output("y").output("mask").output("plain");
      mb.initializer("ratio", HostTensor::scalar<float>(0.25f)).initializer("training", HostTensor::scalar<bool>(false));
      mb.node("Dropout", {"x", "ratio", "training"}, {"y", "mask"}, "dropout");
      mb.node("Dropout", {"x"}, {"plain"}, "dropout_plain");
      test::expectBackendsAgree(mb.bytes(), {{"x", test::randomFloats(dims, 15)}}, precision);
    }
    {  // opset 7: the mask has the data's type (stored fp16 in an fp16 engine)
      ModelBuilder mb(7);
      mb.input("x", kFloat, dims).output("y").output("mask");
      ModelBuilder::setFloat(mb.node("Dropout", {"x"}, {"y", "mask"}, "dropout"), "ratio", 0.3f);
      test::expectBackendsAgree(mb.bytes(), {{"x", test::randomFloats(dims, 16)}}, precision);
    }
  }
}

// A training_mode computed at run time cannot be checked before launch: the CPU runs that Dropout.
TEST(ViewsAgreement, DropoutWithTrainingModeFromDataRunsOnTheCpu) {
  KILN_REQUIRE_CUDA_BACKEND();
  ModelBuilder mb;
  mb.input("x", kFloat, {4, 5}).input("training", kBool, {}).output("y");
  mb.node("Dropout", {"x", "", "training"}, {"y"}, "dropout");
  const auto agreement = test::expectBackendsAgree(
      mb.bytes(), {{"x", test::randomFloats({4, 5}, 17)}, {"training", HostTensor::scalar<bool>(false)}},
      Precision::kFP32, /*requireEveryLayerOnGpu=*/false);
  EXPECT_FALSE(agreement.everyLayerOnGpu);
}

}  // namespace
