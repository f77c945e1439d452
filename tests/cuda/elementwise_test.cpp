// The one-input CUDA elementwise kernels against the CPU kernels: every op and type, odd sizes,
// unaligned pointers (the unpacked path), and the NaN/infinity rules.
#include "cuda/cuda_test_util.h"

#include <kernels/cpu/elementwise/unary.h>
#include <kernels/cuda/elementwise/unary.h>
#include <kernels/cuda/elementwise/unary_ops.h>

#include <limits>

using namespace kiln::kernels::cuda;
using namespace kiln::test;
using kiln::kernels::UnaryOp;
using kiln::kernels::UnaryParams;

namespace {

const std::vector<int64_t> kSizes{1, 7, 33, 1001, 70001};

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

std::pair<double, double> domainOf(UnaryOp op) {
  switch (op) {
    case UnaryOp::kLog: case UnaryOp::kSqrt: case UnaryOp::kReciprocal: return {0.05, 10};
    case UnaryOp::kAsin: case UnaryOp::kAcos: case UnaryOp::kAtanh: return {-0.95, 0.95};
    case UnaryOp::kAcosh: return {1.05, 10};
    case UnaryOp::kTan: return {-1.3, 1.3};
    default: return {-6, 6};
  }
}

// offset > 0 shifts both pointers off their 16-byte alignment.
template <class T>
void checkUnary(UnaryOp op, int64_t n, int64_t offset) {
  const UnaryParams params = paramsFor(op);
  std::vector<T> in;
  if constexpr (std::is_integral_v<T>) {
    in = randomValues<T>(n + offset, double(std::numeric_limits<T>::lowest()), double(std::numeric_limits<T>::max()),
                         uint32_t(n));
  } else {
    const auto [lo, hi] = domainOf(op);
    in = randomValues<T>(n + offset, lo, hi, uint32_t(n));
  }
  std::vector<T> want(in.size());
  kiln::kernels::unary<T>(op, in.data() + offset, want.data() + offset, n, params);
  DeviceBuffer input(in), output((n + offset) * sizeof(T));
  ASSERT_TRUE(runPoisoned(
      output,
      [&] { return launchUnary(op, input.as<T>() + offset, output.as<T>() + offset, n, elementTypeOf<T>(), params, nullptr); },
      size_t(offset) * sizeof(T)));
  std::vector<T> got = output.read<T>();
  got.erase(got.begin(), got.begin() + offset);
  want.erase(want.begin(), want.begin() + offset);
  EXPECT_TRUE(closeTo(got, want)) << toString(elementTypeOf<T>()) << " op " << int(op) << " n " << n;
}

template <class T>
void checkEveryUnaryOp() {
  for (UnaryOp op : {
#define KILN_LIST_OP(name) UnaryOp::name,
           KILN_CUDA_UNARY_OPS(KILN_LIST_OP)
#undef KILN_LIST_OP
       }) {
    const bool takes = std::is_integral_v<T> ? unaryTakesIntegers(op) : unaryTakesFloats(op);
    if (!takes) {
      DeviceBuffer buffer(16);
      EXPECT_EQ(launchUnary(op, buffer.data(), buffer.data(), 1, elementTypeOf<T>(), {}, nullptr),
                cudaErrorInvalidValue);
      continue;
    }
    for (int64_t n : kSizes) checkUnary<T>(op, n, 0);
    checkUnary<T>(op, 1001, 1);
  }
}

}  // namespace

TEST(CudaUnary, EveryOpAndTypeMatchesCpu) {
  KILN_REQUIRE_GPU();
#define KILN_CHECK(T) checkEveryUnaryOp<T>();
  KILN_TEST_FLOAT_TYPES(KILN_CHECK)
  KILN_TEST_INTEGER_TYPES(KILN_CHECK)
#undef KILN_CHECK
}

TEST(CudaUnary, SpecialValuesFollowTheCpu) {
  KILN_REQUIRE_GPU();
  const std::vector<float> in{NAN, -NAN, INFINITY, -INFINITY, -0.0f, 0.0f, 1e-40f, -88.0f, 89.0f, 1e30f, -1e30f};
  for (UnaryOp op : {UnaryOp::kRelu, UnaryOp::kSign, UnaryOp::kHardSigmoid, UnaryOp::kHardSwish, UnaryOp::kSigmoid,
                     UnaryOp::kThresholdedRelu, UnaryOp::kLeakyRelu, UnaryOp::kElu, UnaryOp::kSoftplus, UnaryOp::kAbs,
                     UnaryOp::kRound, UnaryOp::kShrink, UnaryOp::kExp, UnaryOp::kTanh, UnaryOp::kErf, UnaryOp::kNeg,
                     UnaryOp::kFloor, UnaryOp::kCeil, UnaryOp::kSoftsign, UnaryOp::kGelu}) {
    const UnaryParams params = paramsFor(op);
    std::vector<float> want(in.size());
    kiln::kernels::unary<float>(op, in.data(), want.data(), int64_t(in.size()), params);
    DeviceBuffer input(in), output(in.size() * sizeof(float));
    ASSERT_TRUE(runPoisoned(output, [&] {
      return launchUnary(op, input.data(), output.data(), int64_t(in.size()), ElementType::kFloat32, params, nullptr);
    }));
    EXPECT_TRUE(closeTo(output.read<float>(), want)) << "op " << int(op);
  }
}

