// The CUDA Resize kernel against the CPU kernel (kernels/cpu/resize) over every mode,
// coordinate_transformation_mode and nearest_mode. Host-only tests run the kernel's sampling math
// on the host; GPU tests launch it.
#include "layout_test_support.h"

#include <kernels/cpu/common/numeric_types.h>
#include <kernels/cpu/resize/resize.h>
#include <kernels/cuda/resize/resize.h>
#include <kernels/cuda/resize/resize_plan.h>

using namespace kiln::kernels::cuda;
using namespace kiln::test;
namespace cpu = kiln::kernels;

namespace {

using Dims = std::vector<int64_t>;

struct Shape {
  Dims in, out;
  std::vector<double> scales;  // empty: out / in (sizes given)
};

const std::vector<Shape> kShapes{
    {{1, 3, 7, 9}, {1, 3, 14, 18}, {}},                 // 2x up, NCHW
    {{2, 3, 33, 17}, {2, 3, 16, 40}, {}},               // down and up
    {{1, 1, 11, 13}, {1, 1, 18, 5}, {1, 1, 1.7, 0.4}},  // scales that are not out / in
    {{1, 7, 9, 3}, {1, 14, 5, 3}, {}},                  // NHWC: channels copied
    {{1, 2, 5, 6, 7}, {1, 2, 3, 9, 14}, {}},            // 3-d
    {{1001}, {7}, {}},                                  // 1-d, strong downsampling
    {{7}, {15}, {}},
    {{2, 3, 4}, {2, 3, 4}, {}},  // identity
    {{1, 1, 1, 1}, {1, 1, 3, 1}, {}},
};

struct Variant {
  std::string name;
  ResizeOptions options;
};

std::vector<Variant> variants() {
  std::vector<Variant> v;
  const std::pair<const char*, ResizeNearestMode> nearest[] = {
      {"round_prefer_floor", ResizeNearestMode::kRoundPreferFloor},
      {"round_prefer_ceil", ResizeNearestMode::kRoundPreferCeil},
      {"floor", ResizeNearestMode::kFloor},
      {"ceil", ResizeNearestMode::kCeil},
      {"simple", ResizeNearestMode::kSimple}};
  for (auto [name, mode] : nearest) {
    ResizeOptions o;
    o.nearest = mode;
    v.push_back({std::string("nearest ") + name, o});
  }
  ResizeOptions linear;
  linear.mode = ResizeMode::kLinear;
  v.push_back({"linear", linear});
  ResizeOptions cubic;
  cubic.mode = ResizeMode::kCubic;
  v.push_back({"cubic", cubic});
  ResizeOptions cubicHalf = cubic;
  cubicHalf.cubicCoeffA = -0.5f;
  cubicHalf.excludeOutside = true;
  v.push_back({"cubic a=-0.5 exclude_outside", cubicHalf});
  ResizeOptions linearAA = linear;
  linearAA.antialias = true;
  v.push_back({"linear antialias", linearAA});
  ResizeOptions cubicAA = cubic;
  cubicAA.antialias = true;
  v.push_back({"cubic antialias", cubicAA});
  return v;
}

const std::pair<const char*, ResizeCoordinateMode> kCoordinateModes[] = {
    {"half_pixel", ResizeCoordinateMode::kHalfPixel},
    {"half_pixel_symmetric", ResizeCoordinateMode::kHalfPixelSymmetric},
    {"pytorch_half_pixel", ResizeCoordinateMode::kPytorchHalfPixel},
    {"align_corners", ResizeCoordinateMode::kAlignCorners},
    {"asymmetric", ResizeCoordinateMode::kAsymmetric},
    {"tf_half_pixel_for_nn", ResizeCoordinateMode::kTfHalfPixelForNn},
    {"tf_crop_and_resize", ResizeCoordinateMode::kTfCropAndResize},
};

cpu::ResizeOptions cpuOptions(const ResizeOptions& o) {
  cpu::ResizeOptions c;
  c.mode = cpu::ResizeMode(int(o.mode));
  c.coordinates = cpu::CoordinateMode(int(o.coordinates));
  c.nearest = cpu::NearestMode(int(o.nearest));
  c.cubicCoeffA = o.cubicCoeffA;
  c.excludeOutside = o.excludeOutside;
  c.antialias = o.antialias;
  return c;
}

std::vector<double> scalesOf(const Shape& s) {
  if (!s.scales.empty()) return s.scales;
  std::vector<double> scales;
  for (size_t d = 0; d < s.in.size(); ++d) scales.push_back(double(s.out[d]) / double(s.in[d]));
  return scales;
}

// A roi reaching outside the input on the resized axes, so some outputs extrapolate.
void roiOf(const Shape& s, std::vector<double>& start, std::vector<double>& end) {
  start.assign(s.in.size(), 0.0);
  end.assign(s.in.size(), 1.0);
  for (size_t d = 0; d < s.in.size(); ++d)
    if (s.in[d] != s.out[d]) start[d] = -0.1 * double(d % 2), end[d] = 0.9 + 0.25 * double(d % 2);
}

// The CPU reference for one case, on float-valued data of `type` (bytes in, bytes out).
Bytes cpuResize(const Bytes& in, const Shape& s, const std::vector<double>& roiStart, const std::vector<double>& roiEnd,
                const ResizeOptions& options, ElementType type) {
  const std::vector<double> scales = scalesOf(s);
  std::vector<cpu::AxisSampling> axes;
  for (size_t d = 0; d < s.in.size(); ++d)
    axes.push_back(cpu::sampleAxis(s.in[d], s.out[d], scales[d], roiStart[d], roiEnd[d], cpuOptions(options)));
  Bytes out(byteSize(type, countOf(s.out)));
  if (options.mode == ResizeMode::kNearest) {
    withStorage(elementBytes(type), [&](auto tag) {
      using T = decltype(tag);
      T fill = T(bitsOf(options.extrapolationValue, type));
      cpu::resizeNearest(reinterpret_cast<const T*>(in.data()), s.in, reinterpret_cast<T*>(out.data()), s.out, axes,
                         fill);
    });
    return out;
  }
  auto run = [&](auto tag) {
    using T = decltype(tag);
    cpu::resizeInterpolate(reinterpret_cast<const T*>(in.data()), s.in, reinterpret_cast<T*>(out.data()), s.out, axes,
                           options.extrapolationValue);
  };
  switch (type) {
    case ElementType::kFloat32: run(float{}); break;
    case ElementType::kFloat64: run(double{}); break;
    case ElementType::kFloat16: run(cpu::Float16{}); break;
    case ElementType::kBFloat16: run(cpu::BFloat16{}); break;
    default: ADD_FAILURE() << "no CPU interpolation for " << toString(type);
  }
  return out;
}

// The GPU's plan run on the host (nearest moves bytes; interpolation accumulates in double here).
Bytes emulateResize(const Bytes& in, const ResizePlan& plan, const ResizeOptions& options, ElementType type) {
  const size_t es = elementBytes(type);
  Bytes out(size_t(plan.planes * plan.planeOut) * es);
  const Bytes fill = fromValues({options.extrapolationValue}, type);
  for (int64_t p = 0; p < plan.planes; ++p)
    for (int64_t pixel = 0; pixel < plan.planeOut; ++pixel) {
      uint8_t* to = &out[size_t(p * plan.planeOut + pixel) * es];
      if (options.mode == ResizeMode::kNearest) {
        const int64_t from = plan.nearestOffset(pixel);
        std::memcpy(to, from < 0 ? fill.data() : &in[size_t(p * plan.planeIn + from) * es], es);
        continue;
      }
      double acc = 0;
      const bool inside = plan.forEachTap(
          pixel, [&](int64_t offset, float w) { acc += w * valueAt(in, type, p * plan.planeIn + offset); });
      const uint64_t bits = bitsOf(inside ? acc : options.extrapolationValue, type);
      std::memcpy(to, &bits, es);
    }
  return out;
}

template <class Fn>
void forEachCase(bool interpolationOnly, Fn&& fn) {
  for (const Shape& shape : kShapes)
    for (const Variant& variant : variants())
      for (auto [coordinateName, coordinates] : kCoordinateModes) {
        if (interpolationOnly && variant.options.mode == ResizeMode::kNearest) continue;
        ResizeOptions options = variant.options;
        options.coordinates = coordinates;
        options.extrapolationValue = 2.5f;
        std::vector<double> roiStart, roiEnd;
        roiOf(shape, roiStart, roiEnd);
        const std::string name =
            dimsText(shape.in) + " -> " + dimsText(shape.out) + " " + variant.name + " " + coordinateName;
        fn(name, shape, options, roiStart, roiEnd);
      }
}

}  // namespace

