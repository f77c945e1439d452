// The CUDA QuantizeLinear / DequantizeLinear kernels against the CPU kernel (kernels/cpu/quant) and
// the CPU's fp8 types. The CPU kernel covers per-tensor and per-axis 8/16-bit quantization; blocked
// scales, int32 and fp8 targets compare with plain loops over the CPU's number formats.
#include "layout_test_support.h"

#include <kernels/cpu/common/numeric_types.h>
#include <kernels/cpu/quant/quantize.h>
#include <kernels/cuda/common/tensor_geometry.h>
#include <kernels/cuda/quant/quantize.h>

#include <limits>

using namespace kiln::kernels::cuda;
using namespace kiln::test;
namespace cpu = kiln::kernels;

namespace {

using Dims = std::vector<int64_t>;

bool sameFloat(float a, float b) { return (std::isnan(a) && std::isnan(b)) || cpu::floatBits(a) == cpu::floatBits(b); }

// Calls fn(tag) with the CPU kernel's type for an ElementType it quantizes from or to.
template <class Fn>
void withCpuType(ElementType type, Fn&& fn) {
  switch (type) {
    case ElementType::kFloat32: return fn(float{});
    case ElementType::kFloat64: return fn(double{});
    case ElementType::kFloat16: return fn(cpu::Float16{});
    case ElementType::kBFloat16: return fn(cpu::BFloat16{});
    case ElementType::kInt32: return fn(int32_t{});
    case ElementType::kInt8: return fn(int8_t{});
    case ElementType::kUInt8: return fn(uint8_t{});
    case ElementType::kInt16: return fn(int16_t{});
    case ElementType::kUInt16: return fn(uint16_t{});
    default: FAIL() << "no CPU type for " << toString(type);
  }
}

// The types the CPU kernel quantizes from (and, but int32, dequantizes to).
template <class T>
constexpr bool kCpuQuantizesFrom =
    std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, cpu::Float16> ||
    std::is_same_v<T, cpu::BFloat16> || std::is_same_v<T, int32_t>;

struct QuantCase {
  Dims dims;
  int axis;
  int64_t blockSize;  // 0: per axis, or per tensor with `perTensor`
  bool perTensor;
};

const std::vector<QuantCase> kCases{
    {{1}, 0, 0, true},         {{7}, 0, 0, true},          {{3, 33, 5}, 1, 0, true},  {{1, 7, 1}, 1, 0, false},
    {{3, 33, 5}, 1, 0, false}, {{2, 1001}, 1, 0, false},   {{2, 1001}, -2, 0, false}, {{1, 16, 64}, 1, 4, false},
    {{3, 33, 5}, 1, 7, false}, {{2, 40, 3}, 2, 32, false}, {{4, 0, 3}, 0, 0, false},
};

Dims scaleDimsOf(const QuantCase& c) {
  if (c.perTensor) return {};
  const int axis = c.axis < 0 ? c.axis + int(c.dims.size()) : c.axis;
  if (c.blockSize == 0) return {c.dims[size_t(axis)]};
  Dims d = c.dims;
  d[size_t(axis)] = (d[size_t(axis)] + c.blockSize - 1) / c.blockSize;
  return d;
}

std::string caseName(const QuantCase& c) {
  return dimsText(c.dims) + " axis " + std::to_string(c.axis) +
         (c.perTensor   ? " per tensor"
          : c.blockSize ? " block " + std::to_string(c.blockSize)
                        : " per axis");
}

// Scales in [0.01, 0.1] (so x / scale saturates int8 often), some exact powers of two (ties).
std::vector<double> randomScales(int64_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<double> s;
  for (int64_t i = 0; i < count; ++i) s.push_back(rng() % 4 == 0 ? 0.0625 : 0.01 + 0.09 * double(rng() % 1000) / 1000);
  return s;
}

// x values: random, plus exact halves of the scale (round-half-even ties) and a few huge ones.
std::vector<double> quantInputs(int64_t count, uint32_t seed) {
  std::vector<double> x = valuesOf(randomElements(ElementType::kFloat32, count, seed), ElementType::kFloat32);
  for (int64_t i = 0; i < count; i += 5) x[size_t(i)] = (double(i % 7) - 3.5) * 0.0625;
  for (int64_t i = 3; i < count; i += 11) x[size_t(i)] = (i % 2 ? 1 : -1) * 1e6;
  return x;
}

bool isInteger(ElementType t) {
  return t == ElementType::kInt8 || t == ElementType::kUInt8 || t == ElementType::kInt16 || t == ElementType::kUInt16 ||
         t == ElementType::kInt32;
}

Float8Kind kindOf(ElementType t) { return t == ElementType::kFloat8E5M2 ? Float8Kind::kE5M2 : Float8Kind::kE4M3; }

// Zero points inside the type's range (and small for int32, zero for fp8, as ONNX uses them).
Bytes randomZeroPoints(ElementType type, int64_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<double> z;
  for (int64_t i = 0; i < count; ++i) {
    const bool isSigned = type == ElementType::kInt8 || type == ElementType::kInt16 || type == ElementType::kInt32;
    z.push_back(isInteger(type) ? double(int(rng() % 100)) - (isSigned ? 50 : 0) : 0.0);
  }
  return fromValues(z, type);
}

// The expected quantization by plain loops over the layout: the CPU's rule (float arithmetic,
// half-even rounding, saturation) for integers, the CPU's Float8 types for fp8 when saturating.
Bytes referenceQuantize(const std::vector<double>& x, ElementType xType, const std::vector<double>& scales,
                        const Bytes& zero, ElementType yType, const QuantLayout& layout, bool saturate) {
  const Bytes xRounded = fromValues(x, xType);  // what the kernel reads
  Bytes y(byteSize(yType, layout.count()));
  for (int64_t i = 0; i < layout.count(); ++i) {
    const float v = float(valueAt(xRounded, xType, i)), s = float(scales[size_t(layout.scaleIndex(i))]);
    const int64_t zi = int64_t(valueAt(zero, yType, layout.scaleIndex(i)));
    uint64_t bits = 0;
    if (yType == ElementType::kFloat8E4M3 && saturate)
      bits = cpu::Float8E4M3::fromFloat(v / s);
    else if (yType == ElementType::kFloat8E5M2 && saturate)
      bits = cpu::Float8E5M2::fromFloat(v / s);
    else if (!isInteger(yType))
      bits = encodeFloat8(v / s, kindOf(yType), saturate);
    else {
      const double r = double(std::nearbyint(v / s)) + double(zi);  // exact in double
      double low = 0, high = 0;
      switch (yType) {
        case ElementType::kInt8: low = -128, high = 127; break;
        case ElementType::kUInt8: low = 0, high = 255; break;
        case ElementType::kInt16: low = -32768, high = 32767; break;
        case ElementType::kUInt16: low = 0, high = 65535; break;
        default: low = -2147483648.0, high = 2147483647.0; break;
      }
      bits = uint64_t(int64_t(std::clamp(r, low, high)));
    }
    storeBits(y, yType, i, bits);
  }
  return y;
}

}  // namespace

