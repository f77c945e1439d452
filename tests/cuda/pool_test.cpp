// The CUDA pooling kernels against the CPU kernels (kernels/cpu/pool): MaxPool with Indices,
// AveragePool, LpPool and the global pools, channels-first and channels-last, 1-, 2- and 3-D.
// Host-only tests check the output-size rules and run the kernels' per-output math on the host.
#include "layout_test_support.h"

#include <kernels/cpu/common/spatial_window.h>
#include <kernels/cpu/pool/pool.h>
#include <kernels/cuda/pool/pool.h>

using namespace kiln::kernels::cuda;
using namespace kiln::test;
namespace cpu = kiln::kernels;

namespace {

using Dims = std::vector<int64_t>;

struct WindowCase {
  std::string name;
  Dims in, kernel, strides, dilations, pads;
  AutoPad autoPad = AutoPad::kNotSet;
  bool ceilMode = false;
};

const std::vector<WindowCase> kWindows{
    {"1-d k3 s2 pads 1,0", {33}, {3}, {2}, {}, {1, 0}},
    {"1-d whole", {7}, {7}, {}, {}, {}},
    {"2-d k3 pad 1", {7, 9}, {3, 3}, {1, 1}, {}, {1, 1, 1, 1}},
    {"2-d k2x3 s2 d1x2 asymmetric ceil", {33, 17}, {2, 3}, {2, 2}, {1, 2}, {0, 1, 1, 0}, AutoPad::kNotSet, true},
    {"2-d SAME_UPPER", {8, 8}, {3, 3}, {2, 2}, {}, {}, AutoPad::kSameUpper},
    {"2-d SAME_LOWER", {9, 10}, {4, 4}, {3, 3}, {}, {}, AutoPad::kSameLower},
    {"2-d VALID ceil", {10, 11}, {3, 2}, {3, 2}, {}, {1, 1, 1, 1}, AutoPad::kValid, true},
    {"2-d 1x1", {1, 1}, {1, 1}, {}, {}, {}},
    {"2-d stem", {56, 56}, {3, 3}, {2, 2}, {}, {1, 1, 1, 1}},
    {"3-d", {5, 6, 7}, {2, 3, 2}, {2, 1, 2}, {1, 1, 2}, {1, 0, 1, 0, 1, 1}, AutoPad::kNotSet, true},
};

const std::vector<std::pair<int64_t, int64_t>> kBatchChannels{{1, 1}, {2, 3}, {1, 33}};

PoolWindow windowOf(const WindowCase& c) {
  const auto w = makePoolWindow(c.in, c.kernel, c.strides, c.dilations, c.pads, c.autoPad, c.ceilMode);
  EXPECT_TRUE(w.has_value()) << c.name;
  return w.value_or(PoolWindow{});
}

cpu::SpatialWindow cpuWindow(const PoolWindow& w) {
  cpu::SpatialWindow s;
  for (int a = 0; a < 3; ++a) {
    s.in[a] = w.in[a], s.out[a] = w.out[a], s.kernel[a] = w.kernel[a], s.stride[a] = w.stride[a];
    s.dilation[a] = w.dilation[a], s.padBegin[a] = w.padBegin[a], s.padEnd[a] = w.padEnd[a];
  }
  return s;
}

// [n, c, s] <-> [n, s, c] on values.
std::vector<double> toChannelsLast(const std::vector<double>& v, int64_t n, int64_t c, int64_t s) {
  std::vector<double> out(v.size());
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < s; ++p) out[size_t((b * s + p) * c + ch)] = v[size_t((b * c + ch) * s + p)];
  return out;
}

struct PoolOp {
  std::string name;
  PoolKind kind;
  bool countIncludePad = false;
  float p = 2;
};

const std::vector<PoolOp> kOps{{"max", PoolKind::kMax},
                               {"average", PoolKind::kAverage},
                               {"average count_include_pad", PoolKind::kAverage, true},
                               {"lp p=1", PoolKind::kLp, false, 1},
                               {"lp p=2", PoolKind::kLp, false, 2},
                               {"lp p=3", PoolKind::kLp, false, 3}};

