// Host-side checks of the elementwise family (no GPU needed, run in CI): index math, the fp8 and
// Cast conversion rules, and every per-element functor against the CPU kernels.
#include "cuda/cast_test_values.h"
#include "cuda/cuda_test_util.h"

#include <kernels/cpu/elementwise/binary.h>
#include <kernels/cpu/elementwise/cast.h>
#include <kernels/cpu/elementwise/unary.h>
#include <kernels/cuda/elementwise/binary_ops.h>
#include <kernels/cuda/elementwise/broadcast_indexer.h>
#include <kernels/cuda/elementwise/cast_convert.h>
#include <kernels/cuda/elementwise/fast_divider.h>
#include <kernels/cuda/elementwise/unary_ops.h>

#include <limits>

using namespace kiln::kernels::cuda;
using namespace kiln::test;
using kiln::kernels::BinaryOp;
using kiln::kernels::UnaryOp;
using kiln::kernels::UnaryParams;

TEST(CudaIndexMath, FastDividerMatchesDivision) {
  std::mt19937 rng(7);
  std::vector<uint32_t> divisors{1, 2, 3, 5, 7, 10, 31, 32, 33, 255, 641, 1000, 65535, 65536, 65537, 1u << 20,
                                 (1u << 31) - 1, 1u << 31};
  for (int i = 0; i < 200; ++i) divisors.push_back(1 + rng() % (1u << 31));
  for (uint32_t d : divisors) {
    FastDivider divider(d);
    std::vector<uint32_t> numerators{0, 1, d - 1, d, d + 1, (1u << 31) - 1};
    for (int i = 0; i < 2000; ++i) numerators.push_back(rng() % (1u << 31));
    for (uint32_t n : numerators) {
      if (n >= (1u << 31)) continue;
      ASSERT_EQ(divider.divide(n), n / d) << n << " / " << d;
    }
  }
}

TEST(CudaIndexMath, BroadcastIndexerMatchesNaiveOffsets) {
  const std::vector<int64_t> out{2, 3, 1, 4, 5};
  const std::vector<std::vector<int64_t>> patterns{{2, 3, 1, 4, 5}, {4, 5}, {5}, {1}, {}, {2, 1, 1, 4, 1},
                                                   {3, 1, 1, 1},    {1, 3, 1, 4, 1}};
  for (const auto& a : patterns)
    for (const auto& b : patterns) {
      BroadcastPlan<2> plan = planBroadcast<2>(out, {&a, &b});
      StridedLayout la = broadcastLayout(out, a), lb = broadcastLayout(out, b);
      for (int64_t i = 0; i < elementCount(out); ++i) {
        int64_t offsets[2];
        plan.indexer.offsets(i, offsets);
        ASSERT_EQ(offsets[0], la.offsetOf(i)) << dimsText(a) << " at " << i;
        ASSERT_EQ(offsets[1], lb.offsetOf(i)) << dimsText(b) << " at " << i;
        if (plan.simple) {
          ASSERT_EQ(offsets[0], plan.repeats[0] ? 0 : i);
          ASSERT_EQ(offsets[1], plan.repeats[1] ? 0 : i);
        }
      }
    }
  // Simple plans: dense and scalar inputs only.
  const std::vector<int64_t> full{2, 3, 1, 4, 5}, scalar{}, one{1, 1}, row{4, 5};
  EXPECT_TRUE((planBroadcast<2>(out, {&full, &scalar}).simple));
  EXPECT_TRUE((planBroadcast<2>(out, {&one, &full}).repeats[0]));
  EXPECT_FALSE((planBroadcast<2>(out, {&full, &row}).simple));
}

TEST(CudaIndexMath, WideIndexSpacesUse64BitDivision) {
  const std::vector<int64_t> out{3, int64_t(1) << 30, 2}, a{3, 1, 2}, b{1, int64_t(1) << 30, 1};
  BroadcastPlan<2> plan = planBroadcast<2>(out, {&a, &b});
  EXPECT_FALSE(plan.indexer.narrow);
  for (int64_t i : {int64_t(0), int64_t(5), (int64_t(1) << 31) + 7, elementCount(out) - 1}) {
    int64_t offsets[2];
    plan.indexer.offsets(i, offsets);
    EXPECT_EQ(offsets[0], broadcastLayout(out, a).offsetOf(i));
    EXPECT_EQ(offsets[1], broadcastLayout(out, b).offsetOf(i));
  }
}