TEST(CudaQuantHost, Float8MatchesTheCpuTypes) {
  for (int b = 0; b < 256; ++b) {
    EXPECT_TRUE(sameFloat(decodeFloat8(uint8_t(b), Float8Kind::kE4M3), cpu::Float8E4M3::toFloat(uint8_t(b)))) << b;
    EXPECT_TRUE(sameFloat(decodeFloat8(uint8_t(b), Float8Kind::kE5M2), cpu::Float8E5M2::toFloat(uint8_t(b)))) << b;
  }
  // Every 997th float bit pattern (all exponents, both signs, ties included), and the specials.
  std::vector<float> values{0.0f,
                            -0.0f,
                            448.0f,
                            464.0f,
                            465.0f,
                            480.0f,
                            57344.0f,
                            61440.0f,
                            1e30f,
                            -1e30f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::denorm_min()};
  for (uint64_t u = 0; u < (uint64_t(1) << 32); u += 997) values.push_back(cpu::bitsToFloat(uint32_t(u)));
  for (float f : values) {
    ASSERT_EQ(encodeFloat8(f, Float8Kind::kE4M3, true), cpu::Float8E4M3::fromFloat(f)) << f;
    ASSERT_EQ(encodeFloat8(f, Float8Kind::kE5M2, true), cpu::Float8E5M2::fromFloat(f)) << f;
  }
  // Without saturation e4m3fn overflows to NaN and e5m2 to infinity; in range nothing changes.
  EXPECT_EQ(encodeFloat8(464.0f, Float8Kind::kE4M3, false), 0x7E);  // ties to the even 448
  EXPECT_EQ(encodeFloat8(465.0f, Float8Kind::kE4M3, false), 0x7F);
  EXPECT_EQ(encodeFloat8(-1e9f, Float8Kind::kE4M3, false), 0xFF);
  EXPECT_EQ(encodeFloat8(std::numeric_limits<float>::infinity(), Float8Kind::kE4M3, false), 0x7F);
  EXPECT_EQ(encodeFloat8(60000.0f, Float8Kind::kE5M2, false), 0x7B);
  EXPECT_EQ(encodeFloat8(61440.0f, Float8Kind::kE5M2, false), 0x7C);
  EXPECT_EQ(encodeFloat8(-std::numeric_limits<float>::infinity(), Float8Kind::kE5M2, false), 0xFC);
  EXPECT_EQ(encodeFloat8(3.0f, Float8Kind::kE5M2, false), encodeFloat8(3.0f, Float8Kind::kE5M2, true));
}

