// The CUDA sampling kernels (kernels/cuda/sampling) against the CPU kernels: GridSample
// (kernels/cpu/sampling) in every mode, padding and align_corners, RoiAlign (kernels/cpu/pool) avg
// and max with both coordinate modes, and MaxUnpool against the CPU op's loop, with and without a
// larger output shape. float16 runs through the CPU's Float16 the same way.
#include "layout_test_support.h"

#include <kernels/cpu/common/numeric_types.h>
#include <kernels/cpu/pool/pool.h>
#include <kernels/cpu/sampling/grid_sample.h>
#include <kernels/cuda/sampling/sampling.h>

using namespace kiln::kernels::cuda;
using namespace kiln::test;
namespace cpu = kiln::kernels;

namespace {

std::vector<float> uniform(int64_t n, float lo, float hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = d(rng);
  return v;
}

std::vector<cpu::Float16> toHalf(const std::vector<float>& v) {
  std::vector<cpu::Float16> h;
  for (float x : v) h.push_back(cpu::Float16(x));
  return h;
}

std::vector<float> fromHalf(const std::vector<uint16_t>& bits) {
  std::vector<float> v;
  for (uint16_t b : bits) v.push_back(float(cpu::Float16::fromBits(b)));
  return v;
}

::testing::AssertionResult close(const std::vector<float>& got, const std::vector<float>& want, float tolerance) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << got.size() << " values, expected " << want.size();
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(got[i] - want[i]) <= tolerance * (1 + std::fabs(want[i]))))
      return ::testing::AssertionFailure() << "at " << i << ": " << got[i] << ", expected " << want[i];
  return ::testing::AssertionSuccess();
}

struct GridCase {
  int64_t batch, channels, inH, inW, outH, outW;
};

TEST(CudaGridSample, MatchesTheCpuKernelInEveryMode) {
  KILN_REQUIRE_GPU();
  const std::vector<GridCase> shapes{{1, 1, 3, 2, 2, 4}, {2, 3, 5, 7, 3, 5}, {1, 2, 1, 1, 2, 3}, {1, 1, 4, 4, 0, 3}};
  for (const auto& g : shapes)
    for (int mode = 0; mode < 3; ++mode)
      for (int padding = 0; padding < 3; ++padding)
        for (bool align : {false, true}) {
          cpu::GridSampleConfig config;
          config.batch = g.batch, config.channels = g.channels, config.inHeight = g.inH, config.inWidth = g.inW;
          config.outHeight = g.outH, config.outWidth = g.outW;
          config.mode = cpu::GridSampleMode(mode);
          config.padding = cpu::GridSamplePadding(padding);
          config.alignCorners = align;
          GridSampleShape shape;
          shape.batch = g.batch, shape.channels = g.channels, shape.inHeight = g.inH, shape.inWidth = g.inW;
          shape.outHeight = g.outH, shape.outWidth = g.outW;
          shape.mode = mode == 0 ? GridSampleMode::kLinear : mode == 1 ? GridSampleMode::kNearest : GridSampleMode::kCubic;
          shape.padding = GridSamplePadding(padding);
          shape.alignCorners = align;
          const std::string what = "mode " + std::to_string(mode) + " padding " + std::to_string(padding) +
                                   (align ? " aligned" : "") + " in " + std::to_string(g.inH) + "x" + std::to_string(g.inW);
          const std::vector<float> x = uniform(g.batch * g.channels * g.inH * g.inW, -2, 2, 3);
          const std::vector<float> grid = uniform(g.batch * g.outH * g.outW * 2, -1.4f, 1.4f, 5);  // some outside
          const int64_t outCount = g.batch * g.channels * g.outH * g.outW;
          std::vector<float> expected(static_cast<size_t>(outCount));
          cpu::gridSample2d<float>(config, x.data(), grid.data(), expected.data());
          DeviceBuffer dx(x), dg(grid), y(size_t(outCount) * 4);
          KILN_CUDA_OK(gridSample2d(dx.get(), ElementType::kFloat32, dg.get(), ElementType::kFloat32, shape, y.get(), nullptr));
          EXPECT_TRUE(close(y.read<float>(), expected, 1e-5f)) << what;

          const auto xh = toHalf(x), gh = toHalf(grid);
          std::vector<cpu::Float16> expectedHalf(static_cast<size_t>(outCount));
          cpu::gridSample2d<cpu::Float16>(config, xh.data(), gh.data(), expectedHalf.data());
          std::vector<float> expectedWide;
          for (auto h : expectedHalf) expectedWide.push_back(float(h));
          DeviceBuffer dxh(xh), dgf(grid), yh(size_t(outCount) * 2);  // an fp32 grid is rounded to half first
          KILN_CUDA_OK(gridSample2d(dxh.get(), ElementType::kFloat16, dgf.get(), ElementType::kFloat32, shape, yh.get(), nullptr));
          EXPECT_TRUE(close(fromHalf(yh.read<uint16_t>()), expectedWide, 2e-3f)) << what << " fp16";
        }
}