TEST(CudaIndexMath, BadBroadcastsThrow) {
  const std::vector<int64_t> out{3, 4}, bad{2, 4}, ok{4};
  EXPECT_THROW((planBroadcast<2>(out, {&ok, &bad})), std::invalid_argument);
  EXPECT_EQ((planBroadcast<2>(std::vector<int64_t>{0, 4}, {&ok, &ok}).count), 0);
}

TEST(CudaFloat8, EncodingMatchesCpuBitForBit) {
  std::vector<float> values{0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, 448.0f, 449.0f, 464.0f, 480.0f, 1e9f,
                            57344.0f, 61440.0f, 1e-9f, -1e-9f, std::numeric_limits<float>::denorm_min(), 0.001953125f,
                            0.0009765625f, 0.0029296875f, 1.0625f, 1.125f, -1.1875f};
  std::mt19937 rng(11);
  for (uint64_t bits = 0; bits < (uint64_t(1) << 32); bits += 4099) values.push_back(bitCast<float>(uint32_t(bits)));
  for (int code = 0; code < 256; ++code) {  // every fp8 value and the midpoints around it
    for (float v : {Float8E4M3::toFloat(uint8_t(code)), Float8E5M2::toFloat(uint8_t(code))}) {
      if (std::isnan(v)) continue;
      for (float scale : {1.0f, 1.0625f, 0.9375f, 1.03125f, 0.96875f}) values.push_back(v * scale);
      values.push_back(std::nextafter(v, INFINITY));
      values.push_back(std::nextafter(v, -INFINITY));
    }
  }
  for (float v : values) {
    ASSERT_EQ(encodeFloat8<Float8E4M3Format>(v), Float8E4M3::fromFloat(v)) << v;
    ASSERT_EQ(encodeFloat8<Float8E5M2Format>(v), Float8E5M2::fromFloat(v)) << v;
  }
  for (int code = 0; code < 256; ++code) {
    const float e4 = decodeFloat8<Float8E4M3Format>(uint8_t(code)), e5 = decodeFloat8<Float8E5M2Format>(uint8_t(code));
    ASSERT_TRUE(sameElement(e4, Float8E4M3::toFloat(uint8_t(code)))) << code;
    ASSERT_TRUE(sameElement(e5, Float8E5M2::toFloat(uint8_t(code)))) << code;
  }
}

namespace {

template <class Src, class Dst>
void checkCastPair() {
  using S = typename CudaStorage<Src>::type;
  using D = typename CudaStorage<Dst>::type;
  const auto sources = castSources<Src>();
  const size_t n = sources.size();
  const Src* in = reinterpret_cast<const Src*>(sources.data());  // bools are held as bytes 0 and 1
  std::unique_ptr<Dst[]> want(new Dst[n]);
  if constexpr (std::is_same_v<Src, Dst>) std::copy(in, in + n, want.get());
  else kiln::kernels::cast<Src, Dst>(in, want.get(), int64_t(n));
  for (size_t i = 0; i < n; ++i) {
    const D typed = convertElement<D>(bitCast<S>(in[i]));
    ASSERT_TRUE(sameElement(bitCast<Dst>(typed), want[i]))
        << toString(elementTypeOf<Src>()) << " -> " << toString(elementTypeOf<Dst>()) << " of " << toDouble(in[i]);
    if constexpr (std::is_same_v<Src, Dst>) continue;  // launchCast copies same-type casts
    Dst viaScalar;
    storeCastScalar(&viaScalar, 0, elementTypeOf<Dst>(), loadCastScalar(&in[i], 0, elementTypeOf<Src>()));
    ASSERT_TRUE(sameElement(viaScalar, want[i]))
        << toString(elementTypeOf<Src>()) << " -> " << toString(elementTypeOf<Dst>()) << " of " << toDouble(in[i])
        << " (run-time typed)";
  }
}

template <class Src>
void checkCastsFrom() {
#define KILN_CHECK_DST(Dst) checkCastPair<Src, Dst>();
  KILN_TEST_FLOAT_TYPES(KILN_CHECK_DST)
  KILN_TEST_INTEGER_TYPES(KILN_CHECK_DST)
  KILN_CHECK_DST(bool) KILN_CHECK_DST(Float8E4M3) KILN_CHECK_DST(Float8E5M2)
#undef KILN_CHECK_DST
}

}  // namespace