TEST(CudaUnary, EmptyTensorsDoNothing) {
  KILN_REQUIRE_GPU();
  EXPECT_EQ(launchUnary(UnaryOp::kExp, nullptr, nullptr, 0, ElementType::kFloat32, {}, nullptr), cudaSuccess);
  EXPECT_EQ(launchClip(nullptr, nullptr, 0, ElementType::kInt8, nullptr, nullptr, nullptr), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

namespace {

template <class T>
void checkClip() {
  const int64_t n = 1001;
  std::vector<T> in = randomValues<T>(n, std::is_signed_v<T> || kIsFloatLike<T> ? -50 : 0, 100, 4);
  if constexpr (kIsFloatLike<T>) in[3] = fromDouble<T>(NAN);
  const T lo = fromDouble<T>(std::is_signed_v<T> || kIsFloatLike<T> ? -20 : 10), hi = fromDouble<T>(30);
  const T lowest = kIsFloatLike<T> ? fromDouble<T>(-INFINITY) : std::numeric_limits<T>::lowest();
  const T highest = kIsFloatLike<T> ? fromDouble<T>(INFINITY) : std::numeric_limits<T>::max();
  DeviceBuffer input(in), output(n * sizeof(T)), bounds(std::vector<T>{lo, hi});
  const T* low = bounds.as<T>();
  const T* high = bounds.as<T>() + 1;
  struct Case {
    const T* lo;
    const T* hi;
    T cpuLo, cpuHi;
  };
  for (const Case& c : {Case{low, high, lo, hi}, Case{low, nullptr, lo, highest}, Case{nullptr, high, lowest, hi},
                        Case{high, low, hi, lo}, Case{nullptr, nullptr, lowest, highest}}) {
    std::vector<T> want(static_cast<size_t>(n));
    kiln::kernels::clip<T>(in.data(), want.data(), n, c.cpuLo, c.cpuHi);
    ASSERT_TRUE(runPoisoned(output, [&] {
      return launchClip(input.data(), output.data(), n, elementTypeOf<T>(), c.lo, c.hi, nullptr);
    }));
    EXPECT_TRUE(closeTo(output.read<T>(), want)) << toString(elementTypeOf<T>());
  }
}

}  // namespace

TEST(CudaUnary, ClipMatchesCpu) {
  KILN_REQUIRE_GPU();
#define KILN_CHECK(T) checkClip<T>();
  KILN_TEST_FLOAT_TYPES(KILN_CHECK)
  KILN_TEST_INTEGER_TYPES(KILN_CHECK)
#undef KILN_CHECK
}

TEST(CudaUnary, NotMatchesCpu) {
  KILN_REQUIRE_GPU();
  for (int64_t n : kSizes) {
    const std::vector<uint8_t> in = randomBools(n, uint32_t(n));
    std::vector<uint8_t> want(static_cast<size_t>(n));
    kiln::kernels::logicalNot(reinterpret_cast<const bool*>(in.data()), reinterpret_cast<bool*>(want.data()), n);
    DeviceBuffer input(in), output(static_cast<size_t>(n));
    ASSERT_TRUE(runPoisoned(output, [&] { return launchNot(input.data(), output.data(), n, nullptr); }));
    EXPECT_TRUE(closeTo(output.read<uint8_t>(), want));
  }
}

namespace {

template <class T>
void checkClassify() {
  std::vector<T> in = randomValues<T>(333, -100, 100, 9);
  for (size_t i = 0; i < in.size(); i += 5) in[i] = fromDouble<T>(NAN);
  for (size_t i = 1; i < in.size(); i += 7) in[i] = fromDouble<T>(INFINITY);
  for (size_t i = 2; i < in.size(); i += 11) in[i] = fromDouble<T>(-INFINITY);
  const int64_t n = int64_t(in.size());
  DeviceBuffer input(in), output(in.size());
  std::vector<uint8_t> want(in.size());
  kiln::kernels::isNaN<T>(in.data(), reinterpret_cast<bool*>(want.data()), n);
  ASSERT_TRUE(runPoisoned(output, [&] { return launchIsNaN(input.data(), output.data(), n, elementTypeOf<T>(), nullptr); }));
  EXPECT_TRUE(closeTo(output.read<uint8_t>(), want)) << toString(elementTypeOf<T>());
  for (bool positive : {false, true})
    for (bool negative : {false, true}) {
      kiln::kernels::isInf<T>(in.data(), reinterpret_cast<bool*>(want.data()), n, positive, negative);
      ASSERT_TRUE(runPoisoned(output, [&] {
        return launchIsInf(input.data(), output.data(), n, elementTypeOf<T>(), positive, negative, nullptr);
      }));
      EXPECT_TRUE(closeTo(output.read<uint8_t>(), want)) << toString(elementTypeOf<T>()) << positive << negative;
    }
}

}  // namespace

TEST(CudaUnary, IsNaNAndIsInfMatchCpu) {
  KILN_REQUIRE_GPU();
#define KILN_CHECK(T) checkClassify<T>();
  KILN_TEST_FLOAT_TYPES(KILN_CHECK)
#undef KILN_CHECK
  DeviceBuffer buffer(16);
  EXPECT_EQ(launchIsNaN(buffer.data(), buffer.data(), 1, ElementType::kInt32, nullptr), cudaErrorInvalidValue);
}
