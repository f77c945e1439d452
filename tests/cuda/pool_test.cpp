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
    {"2-d stem", {24, 25}, {3, 3}, {2, 2}, {}, {1, 1, 1, 1}},
    {"3-d", {5, 6, 7}, {2, 3, 2}, {2, 1, 2}, {1, 1, 2}, {1, 0, 1, 0, 1, 1}, AutoPad::kNotSet, true},
};

// 32 channels: whole 16-byte vectors of fp16 / bf16 (8) and int8 (16) channels-last, the wide path.
const std::vector<std::pair<int64_t, int64_t>> kBatchChannels{{1, 1}, {2, 3}, {1, 33}, {2, 32}};

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
  EXPECT_EQ(int64_t(v.size()), n * c * s);
  if (int64_t(v.size()) != n * c * s) return v;
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

// The CPU kernel on channels-first values, computing as the engine's CPU op does: in double for
// float64 (`wide`), else in float; `indices` for max.
template <class T>
std::vector<double> cpuPoolAs(const PoolOp& op, const PoolWindow& w, int64_t planes, const std::vector<double>& x,
                              std::vector<int64_t>* indices, bool columnMajor) {
  const std::vector<T> in(x.begin(), x.end());
  std::vector<T> out(static_cast<size_t>(planes * w.outSize()));
  const cpu::SpatialWindow s = cpuWindow(w);
  if (indices) indices->assign(out.size(), -1);
  switch (op.kind) {
    case PoolKind::kMax:
      cpu::maxPool(s, planes, in.data(), out.data(), indices ? indices->data() : nullptr, columnMajor);
      break;
    case PoolKind::kAverage: cpu::averagePool(s, planes, in.data(), out.data(), op.countIncludePad); break;
    case PoolKind::kLp: cpu::lpPool(s, planes, in.data(), out.data(), op.p); break;
  }
  return std::vector<double>(out.begin(), out.end());
}

