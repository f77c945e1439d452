// CPU and CUDA engines agree on Resize (nearest, linear, cubic; the coordinate rules; scales or
// sizes from weights and graph inputs; tf_crop_and_resize's roi and extrapolation; antialias;
// keep_aspect_ratio_policy on some axes), Resize-10 and Upsample (opset 7's attribute, opset 9's input).
// Scales that fp16 cannot hold (1.1, 1.3) stay float32 in fp16 engines, as shape parameters do.
#include <kiln/shape.h>

#include "gpu/agreement_models.h"
#include "gpu/backend_agreement.h"

#include <gtest/gtest.h>

using namespace kiln;
using kiln::test::ModelBuilder;
using namespace kiln::test::onnx_types;

namespace {

struct ResizeCase {
  const char* mode;
  const char* coordinates;
  std::vector<float> scales;  // empty: sizes
  std::vector<int64_t> sizes;
};

TEST(ResizeAgreement, ModesAndCoordinateRules) {
  KILN_REQUIRE_CUDA_BACKEND();
  const std::vector<ResizeCase> cases = {
      {"nearest", "half_pixel", {1, 1, 2, 1.5f}, {}},
      {"nearest", "asymmetric", {1, 1, 0.5f, 3}, {}},
      {"nearest", "tf_half_pixel_for_nn", {}, {1, 2, 7, 3}},
      {"linear", "half_pixel", {}, {1, 2, 7, 3}},
      {"linear", "align_corners", {1, 1, 1.25f, 2}, {}},
      {"linear", "pytorch_half_pixel", {}, {1, 2, 1, 9}},
      {"linear", "half_pixel_symmetric", {1, 1, 1.5f, 0.75f}, {}},
      {"linear", "asymmetric", {1, 1, 1.1f, 1.3f}, {}},
      {"cubic", "half_pixel", {1, 1, 2, 2}, {}},
      {"cubic", "asymmetric", {}, {1, 2, 3, 11}},
      {"cubic", "align_corners", {1, 1, 0.5f, 1.5f}, {}},
  };
  for (const auto& c : cases)
    for (Precision precision : test::kFloatPrecisions) {
      SCOPED_TRACE(std::string(c.mode) + " " + c.coordinates + " " + toString(precision));
      ModelBuilder mb(19);
      mb.input("x", kFloat, {1, 2, 4, 5}).output("y");
      if (c.sizes.empty()) mb.initializer("scales", HostTensor::fromVector<float>({4}, c.scales));
      else mb.initializer("sizes", test::int64s({4}, c.sizes));
      auto& node = mb.node("Resize", {"x", "", c.sizes.empty() ? "scales" : "", c.sizes.empty() ? "" : "sizes"}, {"y"},
                           "resize");
      ModelBuilder::setString(node, "mode", c.mode);
      ModelBuilder::setString(node, "coordinate_transformation_mode", c.coordinates);
      if (std::string(c.mode) == "nearest") ModelBuilder::setString(node, "nearest_mode", "round_prefer_ceil");
      test::expectBackendsAgree(mb.bytes(), {{"x", test::randomFloats({1, 2, 4, 5}, 111)}}, precision);
    }
}

TEST(ResizeAgreement, NearestRulesCubicOptionsAndAntialias) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (Precision precision : test::kFloatPrecisions) {
    SCOPED_TRACE(toString(precision));
    ModelBuilder mb(18);
    mb.input("x", kFloat, {2, 3, 7, 6}).output("floor").output("ceil").output("cubic").output("antialiased");
    mb.initializer("up", HostTensor::fromVector<float>({4}, {1, 1, 1.5f, 2.5f}));
    mb.initializer("down", HostTensor::fromVector<float>({4}, {1, 1, 0.5f, 0.75f}));
    auto& floor = mb.node("Resize", {"x", "", "up"}, {"floor"}, "resize_floor");
    ModelBuilder::setString(floor, "nearest_mode", "floor");
    auto& ceil = mb.node("Resize", {"x", "", "down"}, {"ceil"}, "resize_ceil");
    ModelBuilder::setString(ceil, "nearest_mode", "ceil");
    ModelBuilder::setString(ceil, "coordinate_transformation_mode", "align_corners");
    auto& cubic = mb.node("Resize", {"x", "", "up"}, {"cubic"}, "resize_cubic");
    ModelBuilder::setString(cubic, "mode", "cubic");
    ModelBuilder::setFloat(cubic, "cubic_coeff_a", -0.5f);
    ModelBuilder::setInt(cubic, "exclude_outside", 1);
    auto& antialias = mb.node("Resize", {"x", "", "down"}, {"antialiased"}, "resize_antialias");
    ModelBuilder::setString(antialias, "mode", "linear");
    ModelBuilder::setInt(antialias, "antialias", 1);
    test::expectBackendsAgree(mb.bytes(), {{"x", test::randomFloats({2, 3, 7, 6}, 112)}}, precision);
  }
}