TEST(CudaCastRules, EveryPairMatchesCpuCast) {
#define KILN_CHECK_SRC(Src) checkCastsFrom<Src>();
  KILN_TEST_FLOAT_TYPES(KILN_CHECK_SRC)
  KILN_TEST_INTEGER_TYPES(KILN_CHECK_SRC)
  KILN_CHECK_SRC(bool) KILN_CHECK_SRC(Float8E4M3) KILN_CHECK_SRC(Float8E5M2)
#undef KILN_CHECK_SRC
}

namespace {

template <class T>
using ComputeOf = std::conditional_t<kIsCpuNarrowFloat<T>, float, T>;

template <class T>
ComputeOf<T> widen(T v) {
  if constexpr (kIsCpuNarrowFloat<T>) return float(v);
  else return v;
}
template <class T>
T narrowTo(ComputeOf<T> v) {
  if constexpr (kIsCpuNarrowFloat<T>) return T(v);
  else return v;
}

UnaryParams paramsFor(UnaryOp op) {
  switch (op) {
    case UnaryOp::kLeakyRelu: return {0.01f};
    case UnaryOp::kElu: case UnaryOp::kCelu: return {1.3f};
    case UnaryOp::kThresholdedRelu: return {1.0f};
    case UnaryOp::kSelu: return {1.67326319217681884765625f, 0.0f, 1.05070102214813232421875f};
    case UnaryOp::kHardSigmoid: return {0.2f, 0.5f};
    case UnaryOp::kShrink: return {1.5f, 0.25f};
    default: return {};
  }
}

// Inputs inside each function's domain, so that outputs are finite.
std::pair<double, double> domainOf(UnaryOp op) {
  switch (op) {
    case UnaryOp::kLog: case UnaryOp::kSqrt: case UnaryOp::kReciprocal: return {0.05, 10};
    case UnaryOp::kAsin: case UnaryOp::kAcos: case UnaryOp::kAtanh: return {-0.95, 0.95};
    case UnaryOp::kAcosh: return {1.05, 10};
    case UnaryOp::kTan: return {-1.3, 1.3};
    default: return {-6, 6};
  }
}

template <class T>
void checkUnaryFunctors() {
  for (UnaryOp op : {
#define KILN_LIST_OP(name) UnaryOp::name,
           KILN_CUDA_UNARY_OPS(KILN_LIST_OP)
#undef KILN_LIST_OP
       }) {
    const bool takes = std::is_integral_v<T> ? unaryTakesIntegers(op) : unaryTakesFloats(op);
    if (!takes) continue;
    const UnaryParams params = paramsFor(op);
    const auto [lo, hi] = domainOf(op);
    std::vector<T> in;
    if constexpr (std::is_integral_v<T>) {
      in = randomValues<T>(4000, double(std::numeric_limits<T>::lowest()), double(std::numeric_limits<T>::max()), 3);
      in[0] = std::numeric_limits<T>::min();
      in[1] = std::numeric_limits<T>::max();
      in[2] = T(0);
      in[3] = T(1);
    } else {
      in = randomValues<T>(4000, lo, hi, 3);
    }
    std::vector<T> want(in.size()), got(in.size());
    kiln::kernels::unary<T>(op, in.data(), want.data(), int64_t(in.size()), params);
    withUnaryOp(op, [&](auto opTag) {
      const UnaryFn<decltype(opTag)::value> fn{params};
      for (size_t i = 0; i < in.size(); ++i) got[i] = narrowTo<T>(fn(widen(in[i])));
    });
    EXPECT_TRUE(closeTo(got, want)) << toString(elementTypeOf<T>()) << " op " << int(op);
  }
}

}  // namespace

TEST(CudaElementwiseFunctors, UnaryMatchesCpu) {
#define KILN_CHECK(T) checkUnaryFunctors<T>();
  KILN_TEST_FLOAT_TYPES(KILN_CHECK)
  KILN_TEST_INTEGER_TYPES(KILN_CHECK)
#undef KILN_CHECK
}