std::vector<double> cpuPool(const PoolOp& op, const PoolWindow& w, int64_t planes, const std::vector<double>& x,
                            std::vector<int64_t>* indices, bool columnMajor, bool wide = false) {
  return wide ? cpuPoolAs<double>(op, w, planes, x, indices, columnMajor)
              : cpuPoolAs<float>(op, w, planes, x, indices, columnMajor);
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

namespace {

const ElementType kPoolFloatTypes[] = {ElementType::kFloat32, ElementType::kFloat16, ElementType::kBFloat16,
                                       ElementType::kFloat64};

double tolerancePooling(ElementType type) {
  return type == ElementType::kFloat64 ? 1e-10 : std::max(1e-5, toleranceFor(type));
}

// One windowed pool run of the GPU tests: its input bytes (in the run's layout) and what the CPU
// kernel gives (values in the layout's order; indices for max).
struct WindowedRun {
  std::string name;
  PoolOp op;
  PoolWindow w;
  int64_t n = 1, c = 1;
  PoolLayout layout = PoolLayout::kChannelsFirst;
  ElementType type = ElementType::kFloat32;
  bool columnMajor = false;
  Bytes input;
  std::vector<double> expected;
  std::vector<int64_t> expectedIndices;
};

template <class Fn>
void forEachWindowedRun(Fn&& fn) {
  for (const WindowCase& wc : kWindows)
    for (auto [n, c] : kBatchChannels)
      for (const PoolOp& op : kOps)
        for (PoolLayout layout : {PoolLayout::kChannelsFirst, PoolLayout::kChannelsLast})
          for (ElementType type : {ElementType::kFloat32, ElementType::kFloat16, ElementType::kBFloat16,
                                   ElementType::kFloat64, ElementType::kInt8, ElementType::kUInt8}) {
            const bool integer = type == ElementType::kInt8 || type == ElementType::kUInt8;
            if (integer && op.kind != PoolKind::kMax) continue;
            WindowedRun r;
            r.op = op, r.n = n, r.c = c, r.layout = layout, r.type = type, r.columnMajor = n == 2;
            const bool last = layout == PoolLayout::kChannelsLast;
            r.name = wc.name + " " + op.name + " n " + std::to_string(n) + " c " + std::to_string(c) +
                     (last ? " channels-last " : " ") + toString(type);
            r.w = windowOf(wc);
            const Bytes xBytes = randomElements(type, n * c * r.w.inSize(), 8);
            const std::vector<double> x = valuesOf(xBytes, type);  // as the CPU kernel sees them
            r.expected = cpuPool(op, r.w, n * c, x, op.kind == PoolKind::kMax ? &r.expectedIndices : nullptr,
                                 r.columnMajor, type == ElementType::kFloat64);
            if (last) {
              r.expected = toChannelsLast(r.expected, n, c, r.w.outSize());
              if (!r.expectedIndices.empty()) {
                const std::vector<double> wide(r.expectedIndices.begin(), r.expectedIndices.end());
                const std::vector<double> moved = toChannelsLast(wide, n, c, r.w.outSize());
                r.expectedIndices.assign(moved.begin(), moved.end());
              }
            }
            r.input = last ? fromValues(toChannelsLast(x, n, c, r.w.inSize()), type) : xBytes;
            fn(r);
          }
}

struct GlobalRun {
  std::string name;
  GlobalPoolKind kind;
  int64_t n = 1, c = 1, spatial = 1;
  float p = 2;
  PoolLayout layout = PoolLayout::kChannelsFirst;
  ElementType type = ElementType::kFloat32;
  Bytes input;
  std::vector<double> expected;  // the CPU kernel's float result rounded to the type
};

template <class Fn>
void forEachGlobalRun(Fn&& fn) {
  const std::pair<GlobalPoolKind, cpu::GlobalPoolKind> kinds[] = {
      {GlobalPoolKind::kAverage, cpu::GlobalPoolKind::kAverage},
      {GlobalPoolKind::kMax, cpu::GlobalPoolKind::kMax},
      {GlobalPoolKind::kLp, cpu::GlobalPoolKind::kLp}};
  for (int64_t spatial : {1, 7, 49, 1001, 5000})
    for (auto [n, c] : {std::pair<int64_t, int64_t>{1, 1}, {2, 3}, {3, 33}, {1, 70}, {2, 144}, {1, 40}})
      for (auto [kind, cpuKind] : kinds)
        if (spatial < 5000 || n * c < 10)  // large planes (a block each): few are enough
          for (PoolLayout layout : {PoolLayout::kChannelsFirst, PoolLayout::kChannelsLast})
            for (ElementType type : kPoolFloatTypes) {
              GlobalRun r;
              r.kind = kind, r.n = n, r.c = c, r.spatial = spatial, r.layout = layout, r.type = type;
              r.p = kind == GlobalPoolKind::kLp ? 3.0f : 2.0f;
              const bool last = layout == PoolLayout::kChannelsLast;
              r.name = "spatial " + std::to_string(spatial) + " n " + std::to_string(n) + " c " + std::to_string(c) +
                       " kind " + std::to_string(int(kind)) + (last ? " channels-last " : " ") + toString(type);
              const Bytes xBytes = randomElements(type, n * c * spatial, 9);
              const std::vector<double> x = valuesOf(xBytes, type);
              auto reference = [&](auto tag) {  // double for float64, as the engine's CPU op computes
                using T = decltype(tag);
                const std::vector<T> in(x.begin(), x.end());
                std::vector<T> out(static_cast<size_t>(n * c));
                cpu::globalPool(cpuKind, n * c, spatial, in.data(), out.data(), r.p);
                return std::vector<double>(out.begin(), out.end());
              };
              r.expected = valuesOf(
                  fromValues(type == ElementType::kFloat64 ? reference(double{}) : reference(float{}), type), type);
              r.input = last ? fromValues(toChannelsLast(x, n, c, spatial), type) : xBytes;
              fn(r);
            }
}

}  // namespace

// The GPU tests' inputs and expectations, checked on the host: the kernels' per-output math on
// the same bytes gives the expected values and indices, and plain loops give the global pools.
TEST(CudaPoolHost, GpuExpectationsAgreeWithTheKernelMath) {
  forEachWindowedRun([](const WindowedRun& r) {
    SCOPED_TRACE(r.name);
    PoolParams params = paramsOf(r.op, r.w, r.n, r.c, r.layout, r.columnMajor);
    const std::vector<double> in = valuesOf(r.input, r.type);
    std::vector<double> values;
    std::vector<int64_t> indices;
    for (int64_t i = 0; i < params.count(); ++i) {
      const Pooled<double> p = poolAt<double>(params, i, [&](int64_t at) { return in[size_t(at)]; });
      values.push_back(p.value);
      indices.push_back(p.index);
    }
    if (r.op.kind == PoolKind::kMax) {
      EXPECT_TRUE(sameElements(fromValues(values, r.type), fromValues(r.expected, r.type), elementBytes(r.type)));
      EXPECT_EQ(indices, r.expectedIndices);
    } else {
      EXPECT_TRUE(closeValues(valuesOf(fromValues(values, r.type), r.type),
                              valuesOf(fromValues(r.expected, r.type), r.type), tolerancePooling(r.type)));
    }
  });
  forEachGlobalRun([](const GlobalRun& r) {
    SCOPED_TRACE(r.name);
    const std::vector<double> in = valuesOf(r.input, r.type);
    std::vector<double> values;
    for (int64_t b = 0; b < r.n; ++b)
      for (int64_t ch = 0; ch < r.c; ++ch) {
        double acc = r.kind == GlobalPoolKind::kMax ? -1e300 : 0;
        for (int64_t s = 0; s < r.spatial; ++s) {
          const double v = in[size_t(r.layout == PoolLayout::kChannelsLast ? (b * r.spatial + s) * r.c + ch
                                                                           : (b * r.c + ch) * r.spatial + s)];
          if (r.kind == GlobalPoolKind::kMax)
            acc = std::max(acc, v);
          else
            acc += r.kind == GlobalPoolKind::kLp ? std::pow(std::abs(v), r.p) : v;
        }
        if (r.kind == GlobalPoolKind::kAverage) acc /= double(r.spatial);
        if (r.kind == GlobalPoolKind::kLp) acc = std::pow(acc, 1.0 / r.p);
        values.push_back(acc);
      }
    EXPECT_TRUE(closeValues(valuesOf(fromValues(values, r.type), r.type), r.expected, tolerancePooling(r.type)));
  });
}

// ----------------------------------------------------------------------------------------------
// GPU tests

TEST(CudaPool, WindowedPoolsMatchTheCpuKernels) {
  KILN_REQUIRE_GPU();
  forEachWindowedRun([](const WindowedRun& r) {
    SCOPED_TRACE(r.name);
    const int64_t outCount = r.n * r.c * r.w.outSize();
    DeviceBuffer src(r.input), dst(byteSize(r.type, outCount)), idx(static_cast<size_t>(outCount) * 8);
    switch (r.op.kind) {
      case PoolKind::kMax:
        KILN_CUDA_OK(
            maxPool(src.get(), dst.get(), idx.as<int64_t>(), r.columnMajor, r.n, r.c, r.w, r.layout, r.type, nullptr));
        break;
      case PoolKind::kAverage:
        KILN_CUDA_OK(averagePool(src.get(), dst.get(), r.n, r.c, r.w, r.op.countIncludePad, r.layout, r.type, nullptr));
        break;
      case PoolKind::kLp:
        KILN_CUDA_OK(lpPool(src.get(), dst.get(), r.n, r.c, r.w, r.op.p, r.layout, r.type, nullptr));
        break;
    }
    const Bytes out = dst.download();
    if (r.op.kind == PoolKind::kMax) {  // a maximum is one of the inputs: exact
      EXPECT_TRUE(sameElements(out, fromValues(r.expected, r.type), elementBytes(r.type)));
      const Bytes got = idx.download();
      std::vector<int64_t> indices(static_cast<size_t>(outCount));
      std::memcpy(indices.data(), got.data(), got.size());
      EXPECT_EQ(indices, r.expectedIndices);
      // Without indices the 2-D pools take their own kernels (channels-last 16-byte vectors among them).
      DeviceBuffer plain(byteSize(r.type, outCount));
      KILN_CUDA_OK(maxPool(src.get(), plain.get(), nullptr, false, r.n, r.c, r.w, r.layout, r.type, nullptr));
      EXPECT_TRUE(sameElements(plain.download(), fromValues(r.expected, r.type), elementBytes(r.type))) << "no indices";
    } else {
      // Rounding the CPU's float result to the type once is the best the type can hold.
      const std::vector<double> rounded = valuesOf(fromValues(r.expected, r.type), r.type);
      EXPECT_TRUE(closeValues(valuesOf(out, r.type), rounded, tolerancePooling(r.type)));
    }
  });
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
  forEachGlobalRun([](const GlobalRun& r) {
    SCOPED_TRACE(r.name);
    DeviceBuffer src(r.input), dst(byteSize(r.type, r.n * r.c));
    KILN_CUDA_OK(globalPool(r.kind, src.get(), dst.get(), r.n, r.c, r.spatial, r.p, r.layout, r.type, nullptr));
    const Bytes out = dst.download();
    if (r.kind == GlobalPoolKind::kMax)
      EXPECT_TRUE(sameElements(out, fromValues(r.expected, r.type), elementBytes(r.type)));
    else
      EXPECT_TRUE(closeValues(valuesOf(out, r.type), r.expected, tolerancePooling(r.type)));
  });
}

// With the workspace the kernel asks for, few images' positions are split over more blocks and the
// partial results added in a second kernel: the same results, for every kind, type and split count
// the runs make (1001 positions of 40 or 144 channels-last channels split three ways).
TEST(CudaPool, GlobalPoolsSplitOverBlocksMatchTheCpuKernel) {
  KILN_REQUIRE_GPU();
  int split = 0;
  forEachGlobalRun([&](const GlobalRun& r) {
    SCOPED_TRACE(r.name);
    const uint64_t workspaceBytes = globalPoolWorkspaceBytes(r.n, r.c, r.spatial, r.layout, r.type);
    if (workspaceBytes == 0) return;
    ++split;
    DeviceBuffer src(r.input), dst(byteSize(r.type, r.n * r.c)), workspace(workspaceBytes);
    KILN_CUDA_OK(globalPool(r.kind, src.get(), dst.get(), r.n, r.c, r.spatial, r.p, r.layout, r.type, nullptr,
                            workspace.get(), workspaceBytes));
    const Bytes out = dst.download();
    if (r.kind == GlobalPoolKind::kMax)
      EXPECT_TRUE(sameElements(out, fromValues(r.expected, r.type), elementBytes(r.type)));
    else
      EXPECT_TRUE(closeValues(valuesOf(out, r.type), r.expected, tolerancePooling(r.type)));
  });
  EXPECT_GT(split, 0) << "no run split its positions over blocks";
}