TEST(CudaQuantHost, IntegerRoundingMatchesTheCpuKernel) {
  const std::vector<double> xs = quantInputs(1001, 1);
  const std::vector<float> x(xs.begin(), xs.end());
  const float scale = 0.0625f;
  auto check = [&](auto tag, int zero) {
    using Q = decltype(tag);
    std::vector<Q> expected(x.size());
    const Q z = Q(zero);
    cpu::quantizeLinear<float, Q>(x.data(), &scale, &z, expected.data(), 1, 1, int64_t(x.size()));
    for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(quantizeToInteger<Q>(x[i], scale, z), expected[i]) << x[i];
    std::vector<float> back(x.size());
    cpu::dequantizeLinear<Q, float>(expected.data(), &scale, &z, back.data(), 1, 1, int64_t(x.size()));
    for (size_t i = 0; i < x.size(); ++i) ASSERT_TRUE(sameFloat(dequantizeInteger<Q>(expected[i], scale, z), back[i]));
  };
  check(int8_t{}, -3);
  check(uint8_t{}, 128);
  check(int16_t{}, 1000);
  check(uint16_t{}, 7);
  EXPECT_EQ(quantizeToInteger<int8_t>(std::numeric_limits<float>::quiet_NaN(), 1.0f, int8_t(0)), -128);
  EXPECT_EQ(quantizeToInteger<int32_t>(3e9f, 1.0f, 0), std::numeric_limits<int32_t>::max());
  EXPECT_EQ(quantizeToInteger<int32_t>(-3e9f, 1.0f, 0), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(quantizeToInteger<int32_t>(2.5f, 1.0f, 100000001), 100000003);  // zero point kept exact
  EXPECT_EQ(saturateRound<int8_t>(-0.5f), 0);
  EXPECT_EQ(saturateRound<uint8_t>(254.5f), 254);
}

TEST(CudaQuantHost, ScaleIndicesFollowTheLayout) {
  for (const QuantCase& c : kCases) {
    SCOPED_TRACE(caseName(c));
    const auto layout = quantLayout(c.dims, c.axis, scaleDimsOf(c), c.blockSize);
    ASSERT_TRUE(layout.has_value());
    EXPECT_EQ(layout->count(), countOf(c.dims));
    EXPECT_EQ(layout->scaleCount(), countOf(scaleDimsOf(c)));
    const int axis = c.axis < 0 ? c.axis + int(c.dims.size()) : c.axis;
    Dims coords(c.dims.size());
    const Dims scaleStrides = contiguousStrides(scaleDimsOf(c));
    for (int64_t i = 0; i < layout->count(); ++i) {
      int64_t rest = i;
      for (size_t d = c.dims.size(); d-- > 0;) coords[d] = rest % c.dims[d], rest /= c.dims[d];
      int64_t expected = 0;
      if (!c.perTensor && c.blockSize == 0) expected = coords[size_t(axis)];
      if (c.blockSize > 0)
        for (size_t d = 0; d < c.dims.size(); ++d)
          expected += (int(d) == axis ? coords[d] / c.blockSize : coords[d]) * scaleStrides[d];
      ASSERT_EQ(layout->scaleIndex(i), expected) << i;
    }
  }
  EXPECT_FALSE(quantLayout({3, 4}, 1, {3}, 0).has_value());     // per axis needs 4 scales
  EXPECT_FALSE(quantLayout({3, 4}, 2, {4}, 0).has_value());     // axis out of range
  EXPECT_FALSE(quantLayout({3, 8}, 1, {3, 3}, 4).has_value());  // 8 / 4 = 2 blocks
  EXPECT_TRUE(quantLayout({3, 8}, 1, {3, 3}, 3).has_value());   // ceil(8 / 3) = 3
  EXPECT_TRUE(quantLayout({3, 8}, 0, {1}, 0).has_value());      // one scale: per tensor
}

namespace {

const ElementType kQuantized[] = {ElementType::kInt8,      ElementType::kUInt8, ElementType::kInt16,
                                  ElementType::kUInt16,    ElementType::kInt32, ElementType::kFloat8E4M3,
                                  ElementType::kFloat8E5M2};
const ElementType kQuantizeInputs[] = {ElementType::kFloat32, ElementType::kFloat16, ElementType::kBFloat16,
                                       ElementType::kFloat64, ElementType::kInt32};
const ElementType kDequantizeOutputs[] = {ElementType::kFloat32, ElementType::kFloat16, ElementType::kBFloat16,
                                          ElementType::kFloat64};
const ElementType kScaleTypes[] = {ElementType::kFloat32, ElementType::kFloat16, ElementType::kBFloat16};

// One QuantizeLinear / DequantizeLinear case: inputs as the kernel reads them and the expected output.
struct QuantRun {
  std::string name;
  QuantLayout layout;
  ElementType xType, yType, scaleType;
  Bytes x, scales, zero;  // zero: empty when there is no zero point
  bool saturate = true;
  bool perTensor = false, cpuCovers = false;
  std::vector<double> scaleValues;
  Bytes expected;
};

// Calls fn(run) for every quantize case: layouts x input types x targets x scale types x zero
// point x saturate (fp8).
template <class Fn>
void forEachQuantize(Fn&& fn) {
  for (const QuantCase& c : kCases)
    for (ElementType xType : kQuantizeInputs)
      for (ElementType yType : kQuantized)
        for (ElementType scaleType : kScaleTypes)
          for (bool withZero : {true, false})
            for (bool saturate : {true, false}) {
              if (!saturate && isInteger(yType)) continue;
              QuantRun r;
              r.name = caseName(c) + " " + toString(xType) + " -> " + toString(yType) + " scale " +
                       toString(scaleType) + (withZero ? " zero point" : "") + (saturate ? "" : " no saturate");
              r.layout = *quantLayout(c.dims, c.axis, scaleDimsOf(c), c.blockSize);
              r.xType = xType, r.yType = yType, r.scaleType = scaleType, r.saturate = saturate;
              r.perTensor = c.perTensor;
              r.cpuCovers = c.blockSize == 0 && yType != ElementType::kInt32 && isInteger(yType);
              const int64_t count = r.layout.count(), scaleCount = r.layout.scaleCount();
              std::vector<double> x = quantInputs(count, 2);
              if (xType == ElementType::kInt32)
                for (double& v : x) v = std::round(v * 16);  // integers, some large
              r.x = fromValues(x, xType);
              r.scales = fromValues(randomScales(scaleCount, 3), scaleType);
              r.scaleValues = valuesOf(r.scales, scaleType);  // rounded to the scale type, as read
              const Bytes zero =
                  withZero ? randomZeroPoints(yType, scaleCount, 4) : Bytes(byteSize(yType, scaleCount), 0);
              if (withZero) r.zero = zero;
              r.expected =
                  referenceQuantize(valuesOf(r.x, xType), xType, r.scaleValues, zero, yType, r.layout, saturate);
              fn(r);
            }
}

template <class Fn>
void forEachDequantize(Fn&& fn) {
  for (const QuantCase& c : kCases)
    for (ElementType xType : kQuantized)
      for (ElementType yType : kDequantizeOutputs)
        for (ElementType scaleType : kScaleTypes)
          for (bool withZero : {true, false}) {
            QuantRun r;
            r.name = caseName(c) + " " + toString(xType) + " -> " + toString(yType) + " scale " + toString(scaleType) +
                     (withZero ? " zero point" : "");
            r.layout = *quantLayout(c.dims, c.axis, scaleDimsOf(c), c.blockSize);
            r.xType = xType, r.yType = yType, r.scaleType = scaleType;
            r.perTensor = c.perTensor;
            r.cpuCovers = c.blockSize == 0 && isInteger(xType);
            const int64_t count = r.layout.count(), scaleCount = r.layout.scaleCount();
            r.x = randomElements(xType, count, 5);
            if (!isInteger(xType))  // fp8: no NaN codes
              for (uint8_t& b : r.x) b = (b & 0x7F) == 0x7F ? 0x11 : b;
            r.scales = fromValues(randomScales(scaleCount, 6), scaleType);
            r.scaleValues = valuesOf(r.scales, scaleType);
            const Bytes zero =
                withZero ? randomZeroPoints(xType, scaleCount, 7) : Bytes(byteSize(xType, scaleCount), 0);
            if (withZero) r.zero = zero;
            // Plain loop: float(q - z) * scale (fp8: the CPU's decoding), rounded once to y's type.
            std::vector<double> values;
            for (int64_t i = 0; i < count; ++i) {
              const int64_t s = r.layout.scaleIndex(i);
              const float v = isInteger(xType)
                                  ? float(int64_t(valueAt(r.x, xType, i)) - int64_t(valueAt(zero, xType, s)))
                                  : float(valueAt(r.x, xType, i)) - float(valueAt(zero, xType, s));
              values.push_back(double(v * float(r.scaleValues[size_t(s)])));
            }
            r.expected = fromValues(values, yType);
            fn(r);
          }
}

Bytes zeroOrEmpty(const QuantRun& r, ElementType type) {
  return r.zero.empty() ? Bytes(byteSize(type, r.layout.scaleCount()), 0) : r.zero;
}

}  // namespace

// The GPU tests' expectations agree with the CPU kernel where it covers the case, and the
// kernels' per-element math run on the host gives them exactly.
TEST(CudaQuantHost, ExpectationsMatchTheCpuKernelAndTheKernelMath) {
  forEachQuantize([](const QuantRun& r) {
    SCOPED_TRACE(r.name);
    const std::vector<float> scales(r.scaleValues.begin(), r.scaleValues.end());
    const Bytes zero = zeroOrEmpty(r, r.yType);
    if (r.cpuCovers) {
      Bytes fromCpu(r.expected.size());
      withCpuType(r.xType, [&](auto inTag) {
        using In = decltype(inTag);
        withCpuType(r.yType, [&](auto qTag) {
          using Q = decltype(qTag);
          if constexpr (kCpuQuantizesFrom<In> && std::is_integral_v<Q> && sizeof(Q) <= 2)
            cpu::quantizeLinear<In, Q>(reinterpret_cast<const In*>(r.x.data()), scales.data(),
                                       r.zero.empty() ? nullptr : reinterpret_cast<const Q*>(r.zero.data()),
                                       reinterpret_cast<Q*>(fromCpu.data()), r.layout.outer,
                                       r.perTensor ? 1 : r.layout.axisLen,
                                       r.perTensor ? r.layout.count() : r.layout.inner);
        });
      });
      EXPECT_TRUE(sameElements(fromCpu, r.expected, elementBytes(r.yType))) << "CPU kernel";
    }
    Bytes emulated(r.expected.size());
    for (int64_t i = 0; i < r.layout.count(); ++i) {
      const int64_t s = r.layout.scaleIndex(i);
      const float v = float(valueAt(r.x, r.xType, i)), sc = scales[size_t(s)];
      uint64_t bits = 0;
      uint64_t z = 0;
      std::memcpy(&z, &zero[size_t(s) * elementBytes(r.yType)], elementBytes(r.yType));
      switch (r.yType) {
        case ElementType::kInt8: bits = uint8_t(quantizeToInteger<int8_t>(v, sc, int8_t(z))); break;
        case ElementType::kUInt8: bits = quantizeToInteger<uint8_t>(v, sc, uint8_t(z)); break;
        case ElementType::kInt16: bits = uint16_t(quantizeToInteger<int16_t>(v, sc, int16_t(z))); break;
        case ElementType::kUInt16: bits = quantizeToInteger<uint16_t>(v, sc, uint16_t(z)); break;
        case ElementType::kInt32: bits = uint32_t(quantizeToInteger<int32_t>(v, sc, int32_t(z))); break;
        default: bits = quantizeToFloat8(v, sc, uint8_t(z), kindOf(r.yType), r.saturate); break;
      }
      storeBits(emulated, r.yType, i, bits);
    }
    EXPECT_TRUE(sameElements(emulated, r.expected, elementBytes(r.yType))) << "kernel math";
  });
  forEachDequantize([](const QuantRun& r) {
    SCOPED_TRACE(r.name);
    const std::vector<float> scales(r.scaleValues.begin(), r.scaleValues.end());
    const Bytes zero = zeroOrEmpty(r, r.xType);
    if (r.cpuCovers) {
      Bytes fromCpu(r.expected.size());
      withCpuType(r.xType, [&](auto qTag) {
        using Q = decltype(qTag);
        withCpuType(r.yType, [&](auto outTag) {
          using Out = decltype(outTag);
          if constexpr (std::is_integral_v<Q> && kCpuQuantizesFrom<Out> && !std::is_integral_v<Out>)
            cpu::dequantizeLinear<Q, Out>(reinterpret_cast<const Q*>(r.x.data()), scales.data(),
                                          r.zero.empty() ? nullptr : reinterpret_cast<const Q*>(r.zero.data()),
                                          reinterpret_cast<Out*>(fromCpu.data()), r.layout.outer,
                                          r.perTensor ? 1 : r.layout.axisLen,
                                          r.perTensor ? r.layout.count() : r.layout.inner);
        });
      });
      EXPECT_TRUE(sameElements(fromCpu, r.expected, elementBytes(r.yType))) << "CPU kernel";
    }
    std::vector<double> values;
    for (int64_t i = 0; i < r.layout.count(); ++i) {
      const int64_t s = r.layout.scaleIndex(i);
      uint64_t q = 0, z = 0;
      std::memcpy(&q, &r.x[size_t(i) * elementBytes(r.xType)], elementBytes(r.xType));
      std::memcpy(&z, &zero[size_t(s) * elementBytes(r.xType)], elementBytes(r.xType));
      float v = 0;
      switch (r.xType) {
        case ElementType::kInt8: v = dequantizeInteger<int8_t>(int8_t(q), scales[size_t(s)], int8_t(z)); break;
        case ElementType::kUInt8: v = dequantizeInteger<uint8_t>(uint8_t(q), scales[size_t(s)], uint8_t(z)); break;
        case ElementType::kInt16: v = dequantizeInteger<int16_t>(int16_t(q), scales[size_t(s)], int16_t(z)); break;
        case ElementType::kUInt16: v = dequantizeInteger<uint16_t>(uint16_t(q), scales[size_t(s)], uint16_t(z)); break;
        case ElementType::kInt32: v = dequantizeInteger<int32_t>(int32_t(q), scales[size_t(s)], int32_t(z)); break;
        default: v = dequantizeFloat8(uint8_t(q), scales[size_t(s)], uint8_t(z), kindOf(r.xType)); break;
      }
      values.push_back(v);
    }
    EXPECT_TRUE(sameElements(fromValues(values, r.yType), r.expected, elementBytes(r.yType))) << "kernel math";
  });
}

// ----------------------------------------------------------------------------------------------
// GPU tests

TEST(CudaQuant, QuantizeMatchesTheCpu) {
  KILN_REQUIRE_GPU();
  forEachQuantize([](const QuantRun& r) {
    SCOPED_TRACE(r.name);
    DeviceBuffer src(r.x), sc(r.scales), zp(zeroOrEmpty(r, r.yType)), dst(r.expected.size());
    EXPECT_TRUE(writesEveryElement(
        dst,
        [&] {
          return quantizeLinear(src.get(), r.xType, sc.get(), r.scaleType, r.zero.empty() ? nullptr : zp.get(),
                                dst.get(), r.yType, r.layout, r.saturate, nullptr);
        },
        r.expected, elementBytes(r.yType)));
  });
}

TEST(CudaQuant, DequantizeMatchesTheCpu) {
  KILN_REQUIRE_GPU();
  forEachDequantize([](const QuantRun& r) {
    SCOPED_TRACE(r.name);
    DeviceBuffer src(r.x), sc(r.scales), zp(zeroOrEmpty(r, r.xType)), dst(r.expected.size());
    EXPECT_TRUE(writesEveryElement(
        dst,
        [&] {
          return dequantizeLinear(src.get(), r.xType, sc.get(), r.scaleType, r.zero.empty() ? nullptr : zp.get(),
                                  dst.get(), r.yType, r.layout, nullptr);
        },
        r.expected, elementBytes(r.yType)));
  });
}

TEST(CudaQuant, RefusesWhatItDoesNotTake) {
  KILN_REQUIRE_GPU();
  DeviceBuffer any(64);
  const QuantLayout layout = *quantLayout({4}, 0, {}, 0);
  EXPECT_EQ(quantizeLinear(any.get(), ElementType::kInt8, any.get(), ElementType::kFloat32, nullptr, any.get(),
                           ElementType::kInt8, layout, true, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(quantizeLinear(any.get(), ElementType::kFloat32, any.get(), ElementType::kInt32, nullptr, any.get(),
                           ElementType::kInt8, layout, true, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(dequantizeLinear(any.get(), ElementType::kInt8, any.get(), ElementType::kFloat32, nullptr, any.get(),
                             ElementType::kInt32, layout, nullptr),
            cudaErrorInvalidValue);
}