// Per axis, the GPU's taps (indices, weights, extrapolation) are the CPU's sampleAxis.
TEST(CudaResizeHost, AxisSamplingMatchesTheCpu) {
  const std::vector<std::tuple<int64_t, int64_t, double>> axes{
      {7, 14, 2.0},          {33, 16, 16.0 / 33}, {17, 40, 40.0 / 17}, {11, 18, 1.7},  {13, 5, 0.4},
      {1001, 7, 7.0 / 1001}, {1, 3, 3.0},         {5, 5, 1.0},         {6, 1, 1.0 / 6}};
  for (const Variant& variant : variants())
    for (auto [coordinateName, coordinates] : kCoordinateModes)
      for (auto [in, out, scale] : axes)
        for (auto [roiStart, roiEnd] : {std::pair{0.0, 1.0}, {-0.1, 1.15}, {0.25, 0.5}}) {
          SCOPED_TRACE(variant.name + " " + coordinateName + " " + std::to_string(in) + " -> " + std::to_string(out) +
                       " roi " + std::to_string(roiStart) + ".." + std::to_string(roiEnd));
          ResizeOptions options = variant.options;
          options.coordinates = coordinates;
          const cpu::AxisSampling expected = cpu::sampleAxis(in, out, scale, roiStart, roiEnd, cpuOptions(options));
          const AxisSampler s = makeAxisSampler(in, out, scale, roiStart, roiEnd, options);
          ASSERT_EQ(s.taps, expected.taps);
          for (int64_t o = 0; o < out; ++o) {
            const double x = s.sourceCoordinate(o);
            ASSERT_EQ(s.outside(x), expected.outside[size_t(o)] != 0) << "output " << o;
            if (options.mode == ResizeMode::kNearest) {
              ASSERT_EQ(s.nearestIndex(x), expected.index[size_t(o)]) << "output " << o << " at " << x;
              continue;
            }
            const AxisSampler::Window w = s.window(x);
            for (int k = 0; k < s.taps; ++k) {
              const size_t at = size_t(o * s.taps + k);
              ASSERT_EQ(s.index(w, k), expected.index[at]) << "output " << o << " tap " << k;
              ASSERT_NEAR(s.weight(w, k), expected.weight[at], 2e-6) << "output " << o << " tap " << k;
            }
          }
          EXPECT_EQ(isIdentityAxis(s), expected.identity);
        }
}