TEST(CudaElementwiseFunctors, UnaryKeepsNaNWhereTheCpuDoes) {
  std::vector<float> in{NAN, -NAN, INFINITY, -INFINITY, -0.0f, 0.0f};
  for (UnaryOp op : {UnaryOp::kRelu, UnaryOp::kSign, UnaryOp::kHardSigmoid, UnaryOp::kHardSwish,
                     UnaryOp::kThresholdedRelu, UnaryOp::kLeakyRelu, UnaryOp::kElu, UnaryOp::kSoftplus, UnaryOp::kAbs,
                     UnaryOp::kRound, UnaryOp::kShrink}) {
    const UnaryParams params = paramsFor(op);
    std::vector<float> want(in.size()), got(in.size());
    kiln::kernels::unary<float>(op, in.data(), want.data(), int64_t(in.size()), params);
    withUnaryOp(op, [&](auto opTag) {
      for (size_t i = 0; i < in.size(); ++i) got[i] = UnaryFn<decltype(opTag)::value>{params}(in[i]);
    });
    for (size_t i = 0; i < in.size(); ++i)
      EXPECT_TRUE(sameElement(got[i], want[i]) || got[i] == want[i]) << "op " << int(op) << " of " << in[i] << ": "
                                                                     << got[i] << " vs " << want[i];
  }
}

namespace {

template <class T>
void checkBinaryFunctors() {
  constexpr bool kInteger = std::is_integral_v<T>;
  const int64_t n = 3000;
  for (BinaryOp op : {
#define KILN_LIST_OP(name) BinaryOp::name,
           KILN_CUDA_BINARY_OPS(KILN_LIST_OP)
#undef KILN_LIST_OP
       }) {
    if (!binaryIsComparison(op) && !binaryArithmeticTakes(op, kInteger)) continue;
    const bool shift = op == BinaryOp::kBitShiftLeft || op == BinaryOp::kBitShiftRight;
    std::vector<T> a, b;
    if constexpr (kInteger) {  // small values with zeros, -1 and the extremes: the division rules
      a = randomValues<T>(n, std::is_signed_v<T> ? -40 : 0, 40, 5, false);
      b = shift ? randomValues<T>(n, std::is_signed_v<T> ? -3 : 0, 70, 6, false)
                : randomValues<T>(n, std::is_signed_v<T> ? -9 : 0, 9, 6, false);
      a[0] = std::numeric_limits<T>::min(), b[0] = T(-1);
      a[1] = std::numeric_limits<T>::max(), b[1] = T(0);
      a[2] = std::numeric_limits<T>::min(), b[2] = T(0);
      a[3] = std::numeric_limits<T>::max(), b[3] = std::numeric_limits<T>::max();
    } else {  // integers as floats give ties for the comparisons
      a = randomValues<T>(n, -8, 8, 5);
      b = randomValues<T>(n, -8, 8, 6);
      for (int64_t i = 0; i < n; i += 3) a[size_t(i)] = fromDouble<T>(std::round(toDouble(a[size_t(i)])));
      for (int64_t i = 0; i < n; i += 2) b[size_t(i)] = fromDouble<T>(std::round(toDouble(b[size_t(i)])) + 0.5);
      for (int64_t i = 0; i < n; i += 5) b[size_t(i)] = a[size_t(i)];
      a[0] = fromDouble<T>(NAN), a[3] = fromDouble<T>(-0.0);
      b[1] = fromDouble<T>(NAN), b[3] = fromDouble<T>(0.0);
    }
    const kiln::kernels::BroadcastPlan plan({n}, {{n}, {n}});
    withBinaryOp(op, [&](auto opTag) {
      constexpr BinaryOp kOp = decltype(opTag)::value;
      const BinaryFn<kOp> fn;
      if constexpr (binaryIsComparison(kOp)) {
        std::vector<uint8_t> want(static_cast<size_t>(n)), got(static_cast<size_t>(n));
        kiln::kernels::compare<T>(op, a.data(), b.data(), reinterpret_cast<bool*>(want.data()), plan);
        for (int64_t i = 0; i < n; ++i) got[size_t(i)] = fn(widen(a[size_t(i)]), widen(b[size_t(i)])) ? 1 : 0;
        EXPECT_TRUE(closeTo(got, want)) << toString(elementTypeOf<T>()) << " op " << int(op);
      } else if constexpr (binaryArithmeticTakes(kOp, kInteger)) {
        std::vector<T> want(static_cast<size_t>(n)), got(static_cast<size_t>(n));
        kiln::kernels::binary<T>(op, a.data(), b.data(), want.data(), plan);
        for (int64_t i = 0; i < n; ++i)
          got[size_t(i)] = narrowTo<T>(ComputeOf<T>(fn(widen(a[size_t(i)]), widen(b[size_t(i)]))));
        EXPECT_TRUE(closeTo(got, want)) << toString(elementTypeOf<T>()) << " op " << int(op);
      }
    });
  }
}

}  // namespace