TEST(CudaRoiAlign, MatchesTheCpuKernel) {
  KILN_REQUIRE_GPU();
  struct Case {
    int64_t batch, channels, height, width, outH, outW, sampling;
    float scale;
  };
  for (const Case& c : std::vector<Case>{{1, 1, 10, 10, 5, 5, 2, 1.0f}, {2, 3, 9, 7, 3, 4, 0, 0.5f}, {1, 2, 6, 6, 1, 1, 0, 2.0f}})
    for (bool halfPixel : {true, false})
      for (bool maxMode : {false, true}) {
        cpu::RoiAlignParams params;
        params.channels = c.channels, params.height = c.height, params.width = c.width;
        params.outputH = c.outH, params.outputW = c.outW, params.samplingRatio = c.sampling;
        params.spatialScale = c.scale, params.halfPixel = halfPixel, params.maxMode = maxMode;
        const std::vector<float> x = uniform(c.batch * c.channels * c.height * c.width, -1, 3, 9);
        const std::vector<float> rois{0, 0, 9, 9, 1.5f, 2.0f, 5.5f, 4.0f, -1, -2, 3, 12, 4, 4, 4.2f, 4.1f};
        const std::vector<int64_t> indices{0, c.batch - 1, 0, c.batch - 1};
        const int64_t count = 4 * c.channels * c.outH * c.outW;
        std::vector<float> expected(static_cast<size_t>(count));
        cpu::roiAlign<float>(params, x.data(), 4, rois.data(), indices.data(), expected.data());
        RoiAlignShape shape;
        shape.batch = c.batch, shape.channels = c.channels, shape.height = c.height, shape.width = c.width;
        shape.rois = 4, shape.outputHeight = c.outH, shape.outputWidth = c.outW, shape.samplingRatio = c.sampling;
        shape.spatialScale = c.scale, shape.halfPixel = halfPixel, shape.maxMode = maxMode;
        const std::vector<int32_t> indices32(indices.begin(), indices.end());
        DeviceBuffer dx(x), dr(rois), di(indices), di32(indices32), y(size_t(count) * 4), y32(size_t(count) * 4);
        KILN_CUDA_OK(roiAlign(dx.get(), ElementType::kFloat32, dr.get(), ElementType::kFloat32, di.get(), ElementType::kInt64,
                              shape, y.get(), nullptr));
        KILN_CUDA_OK(roiAlign(dx.get(), ElementType::kFloat32, dr.get(), ElementType::kFloat32, di32.get(),
                              ElementType::kInt32, shape, y32.get(), nullptr));
        const std::string what = std::to_string(c.height) + "x" + std::to_string(c.width) + (halfPixel ? " half_pixel" : "") +
                                 (maxMode ? " max" : " avg");
        EXPECT_TRUE(close(y.read<float>(), expected, 1e-5f)) << what;
        EXPECT_TRUE(close(y32.read<float>(), expected, 1e-5f)) << what << " int32 indices";
      }
}

TEST(CudaRoiAlign, ABatchIndexOutOfRangeGivesZeros) {
  KILN_REQUIRE_GPU();
  RoiAlignShape shape;
  shape.batch = 1, shape.channels = 2, shape.height = 4, shape.width = 4, shape.rois = 1;
  DeviceBuffer dx(std::vector<float>(32, 1.0f)), dr(std::vector<float>{0, 0, 3, 3}), di(std::vector<int64_t>{3}), y(8);
  KILN_CUDA_OK(roiAlign(dx.get(), ElementType::kFloat32, dr.get(), ElementType::kFloat32, di.get(), ElementType::kInt64,
                        shape, y.get(), nullptr));
  EXPECT_EQ(y.read<float>(), (std::vector<float>{0, 0}));
}

TEST(CudaMaxUnpool, ScattersIntoTheUnpooledShape) {
  KILN_REQUIRE_GPU();
  // x [1, 2, 2, 2] pooled from [1, 2, 4, 5] (kernel 2, stride 2 over a width of 5); output the
  // default shape, then a larger [1, 2, 5, 6] that keeps each element's coordinates.
  const std::vector<float> x{1, 2, 3, 4, 5, 6, 7, 8};
  const std::vector<int64_t> indices{0, 3, 11, 13, 21, 22, 35, 38};  // plane 1 starts at 20
  const std::vector<int64_t> pooledFrom{1, 2, 4, 5};
  for (const std::vector<int64_t>& yDims : {pooledFrom, std::vector<int64_t>{1, 2, 5, 6}, std::vector<int64_t>{1, 2, 0, 6}}) {
    std::vector<float> expected(size_t(countOf(yDims)), 0.0f);
    for (size_t i = 0; i < x.size(); ++i) {
      int64_t index = indices[i], target = 0, stride = 1;
      for (size_t a = pooledFrom.size(); a-- > 0; stride *= yDims[a]) {
        target += index % pooledFrom[a] * stride;
        index /= pooledFrom[a];
      }
      if (target < int64_t(expected.size())) expected[size_t(target)] = x[i];
    }
    DeviceBuffer dx(x), di(indices), y(expected.size() * 4);
    KILN_CUDA_OK(maxUnpool(dx.get(), di.as<int64_t>(), 8, pooledFrom.data(), yDims.data(), 4, y.get(), ElementType::kFloat32,
                           nullptr));
    std::vector<float> got = y.read<float>();
    got.resize(expected.size());
    EXPECT_EQ(got, expected);
  }
}

TEST(CudaMaxUnpool, IgnoresIndicesOutsideTheUnpooledTensor) {
  KILN_REQUIRE_GPU();
  const std::vector<int64_t> pooledFrom{1, 1, 2, 2}, dims{1, 1, 2, 2};
  DeviceBuffer dx(std::vector<uint16_t>{7, 9}), di(std::vector<int64_t>{-1, 4}), y(8);
  KILN_CUDA_OK(maxUnpool(dx.get(), di.as<int64_t>(), 2, pooledFrom.data(), dims.data(), 4, y.get(), ElementType::kFloat16,
                         nullptr));
  EXPECT_EQ(y.read<uint16_t>(), (std::vector<uint16_t>{0, 0, 0, 0}));
}

}  // namespace