// Whole resizes: the GPU's plan run on the host against the CPU kernel.
TEST(CudaResizeHost, PlansMatchTheCpuKernel) {
  forEachCase(false, [](const std::string& name, const Shape& shape, const ResizeOptions& options,
                        const std::vector<double>& roiStart, const std::vector<double>& roiEnd) {
    SCOPED_TRACE(name);
    const ElementType type = ElementType::kFloat32;
    const Bytes in = randomElements(type, countOf(shape.in), 3);
    const auto plan = planResize(shape.in, shape.out, scalesOf(shape), roiStart, roiEnd, options);
    ASSERT_TRUE(plan.has_value());
    EXPECT_EQ(plan->planes * plan->planeOut, countOf(shape.out));
    const Bytes expected = cpuResize(in, shape, roiStart, roiEnd, options, type);
    const Bytes actual = emulateResize(in, *plan, options, type);
    if (options.mode == ResizeMode::kNearest)
      EXPECT_TRUE(sameElements(actual, expected, 4));
    else
      EXPECT_TRUE(closeValues(valuesOf(actual, type), valuesOf(expected, type), 1e-5));
  });
}

// The GPU tests' CPU references for every dtype they use, against the plan run on the host.
TEST(CudaResizeHost, ReferencesForEveryTestedTypeAgreeWithThePlan) {
  int checked = 0;
  forEachCase(false, [&](const std::string& name, const Shape& shape, const ResizeOptions& options,
                         const std::vector<double>& roiStart, const std::vector<double>& roiEnd) {
    if (&shape != &kShapes[1] && &shape != &kShapes[3]) return;  // a few shapes are enough here
    const bool nearest = options.mode == ResizeMode::kNearest;
    const std::vector<ElementType> types =
        nearest ? movementTypes()
                : std::vector<ElementType>{ElementType::kFloat16, ElementType::kBFloat16, ElementType::kFloat64};
    for (ElementType type : types) {
      SCOPED_TRACE(name + " " + toString(type));
      const Bytes in = randomElements(type, countOf(shape.in), 4);
      const auto plan = planResize(shape.in, shape.out, scalesOf(shape), roiStart, roiEnd, options);
      ASSERT_TRUE(plan.has_value());
      const Bytes expected = cpuResize(in, shape, roiStart, roiEnd, options, type);
      const Bytes actual = emulateResize(in, *plan, options, type);
      if (nearest)
        EXPECT_TRUE(sameElements(actual, expected, elementBytes(type)));
      else
        EXPECT_TRUE(closeValues(valuesOf(actual, type), valuesOf(expected, type), std::max(1e-5, toleranceFor(type))));
      ++checked;
    }
  });
  EXPECT_GT(checked, 100);
}