TEST(CudaElementwiseFunctors, BinaryMatchesCpu) {
#define KILN_CHECK(T) checkBinaryFunctors<T>();
  KILN_TEST_FLOAT_TYPES(KILN_CHECK)
  KILN_TEST_INTEGER_TYPES(KILN_CHECK)
#undef KILN_CHECK
}

TEST(CudaElementwiseFunctors, LogicMatchesCpu) {
  const int64_t n = 64;
  std::vector<uint8_t> a = randomBools(n, 1), b = randomBools(n, 2);
  const kiln::kernels::BroadcastPlan plan({n}, {{n}, {n}});
  for (BinaryOp op : {BinaryOp::kAnd, BinaryOp::kOr, BinaryOp::kXor, BinaryOp::kEqual}) {
    std::vector<uint8_t> want(static_cast<size_t>(n)), got(static_cast<size_t>(n));
    kiln::kernels::logical(op, reinterpret_cast<const bool*>(a.data()), reinterpret_cast<const bool*>(b.data()),
                           reinterpret_cast<bool*>(want.data()), plan);
    for (int64_t i = 0; i < n; ++i) {
      const uint8_t x = a[size_t(i)], y = b[size_t(i)];
      switch (op) {
        case BinaryOp::kAnd: got[size_t(i)] = BinaryFn<BinaryOp::kAnd>{}(x, y); break;
        case BinaryOp::kOr: got[size_t(i)] = BinaryFn<BinaryOp::kOr>{}(x, y); break;
        case BinaryOp::kXor: got[size_t(i)] = BinaryFn<BinaryOp::kXor>{}(x, y); break;
        default: got[size_t(i)] = BoolEqualFn{}(x, y); break;
      }
    }
    EXPECT_TRUE(closeTo(got, want)) << int(op);
  }
}

namespace {

template <class Base, class Exponent>
void checkPowerPair() {
  const int64_t n = 500;
  constexpr bool kIntegerBase = std::is_integral_v<Base>, kIntegerExponent = std::is_integral_v<Exponent>;
  // Integer bases with float exponents stay positive: pow's NaN or infinity back to an integer is
  // an undefined conversion on the CPU.
  std::vector<Base> base = kIntegerBase ? randomValues<Base>(n, kIntegerExponent ? -6 : 1, 6, 8, false)
                                        : randomValues<Base>(n, 0.1, 3, 8);
  std::vector<Exponent> exponent =
      kIntegerExponent ? randomValues<Exponent>(n, std::is_signed_v<Exponent> ? -3 : 0, 9, 9, false)
                       : randomValues<Exponent>(n, -2, 3, 9);
  if constexpr (!kIntegerBase && !kIntegerExponent) {  // negative bases with whole exponents
    for (int64_t i = 0; i < n; i += 4) {
      base[size_t(i)] = fromDouble<Base>(-toDouble(base[size_t(i)]));
      exponent[size_t(i)] = fromDouble<Exponent>(std::round(toDouble(exponent[size_t(i)])));
    }
  }
  std::vector<Base> want(static_cast<size_t>(n)), got(static_cast<size_t>(n));
  kiln::kernels::power<Base, Exponent>(base.data(), exponent.data(), want.data(),
                                        kiln::kernels::BroadcastPlan({n}, {{n}, {n}}));
  for (int64_t i = 0; i < n; ++i) {
    using S = typename CudaStorage<Exponent>::type;
    const S stored = bitCast<S>(exponent[size_t(i)]);
    const PowExponent e = loadPowExponent(&stored, 0, elementTypeOf<Exponent>());
    got[size_t(i)] = narrowTo<Base>(power(widen(base[size_t(i)]), e));
  }
  EXPECT_TRUE(closeTo(got, want)) << toString(elementTypeOf<Base>()) << " ^ " << toString(elementTypeOf<Exponent>());
}

template <class Base>
void checkPowerBase() {
#define KILN_CHECK(Exponent) checkPowerPair<Base, Exponent>();
  KILN_TEST_FLOAT_TYPES(KILN_CHECK)
  KILN_TEST_INTEGER_TYPES(KILN_CHECK)
#undef KILN_CHECK
}

}  // namespace

TEST(CudaElementwiseFunctors, PowMatchesCpuForEveryTypeMix) {
  checkPowerBase<float>();
  checkPowerBase<double>();
  checkPowerBase<Float16>();
  checkPowerBase<BFloat16>();
  checkPowerBase<int32_t>();
  checkPowerBase<int64_t>();
}
