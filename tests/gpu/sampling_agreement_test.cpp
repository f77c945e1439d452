// CPU and CUDA engines agree on GridSample (every mode, padding and align_corners, opset 16 and 20
// names), RoiAlign (avg / max, both coordinate modes, opset 10's default) and MaxUnpool (with and
// without output_shape, after the MaxPool whose indices it takes), in fp32 and fp16, odd sizes
// and batch 1.
#include <kiln/shape.h>

#include "gpu/agreement_models.h"
#include "gpu/backend_agreement.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace kiln;
using kiln::test::ModelBuilder;
using namespace kiln::test::onnx_types;

namespace {

// Grid positions on a 1/64 step: exact in fp16, so both engines pick the same nearest pixel.
HostTensor gridPositions(const std::vector<int64_t>& dims, uint32_t seed, float limit) {
  HostTensor t = test::randomFloats(dims, seed, -limit, limit);
  for (int64_t i = 0; i < t.elementCount(); ++i) t.data<float>()[i] = std::round(t.data<float>()[i] * 64) / 64;
  return t;
}

TEST(SamplingAgreement, GridSampleInEveryModeAndPadding) {
  KILN_REQUIRE_CUDA_BACKEND();
  struct Shape {
    std::vector<int64_t> x, grid;
  };
  for (const Shape& shape : std::vector<Shape>{{{1, 1, 3, 2}, {1, 2, 4, 2}}, {{2, 3, 7, 5}, {2, 5, 3, 2}}})
    for (const char* mode : {"bilinear", "nearest", "bicubic"})
      for (const char* padding : {"zeros", "border", "reflection"})
        for (int align : {0, 1})
          for (Precision precision : test::kFloatPrecisions) {
            SCOPED_TRACE(dimsToString(shape.x) + " " + mode + " " + padding + " align " + std::to_string(align) + " " +
                         toString(precision));
            ModelBuilder mb(16);
            mb.input("x", kFloat, shape.x).input("grid", kFloat, shape.grid).output("y");
            auto& node = mb.node("GridSample", {"x", "grid"}, {"y"}, "grid_sample");
            ModelBuilder::setString(node, "mode", mode);
            ModelBuilder::setString(node, "padding_mode", padding);
            ModelBuilder::setInt(node, "align_corners", align);
            test::expectBackendsAgree(mb.bytes(), {{"x", test::randomFloats(shape.x, 61, -2.0f, 2.0f)},
                                                   {"grid", gridPositions(shape.grid, 62, 1.3f)}},
                                      precision);
          }
}

TEST(SamplingAgreement, GridSampleOpset20Names) {
  KILN_REQUIRE_CUDA_BACKEND();
  for (const char* mode : {"linear", "cubic"}) {
    ModelBuilder mb(20);
    mb.input("x", kFloat, {1, 2, 5, 5}).input("grid", kFloat, {1, 3, 3, 2}).output("y");
    ModelBuilder::setString(mb.node("GridSample", {"x", "grid"}, {"y"}, "grid_sample"), "mode", mode);
    test::expectBackendsAgree(mb.bytes(), {{"x", test::randomFloats({1, 2, 5, 5}, 63)},
                                           {"grid", gridPositions({1, 3, 3, 2}, 64, 1.0f)}});
  }
}

TEST(SamplingAgreement, RoiAlignAverageAndMax) {
  KILN_REQUIRE_CUDA_BACKEND();
  const HostTensor rois = HostTensor::fromVector<float>({3, 4}, {0, 0, 9, 9, 0, 5, 4, 9, 5.5f, 1.5f, 8.25f, 7.75f});
  for (int64_t opset : {10, 16})
    for (const char* mode : {"avg", "max"})
      for (const char* coordinates : {"", "half_pixel", "output_half_pixel"})
        for (Precision precision : test::kFloatPrecisions) {
          if (opset == 10 && *coordinates) continue;  // opset 10 has no coordinate_transformation_mode
          SCOPED_TRACE(std::to_string(opset) + " " + mode + " '" + coordinates + "' " + toString(precision));
          ModelBuilder mb(opset);
          mb.input("x", kFloat, {2, 3, 10, 9}).input("rois", kFloat, {3, 4}).input("batch", kInt64, {3}).output("y");
          auto& node = mb.node("RoiAlign", {"x", "rois", "batch"}, {"y"}, "roi_align");
          ModelBuilder::setString(node, "mode", mode);
          if (*coordinates) ModelBuilder::setString(node, "coordinate_transformation_mode", coordinates);
          ModelBuilder::setInt(node, "output_height", 5);
          ModelBuilder::setInt(node, "output_width", 3);
          ModelBuilder::setInt(node, "sampling_ratio", opset == 10 ? 0 : 2);
          ModelBuilder::setFloat(node, "spatial_scale", 0.75f);
          test::expectBackendsAgree(mb.bytes(), {{"x", test::randomFloats({2, 3, 10, 9}, 65, -1.0f, 3.0f)},
                                                 {"rois", rois},
                                                 {"batch", test::int64s({3}, {0, 1, 1})}},
                                    precision);
        }
}

TEST(SamplingAgreement, MaxUnpoolAfterMaxPoolWithAndWithoutOutputShape) {
  KILN_REQUIRE_CUDA_BACKEND();
  // Spatial sizes twice the pooled ones (odd pooled sizes included): MaxPool's indices address its
  // input, and MaxUnpool reads them in the size it infers, so an input of odd size has no inverse.
  for (const std::vector<int64_t>& dims : {std::vector<int64_t>{1, 1, 4, 4}, {2, 3, 6, 10}, {1, 5, 10, 14}})
    for (Precision precision : test::kFloatPrecisions) {
      SCOPED_TRACE(dimsToString(dims) + " " + toString(precision));
      ModelBuilder mb(11);
      mb.input("x", kFloat, dims).output("unpooled").output("unpooled_larger");
      auto& pool = mb.node("MaxPool", {"x"}, {"pooled", "indices"}, "pool");
      ModelBuilder::setInts(pool, "kernel_shape", {2, 2});
      ModelBuilder::setInts(pool, "strides", {2, 2});
      auto& unpool = mb.node("MaxUnpool", {"pooled", "indices"}, {"unpooled"}, "unpool");
      ModelBuilder::setInts(unpool, "kernel_shape", {2, 2});
      ModelBuilder::setInts(unpool, "strides", {2, 2});
      mb.initializer("shape", test::int64s({4}, {dims[0], dims[1], dims[2] + 1, dims[3] + 2}));
      auto& larger = mb.node("MaxUnpool", {"pooled", "indices", "shape"}, {"unpooled_larger"}, "unpool_larger");
      ModelBuilder::setInts(larger, "kernel_shape", {2, 2});
      ModelBuilder::setInts(larger, "strides", {2, 2});
      test::expectBackendsAgree(mb.bytes(), {{"x", test::randomFloats(dims, 66)}}, precision);
    }
}

}  // namespace