TEST(ResizeAgreement, CropAndResizeWithExtrapolation) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (Precision precision : test::kFloatPrecisions)
    for (const char* mode : {"nearest", "linear"}) {
      SCOPED_TRACE(std::string(mode) + " " + toString(precision));
      ModelBuilder mb(13);
      mb.input("x", kFloat, {1, 1, 6, 8}).output("y");
      mb.initializer("roi", HostTensor::fromVector<float>({8}, {0, 0, -0.25f, 0.125f, 1, 1, 0.75f, 1.25f}));
      mb.initializer("sizes", test::int64s({4}, {1, 1, 5, 7}));
      auto& node = mb.node("Resize", {"x", "roi", "", "sizes"}, {"y"}, "crop_and_resize");
      ModelBuilder::setString(node, "mode", mode);
      ModelBuilder::setString(node, "coordinate_transformation_mode", "tf_crop_and_resize");
      ModelBuilder::setFloat(node, "extrapolation_value", -3.0f);
      test::expectBackendsAgree(mb.bytes(), {{"x", test::randomFloats({1, 1, 6, 8}, 113)}}, precision);
    }
}

// Scales and sizes as graph inputs (host shape inputs); sizes on some axes with
// keep_aspect_ratio_policy; nearest on integers, moved by size.
TEST(ResizeAgreement, HostParametersAxesAndIntegers) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (Precision precision : test::kFloatPrecisions) {
    SCOPED_TRACE(toString(precision));
    ModelBuilder mb(18);
    mb.input("x", kFloat, {1, 3, 5, 4}).input("scales", kFloat, {4}).input("sizes", kInt64, {2});
    mb.input("ints", kInt64, {2, 3, 4}).output("by_scales").output("by_sizes").output("ints_up");
    mb.initializer("int_scales", HostTensor::fromVector<float>({3}, {1, 2, 0.5f}));
    mb.node("Resize", {"x", "", "scales"}, {"by_scales"}, "resize_host_scales");
    auto& sized = mb.node("Resize", {"x", "", "", "sizes"}, {"by_sizes"}, "resize_host_sizes");
    ModelBuilder::setInts(sized, "axes", {2, 3});
    ModelBuilder::setString(sized, "keep_aspect_ratio_policy", "not_larger");
    ModelBuilder::setString(sized, "mode", "linear");
    mb.node("Resize", {"ints", "", "int_scales"}, {"ints_up"}, "resize_ints");
    std::vector<int64_t> ints(24);
    for (size_t i = 0; i < ints.size(); ++i) ints[i] = int64_t(i * 37 % 19) - 9;
    test::expectBackendsAgree(mb.bytes(), {{"x", test::randomFloats({1, 3, 5, 4}, 114)},
                                           {"scales", HostTensor::fromVector<float>({4}, {1, 1, 2, 0.5f})},
                                           {"sizes", test::int64s({2}, {9, 6})},
                                           {"ints", test::int64s({2, 3, 4}, ints)}},
                              precision);
  }
}

TEST(ResizeAgreement, Upsample) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (Precision precision : test::kFloatPrecisions) {
    SCOPED_TRACE(toString(precision));
    {
      ModelBuilder mb(7);
      mb.input("x", kFloat, {1, 2, 3, 4}).output("y");
      auto& node = mb.node("Upsample", {"x"}, {"y"}, "upsample_attr");
      auto* scales = node.add_attribute();
      scales->set_name("scales");
      scales->set_type(onnx::AttributeProto::FLOATS);
      for (float s : {1.0f, 1.0f, 2.0f, 1.5f}) scales->add_floats(s);
      ModelBuilder::setString(node, "mode", "linear");
      test::expectBackendsAgree(mb.bytes(), {{"x", test::randomFloats({1, 2, 3, 4}, 115)}}, precision);
    }
    {
      ModelBuilder mb(9);
      mb.input("x", kFloat, {2, 1, 3, 3}).output("y");
      mb.initializer("scales", HostTensor::fromVector<float>({4}, {1, 1, 3, 2}));
      mb.node("Upsample", {"x", "scales"}, {"y"}, "upsample_input");
      test::expectBackendsAgree(mb.bytes(), {{"x", test::randomFloats({2, 1, 3, 3}, 116)}}, precision);
    }
    {  // Resize before opset 11 has Upsample's rules: asymmetric, floor up and ceil down
      ModelBuilder mb(10);
      mb.input("x", kFloat, {1, 2, 5, 6}).output("y");
      mb.initializer("scales", HostTensor::fromVector<float>({4}, {1, 1, 1.5f, 0.5f}));
      mb.node("Resize", {"x", "scales"}, {"y"}, "resize_10");
      test::expectBackendsAgree(mb.bytes(), {{"x", test::randomFloats({1, 2, 5, 6}, 117)}}, precision);
    }
  }
}

}  // namespace