TEST(CudaResizeHost, PlansFoldCopiedAxesIntoPlanes) {
  ResizeOptions linear;
  linear.mode = ResizeMode::kLinear;
  const auto nchw = planResize({2, 3, 7, 9}, {2, 3, 14, 18}, {1, 1, 2, 2}, {}, {}, linear);
  ASSERT_TRUE(nchw.has_value());
  EXPECT_EQ(nchw->planes, 6);
  EXPECT_EQ(nchw->rank, 2);
  const auto nhwc = planResize({2, 7, 9, 3}, {2, 14, 18, 3}, {1, 2, 2, 1}, {}, {}, linear);
  ASSERT_TRUE(nhwc.has_value());
  EXPECT_EQ(nhwc->planes, 2);
  EXPECT_EQ(nhwc->rank, 3);
  EXPECT_FALSE(nhwc->sampled[2]);
  EXPECT_FALSE(planResize({0, 3}, {2, 3}, {1, 1}, {}, {}, linear).has_value());  // nothing to sample
  EXPECT_FALSE(planResize({2, 3}, {2, 3, 1}, {1, 1}, {}, {}, linear).has_value());
}

// ----------------------------------------------------------------------------------------------
// GPU tests

TEST(CudaResize, NearestMatchesTheCpuBitExact) {
  KILN_REQUIRE_GPU();
  forEachCase(false, [](const std::string& name, const Shape& shape, const ResizeOptions& options,
                        const std::vector<double>& roiStart, const std::vector<double>& roiEnd) {
    if (options.mode != ResizeMode::kNearest) return;
    for (ElementType type : movementTypes()) {
      SCOPED_TRACE(name + " " + toString(type));
      const Bytes in = randomElements(type, countOf(shape.in), 4);
      DeviceBuffer src(in), dst(byteSize(type, countOf(shape.out)));
      KILN_CUDA_OK(
          resize(src.get(), shape.in, dst.get(), shape.out, scalesOf(shape), roiStart, roiEnd, options, type, nullptr));
      EXPECT_TRUE(
          sameElements(dst.download(), cpuResize(in, shape, roiStart, roiEnd, options, type), elementBytes(type)));
    }
  });
}

TEST(CudaResize, LinearAndCubicMatchTheCpuWithinTolerance) {
  KILN_REQUIRE_GPU();
  forEachCase(true, [](const std::string& name, const Shape& shape, const ResizeOptions& options,
                       const std::vector<double>& roiStart, const std::vector<double>& roiEnd) {
    for (ElementType type :
         {ElementType::kFloat32, ElementType::kFloat16, ElementType::kBFloat16, ElementType::kFloat64}) {
      SCOPED_TRACE(name + " " + toString(type));
      const Bytes in = randomElements(type, countOf(shape.in), 5);
      DeviceBuffer src(in), dst(byteSize(type, countOf(shape.out)));
      KILN_CUDA_OK(
          resize(src.get(), shape.in, dst.get(), shape.out, scalesOf(shape), roiStart, roiEnd, options, type, nullptr));
      // The CPU computes float64 in float, so float64 compares at float's tolerance.
      const double tolerance = type == ElementType::kFloat64 ? 1e-5 : toleranceFor(type);
      EXPECT_TRUE(closeValues(valuesOf(dst.download(), type),
                              valuesOf(cpuResize(in, shape, roiStart, roiEnd, options, type), type), tolerance));
    }
  });
}

TEST(CudaResize, RefusesWhatItDoesNotTake) {
  KILN_REQUIRE_GPU();
  DeviceBuffer any(64);
  ResizeOptions linear;
  linear.mode = ResizeMode::kLinear;
  EXPECT_EQ(resize(any.get(), {4}, any.get(), {8}, {2.0}, {}, {}, linear, ElementType::kInt32, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(resize(any.get(), {4}, any.get(), {8}, {2.0, 1.0}, {}, {}, linear, ElementType::kFloat32, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(resize(any.get(), {4}, any.get(), {0}, {2.0}, {}, {}, linear, ElementType::kFloat32, nullptr), cudaSuccess);
}