// The CPU kernel on channels-first float values; `indices` for max.
std::vector<double> cpuPool(const PoolOp& op, const PoolWindow& w, int64_t planes, const std::vector<double>& x,
                            std::vector<int64_t>* indices, bool columnMajor) {
  const std::vector<float> in(x.begin(), x.end());
  std::vector<float> out(size_t(planes * w.outSize()));
  const cpu::SpatialWindow s = cpuWindow(w);
  if (indices) indices->assign(out.size(), -1);
  switch (op.kind) {
    case PoolKind::kMax:
      cpu::maxPool(s, planes, in.data(), out.data(), indices ? indices->data() : nullptr, columnMajor);
      break;
    case PoolKind::kAverage:
      cpu::averagePool(s, planes, in.data(), out.data(), op.countIncludePad);
      break;
    case PoolKind::kLp:
      cpu::lpPool(s, planes, in.data(), out.data(), op.p);
      break;
  }
  return std::vector<double>(out.begin(), out.end());
}

PoolParams paramsOf(const PoolOp& op, const PoolWindow& w, int64_t n, int64_t c, PoolLayout layout, bool columnMajor) {
  PoolParams p;
  p.w = w;
  p.batch = n;
  p.channels = c;
  p.layout = layout;
  p.kind = op.kind;
  p.countIncludePad = op.countIncludePad;
  p.columnMajorIndices = columnMajor;
  p.p = op.p;
  return p;
}

std::vector<double> randomValues(int64_t count, uint32_t seed) {
  return valuesOf(randomElements(ElementType::kFloat32, count, seed), ElementType::kFloat32);
}

// Random inputs of `type` that float holds exactly (the CPU pools float64 through float).
Bytes poolInput(ElementType type, int64_t count, uint32_t seed) {
  if (type != ElementType::kFloat64) return randomElements(type, count, seed);
  return fromValues(randomValues(count, seed), type);
}

}  // namespace

TEST(CudaPoolHost, OutputSizesFollowOnnx) {
  int64_t b = 0, e = 0, out = 0;
  ASSERT_TRUE(poolAxis(7, 3, 2, 1, AutoPad::kNotSet, false, b, e, out));
  EXPECT_EQ(out, 3);
  b = e = 0;
  ASSERT_TRUE(poolAxis(8, 3, 2, 1, AutoPad::kNotSet, true, b, e, out));
  EXPECT_EQ(out, 4);  // ceil((8 - 3) / 2) + 1
  b = 0, e = 2;
  ASSERT_TRUE(poolAxis(6, 3, 2, 1, AutoPad::kNotSet, true, b, e, out));
  EXPECT_EQ(out, 3);  // a fourth window would start in the end padding
  ASSERT_TRUE(poolAxis(7, 3, 2, 1, AutoPad::kSameUpper, false, b, e, out));
  EXPECT_EQ(out, 4);
  EXPECT_EQ(b, 1);
  EXPECT_EQ(e, 1);
  ASSERT_TRUE(poolAxis(10, 4, 3, 1, AutoPad::kSameLower, false, b, e, out));
  EXPECT_EQ(out, 4);  // total padding 3: two before, one after
  EXPECT_EQ(b, 2);
  EXPECT_EQ(e, 1);
  b = e = 1;
  ASSERT_TRUE(poolAxis(9, 3, 1, 2, AutoPad::kValid, false, b, e, out));
  EXPECT_EQ(out, 5);  // dilated kernel spans 5; VALID drops the pads
  EXPECT_EQ(b, 0);
  b = e = 0;
  EXPECT_FALSE(poolAxis(2, 3, 1, 1, AutoPad::kNotSet, false, b, e, out));  // larger than the input
  EXPECT_FALSE(makePoolWindow({4, 4}, {2}, {}, {}, {}, AutoPad::kNotSet, false).has_value());
  const auto w = makePoolWindow({9}, {3}, {2}, {}, {1, 1}, AutoPad::kNotSet, false);
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->in[0], 1);
  EXPECT_EQ(w->in[2], 9);
  EXPECT_EQ(w->out[2], 5);
}

// The per-output math the GPU runs, on the host, against the CPU kernels in both layouts.
TEST(CudaPoolHost, PerOutputMathMatchesTheCpuKernels) {
  for (const WindowCase& wc : kWindows)
    for (auto [n, c] : kBatchChannels)
      for (const PoolOp& op : kOps)
        for (PoolLayout layout : {PoolLayout::kChannelsFirst, PoolLayout::kChannelsLast})
          for (bool columnMajor : {false, true}) {
            if (columnMajor && op.kind != PoolKind::kMax) continue;
            SCOPED_TRACE(wc.name + " " + op.name + " n " + std::to_string(n) + " c " + std::to_string(c) +
                         (layout == PoolLayout::kChannelsLast ? " channels-last" : "") +
                         (columnMajor ? " column-major" : ""));
            const PoolWindow w = windowOf(wc);
            const std::vector<double> x = randomValues(n * c * w.inSize(), 7);
            std::vector<int64_t> expectedIndices;
            std::vector<double> expected =
                cpuPool(op, w, n * c, x, op.kind == PoolKind::kMax ? &expectedIndices : nullptr, columnMajor);
            const bool last = layout == PoolLayout::kChannelsLast;
            const std::vector<double> in = last ? toChannelsLast(x, n, c, w.inSize()) : x;
            if (last) {
              expected = toChannelsLast(expected, n, c, w.outSize());
              if (!expectedIndices.empty()) {
                const std::vector<double> wide(expectedIndices.begin(), expectedIndices.end());
                const std::vector<double> moved = toChannelsLast(wide, n, c, w.outSize());
                expectedIndices.assign(moved.begin(), moved.end());
              }
            }
            const PoolParams params = paramsOf(op, w, n, c, layout, columnMajor);
            std::vector<double> actual;
            std::vector<int64_t> indices;
            for (int64_t i = 0; i < params.count(); ++i) {
              const Pooled<float> r = poolAt<float>(params, i, [&](int64_t at) { return float(in[size_t(at)]); });
              actual.push_back(r.value);
              indices.push_back(r.index);
            }
            if (op.kind == PoolKind::kMax) {
              EXPECT_EQ(actual, expected);
              EXPECT_EQ(indices, expectedIndices);
            } else {
              EXPECT_TRUE(closeValues(actual, expected, 1e-6));
            }
          }
}

// ----------------------------------------------------------------------------------------------
// GPU tests

namespace {

const ElementType kPoolFloatTypes[] = {ElementType::kFloat32, ElementType::kFloat16, ElementType::kBFloat16,
                                       ElementType::kFloat64};

}  // namespace

TEST(CudaPool, WindowedPoolsMatchTheCpuKernels) {
  KILN_REQUIRE_GPU();
  for (const WindowCase& wc : kWindows)
    for (auto [n, c] : kBatchChannels)
      for (const PoolOp& op : kOps)
        for (PoolLayout layout : {PoolLayout::kChannelsFirst, PoolLayout::kChannelsLast})
          for (ElementType type : {ElementType::kFloat32, ElementType::kFloat16, ElementType::kBFloat16,
                                   ElementType::kFloat64, ElementType::kInt8, ElementType::kUInt8}) {
            const bool integer = type == ElementType::kInt8 || type == ElementType::kUInt8;
            if (integer && op.kind != PoolKind::kMax) continue;
            const bool last = layout == PoolLayout::kChannelsLast, columnMajor = n == 2;
            SCOPED_TRACE(wc.name + " " + op.name + " n " + std::to_string(n) + " c " + std::to_string(c) +
                         (last ? " channels-last " : " ") + toString(type));
            const PoolWindow w = windowOf(wc);
            const Bytes xBytes = poolInput(type, n * c * w.inSize(), 8);
            const std::vector<double> x = valuesOf(xBytes, type);  // as the CPU kernel sees them
            std::vector<int64_t> expectedIndices;
            std::vector<double> expected =
                cpuPool(op, w, n * c, x, op.kind == PoolKind::kMax ? &expectedIndices : nullptr, columnMajor);
            if (last) {
              expected = toChannelsLast(expected, n, c, w.outSize());
              const std::vector<double> wide(expectedIndices.begin(), expectedIndices.end());
              const std::vector<double> moved = toChannelsLast(wide, n, c, w.outSize());
              expectedIndices.assign(moved.begin(), moved.end());
            }
            const Bytes in = last ? fromValues(toChannelsLast(x, n, c, w.inSize()), type) : xBytes;
            const int64_t outCount = n * c * w.outSize();
            DeviceBuffer src(in), dst(byteSize(type, outCount)), idx(size_t(outCount) * 8);
            switch (op.kind) {
              case PoolKind::kMax:
                KILN_CUDA_OK(
                    maxPool(src.get(), dst.get(), idx.as<int64_t>(), columnMajor, n, c, w, layout, type, nullptr));
                break;
              case PoolKind::kAverage:
                KILN_CUDA_OK(averagePool(src.get(), dst.get(), n, c, w, op.countIncludePad, layout, type, nullptr));
                break;
              case PoolKind::kLp:
                KILN_CUDA_OK(lpPool(src.get(), dst.get(), n, c, w, op.p, layout, type, nullptr));
                break;
            }
            const Bytes out = dst.download();
            if (op.kind == PoolKind::kMax) {  // a maximum is one of the inputs: exact
              EXPECT_TRUE(sameElements(out, fromValues(expected, type), elementBytes(type)));
              const Bytes got = idx.download();
              std::vector<int64_t> indices(static_cast<size_t>(outCount));
              std::memcpy(indices.data(), got.data(), got.size());
              EXPECT_EQ(indices, expectedIndices);
            } else {
              // Rounding the CPU's float result to the type once is the best the type can hold.
              const std::vector<double> rounded = valuesOf(fromValues(expected, type), type);
              EXPECT_TRUE(closeValues(valuesOf(out, type), rounded,
                                      type == ElementType::kFloat64 ? 1e-6 : std::max(1e-5, toleranceFor(type))));
            }
          }
}

TEST(CudaPool, MaxPoolWithoutIndicesAndRefusals) {
  KILN_REQUIRE_GPU();
  const PoolWindow w = windowOf(kWindows[2]);
  const Bytes x = randomElements(ElementType::kFloat32, 2 * 3 * w.inSize(), 1);
  std::vector<double> expected = cpuPool(kOps[0], w, 6, valuesOf(x, ElementType::kFloat32), nullptr, false);
  DeviceBuffer src(x), dst(byteSize(ElementType::kFloat32, 6 * w.outSize()));
  KILN_CUDA_OK(maxPool(src.get(), dst.get(), nullptr, false, 2, 3, w, PoolLayout::kChannelsFirst, ElementType::kFloat32,
                       nullptr));
  EXPECT_TRUE(sameElements(dst.download(), fromValues(expected, ElementType::kFloat32), 4));
  EXPECT_EQ(averagePool(src.get(), dst.get(), 2, 3, w, false, PoolLayout::kChannelsFirst, ElementType::kInt8, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(lpPool(src.get(), dst.get(), 2, 3, w, 0.0f, PoolLayout::kChannelsFirst, ElementType::kFloat32, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(maxPool(src.get(), dst.get(), nullptr, false, 0, 3, w, PoolLayout::kChannelsFirst, ElementType::kFloat32,
                    nullptr),
            cudaSuccess);
}

TEST(CudaPool, GlobalPoolsMatchTheCpuKernel) {
  KILN_REQUIRE_GPU();
  const std::pair<GlobalPoolKind, cpu::GlobalPoolKind> kinds[] = {
      {GlobalPoolKind::kAverage, cpu::GlobalPoolKind::kAverage},
      {GlobalPoolKind::kMax, cpu::GlobalPoolKind::kMax},
      {GlobalPoolKind::kLp, cpu::GlobalPoolKind::kLp}};
  for (int64_t spatial : {1, 7, 49, 1001, 5000})
    for (auto [n, c] : {std::pair<int64_t, int64_t>{1, 1}, {2, 3}, {3, 33}, {1, 70}})
      for (auto [kind, cpuKind] : kinds)
        for (PoolLayout layout : {PoolLayout::kChannelsFirst, PoolLayout::kChannelsLast})
          for (ElementType type : kPoolFloatTypes) {
            const float p = kind == GlobalPoolKind::kLp ? 3.0f : 2.0f;
            const bool last = layout == PoolLayout::kChannelsLast;
            SCOPED_TRACE("spatial " + std::to_string(spatial) + " n " + std::to_string(n) + " c " + std::to_string(c) +
                         " kind " + std::to_string(int(kind)) + (last ? " channels-last " : " ") + toString(type));
            const Bytes xBytes = poolInput(type, n * c * spatial, 9);
            const std::vector<double> x = valuesOf(xBytes, type);
            const std::vector<float> xf(x.begin(), x.end());
            std::vector<float> yf(size_t(n * c));
            cpu::globalPool(cpuKind, n * c, spatial, xf.data(), yf.data(), p);
            const std::vector<double> expected = valuesOf(fromValues({yf.begin(), yf.end()}, type), type);
            const Bytes in = last ? fromValues(toChannelsLast(x, n, c, spatial), type) : xBytes;
            DeviceBuffer src(in), dst(byteSize(type, n * c));
            KILN_CUDA_OK(globalPool(kind, src.get(), dst.get(), n, c, spatial, p, layout, type, nullptr));
            const Bytes out = dst.download();
            if (kind == GlobalPoolKind::kMax)
              EXPECT_TRUE(sameElements(out, fromValues(expected, type), elementBytes(type)));
            else
              EXPECT_TRUE(closeValues(valuesOf(out, type), expected,
                                      type == ElementType::kFloat64 ? 1e-6 : std::max(1e-5, toleranceFor(type))));
          }
}
