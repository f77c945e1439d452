// The broadcasting CUDA elementwise kernels (binary ops, comparisons, logic, Pow, Where, the
// variadic ops) against the CPU kernels, over broadcast patterns from scalars to rank 5, empty
// tensors included, for every type each op takes.
#include "cuda/cuda_test_util.h"

#include <kernels/cpu/elementwise/binary.h>
#include <kernels/cuda/elementwise/binary.h>
#include <kernels/cuda/elementwise/binary_ops.h>

#include <limits>

using namespace kiln::kernels::cuda;
using namespace kiln::test;
using kiln::kernels::BinaryOp;

namespace {

struct Pattern {
  std::vector<int64_t> out, a, b;
};

const std::vector<Pattern> kPatterns{
    {{1001}, {1001}, {1001}},
    {{1}, {1}, {}},
    {{7, 33}, {7, 33}, {33}},
    {{7, 33}, {7, 1}, {1, 33}},
    {{2, 3, 4, 5}, {}, {2, 3, 4, 5}},
    {{2, 3, 4, 5}, {2, 3, 4, 5}, {1}},
    {{2, 4, 3, 6, 5}, {2, 1, 3, 1, 5}, {4, 1, 6, 1}},
    {{3, 0, 4}, {3, 0, 4}, {4}},
    {{1, 1, 9}, {9}, {1, 1, 1}},
    {{65, 129}, {65, 129}, {65, 129}},
    {{5, 1, 7}, {5, 1, 7}, {1, 1, 7}},
    // Whole 16-byte packs along the innermost dim (the packed indexed path): a per-channel scale on a
    // channels-last map, a row broadcast, and A repeated along the inner dim.
    {{2, 5, 6, 16}, {2, 5, 6, 16}, {2, 1, 1, 16}},
    {{3, 7, 24}, {3, 7, 24}, {24}},
    {{4, 6, 8}, {4, 6, 1}, {4, 6, 8}},
};

template <class T>
void inputsFor(BinaryOp op, const Pattern& p, std::vector<T>& a, std::vector<T>& b, uint32_t seed) {
  const int64_t na = elementCount(p.a), nb = elementCount(p.b);
  if constexpr (std::is_integral_v<T>) {
    const bool shift = op == BinaryOp::kBitShiftLeft || op == BinaryOp::kBitShiftRight;
    a = randomValues<T>(na, std::is_signed_v<T> ? -100 : 0, 100, seed, false);
    b = shift ? randomValues<T>(nb, std::is_signed_v<T> ? -2 : 0, 70, seed + 1, false)
              : randomValues<T>(nb, std::is_signed_v<T> ? -9 : 0, 9, seed + 1, false);  // zeros test x / 0
    if (na > 2) a[0] = std::numeric_limits<T>::min(), a[1] = std::numeric_limits<T>::max();
    if (nb > 1) b[0] = T(-1);
  } else {
    a = randomValues<T>(na, -8, 8, seed);
    b = randomValues<T>(nb, -8, 8, seed + 1);
    for (int64_t i = 0; i < na; i += 3) a[size_t(i)] = fromDouble<T>(std::round(toDouble(a[size_t(i)])));
    for (int64_t i = 0; i < nb; i += 2) b[size_t(i)] = fromDouble<T>(std::round(toDouble(b[size_t(i)])) + 0.5);
    for (int64_t i = 0; i < nb; i += 5) b[size_t(i)] = fromDouble<T>(std::round(toDouble(b[size_t(i)])));
    if (na > 3) a[3] = fromDouble<T>(NAN);
  }
}

template <class T>
void checkBinary(BinaryOp op, const Pattern& p) {
  std::vector<T> a, b;
  inputsFor<T>(op, p, a, b, uint32_t(elementCount(p.out)) + uint32_t(op));
  const int64_t n = elementCount(p.out);
  const kiln::kernels::BroadcastPlan plan(p.out, {p.a, p.b});
  DeviceBuffer da(a), db(b);
  const std::string what = std::string(toString(elementTypeOf<T>())) + " op " + std::to_string(int(op)) + " " +
                           dimsText(p.a) + " x " + dimsText(p.b);
  if (binaryIsComparison(op)) {
    std::vector<uint8_t> want(static_cast<size_t>(n));
    kiln::kernels::compare<T>(op, a.data(), b.data(), reinterpret_cast<bool*>(want.data()), plan);
    DeviceBuffer out(static_cast<size_t>(n));
    ASSERT_TRUE(runPoisoned(out, [&] {
      return launchBinary(op, da.data(), p.a, db.data(), p.b, out.data(), p.out, elementTypeOf<T>(), nullptr);
    })) << what;
    EXPECT_TRUE(closeTo(out.read<uint8_t>(), want)) << what;
  } else {
    std::vector<T> want(static_cast<size_t>(n));
    kiln::kernels::binary<T>(op, a.data(), b.data(), want.data(), plan);
    DeviceBuffer out(n * sizeof(T));
    ASSERT_TRUE(runPoisoned(out, [&] {
      return launchBinary(op, da.data(), p.a, db.data(), p.b, out.data(), p.out, elementTypeOf<T>(), nullptr);
    })) << what;
    EXPECT_TRUE(closeTo(out.read<T>(), want)) << what;
  }
}

template <class T>
void checkEveryBinaryOp() {
  for (BinaryOp op : {
#define KILN_LIST_OP(name) BinaryOp::name,
           KILN_CUDA_BINARY_OPS(KILN_LIST_OP)
#undef KILN_LIST_OP
       }) {
    if (!binaryIsComparison(op) && !binaryArithmeticTakes(op, std::is_integral_v<T>)) {
      DeviceBuffer buffer(16);
      const std::vector<int64_t> one{1};
      EXPECT_EQ(launchBinary(op, buffer.data(), one, buffer.data(), one, buffer.data(), one, elementTypeOf<T>(), nullptr),
                cudaErrorInvalidValue)
          << int(op);
      continue;
    }
    for (const Pattern& p : kPatterns) checkBinary<T>(op, p);
  }
}

}  // namespace

TEST(CudaBinary, EveryOpTypeAndBroadcastMatchesCpu) {
  KILN_REQUIRE_GPU();
#define KILN_CHECK(T) checkEveryBinaryOp<T>();
  KILN_TEST_FLOAT_TYPES(KILN_CHECK)
  KILN_TEST_INTEGER_TYPES(KILN_CHECK)
#undef KILN_CHECK
}

TEST(CudaBinary, LogicOnBoolMatchesCpu) {
  KILN_REQUIRE_GPU();
  for (const Pattern& p : kPatterns)
    for (BinaryOp op : {BinaryOp::kAnd, BinaryOp::kOr, BinaryOp::kXor, BinaryOp::kEqual}) {
      const int64_t n = elementCount(p.out);
      const std::vector<uint8_t> a = randomBools(elementCount(p.a), 3), b = randomBools(elementCount(p.b), 4);
      std::vector<uint8_t> want(static_cast<size_t>(n));
      kiln::kernels::logical(op, reinterpret_cast<const bool*>(a.data()), reinterpret_cast<const bool*>(b.data()),
                             reinterpret_cast<bool*>(want.data()), kiln::kernels::BroadcastPlan(p.out, {p.a, p.b}));
      DeviceBuffer da(a), db(b), out(static_cast<size_t>(n));
      ASSERT_TRUE(runPoisoned(out, [&] {
        return launchBinary(op, da.data(), p.a, db.data(), p.b, out.data(), p.out, ElementType::kBool, nullptr);
      }));
      EXPECT_TRUE(closeTo(out.read<uint8_t>(), want)) << int(op) << " " << dimsText(p.a) << " x " << dimsText(p.b);
    }
  DeviceBuffer buffer(16);
  const std::vector<int64_t> one{1};
  EXPECT_EQ(launchBinary(BinaryOp::kLess, buffer.data(), one, buffer.data(), one, buffer.data(), one,
                         ElementType::kBool, nullptr),
            cudaErrorInvalidValue);
}

TEST(CudaBinary, RefusesDimsThatDoNotBroadcast) {
  KILN_REQUIRE_GPU();
  DeviceBuffer buffer(64);
  EXPECT_EQ(launchBinary(BinaryOp::kAdd, buffer.data(), {3, 4}, buffer.data(), {2, 4}, buffer.data(), {3, 4},
                         ElementType::kFloat32, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(launchBinary(BinaryOp::kAdd, buffer.data(), std::vector<int64_t>(9, 1), buffer.data(), {1},
                         buffer.data(), std::vector<int64_t>(9, 1), ElementType::kFloat32, nullptr),
            cudaErrorInvalidValue);
}

TEST(CudaBinary, InPlaceOnTheFirstInput) {
  KILN_REQUIRE_GPU();
  const std::vector<int64_t> dims{37, 41}, row{41};
  std::vector<float> a = randomValues<float>(elementCount(dims), -3, 3, 1), b = randomValues<float>(41, -3, 3, 2);
  std::vector<float> want(a.size());
  kiln::kernels::binary<float>(BinaryOp::kMul, a.data(), b.data(), want.data(), kiln::kernels::BroadcastPlan(dims, {dims, row}));
  DeviceBuffer da(a), db(b);
  ASSERT_EQ(launchBinary(BinaryOp::kMul, da.data(), dims, db.data(), row, da.data(), dims, ElementType::kFloat32, nullptr),
            cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_TRUE(closeTo(da.read<float>(), want));
}

namespace {

template <class Base, class Exponent>
void checkPowPair(const Pattern& p) {
  constexpr bool kIntegerBase = std::is_integral_v<Base>, kIntegerExponent = std::is_integral_v<Exponent>;
  const int64_t n = elementCount(p.out);
  // An integer base with a float exponent converts pow's double back to the integer: NaN and
  // infinity (negative or zero bases) are undefined conversions on the CPU, so those bases stay positive.
  const double lowestBase = kIntegerExponent ? -6 : 1;
  std::vector<Base> base = kIntegerBase ? randomValues<Base>(elementCount(p.a), lowestBase, 6, 8, false)
                                        : randomValues<Base>(elementCount(p.a), 0.1, 3, 8);
  std::vector<Exponent> exponent =
      kIntegerExponent ? randomValues<Exponent>(elementCount(p.b), std::is_signed_v<Exponent> ? -3 : 0, 9, 9, false)
                       : randomValues<Exponent>(elementCount(p.b), -2, 3, 9);
  std::vector<Base> want(static_cast<size_t>(n));
  kiln::kernels::power<Base, Exponent>(base.data(), exponent.data(), want.data(),
                                        kiln::kernels::BroadcastPlan(p.out, {p.a, p.b}));
  DeviceBuffer db(base), de(exponent), out(n * sizeof(Base));
  ASSERT_TRUE(runPoisoned(out, [&] {
    return launchPow(db.data(), p.a, elementTypeOf<Base>(), de.data(), p.b, elementTypeOf<Exponent>(), out.data(), p.out,
                     nullptr);
  }));
  EXPECT_TRUE(closeTo(out.read<Base>(), want)) << toString(elementTypeOf<Base>()) << " ^ "
                                               << toString(elementTypeOf<Exponent>()) << " " << dimsText(p.b);
}

template <class Base>
void checkPowBase() {
  for (const Pattern& p : {kPatterns[0], kPatterns[3], kPatterns[5], kPatterns[6], kPatterns[7]}) {
#define KILN_CHECK(Exponent) checkPowPair<Base, Exponent>(p);
    KILN_TEST_FLOAT_TYPES(KILN_CHECK)
    KILN_TEST_INTEGER_TYPES(KILN_CHECK)
#undef KILN_CHECK
  }
}

}  // namespace

TEST(CudaBinary, PowMatchesCpuForEveryTypeMix) {
  KILN_REQUIRE_GPU();
  checkPowBase<float>();
  checkPowBase<double>();
  checkPowBase<Float16>();
  checkPowBase<BFloat16>();
  checkPowBase<int32_t>();
  checkPowBase<int64_t>();
  DeviceBuffer buffer(16);
  EXPECT_EQ(launchPow(buffer.data(), {1}, ElementType::kInt8, buffer.data(), {1}, ElementType::kInt8, buffer.data(), {1},
                      nullptr),
            cudaErrorInvalidValue);
}

namespace {

template <class T>
void checkWhere() {
  struct Triple {
    std::vector<int64_t> out, condition, x, y;
  };
  for (const Triple& t : {Triple{{1001}, {1001}, {1001}, {1001}}, Triple{{7, 33}, {7, 1}, {33}, {7, 33}},
                          Triple{{2, 3, 4, 5}, {}, {2, 3, 4, 5}, {1}}, Triple{{2, 4, 3, 6, 5}, {4, 1, 6, 1}, {2, 1, 3, 1, 5}, {5}},
                          Triple{{0, 5}, {1, 5}, {0, 5}, {5}}, Triple{{1}, {}, {}, {}}}) {
    const int64_t n = elementCount(t.out);
    const std::vector<uint8_t> condition = randomBools(elementCount(t.condition), 5);
    const std::vector<T> x = randomValues<T>(elementCount(t.x), -9, 9, 6), y = randomValues<T>(elementCount(t.y), -9, 9, 7);
    using Bits = std::conditional_t<sizeof(T) == 1, uint8_t,
                                    std::conditional_t<sizeof(T) == 2, uint16_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;
    std::vector<T> want(static_cast<size_t>(n));
    kiln::kernels::select<Bits>(reinterpret_cast<const bool*>(condition.data()), reinterpret_cast<const Bits*>(x.data()),
                                reinterpret_cast<const Bits*>(y.data()), reinterpret_cast<Bits*>(want.data()),
                                kiln::kernels::BroadcastPlan(t.out, {t.condition, t.x, t.y}));
    DeviceBuffer dc(condition), dx(x), dy(y), out(n * sizeof(T));
    ASSERT_TRUE(runPoisoned(out, [&] {
      return launchWhere(dc.data(), t.condition, dx.data(), t.x, dy.data(), t.y, out.data(), t.out, elementTypeOf<T>(),
                         nullptr);
    }));
    EXPECT_TRUE(closeTo(out.read<T>(), want, 0)) << toString(elementTypeOf<T>()) << " " << dimsText(t.condition);
  }
}

}  // namespace

TEST(CudaBinary, WhereMatchesCpu) {
  KILN_REQUIRE_GPU();
  checkWhere<int8_t>();
  checkWhere<Float16>();
  checkWhere<float>();
  checkWhere<int64_t>();
  checkWhere<double>();
}

namespace {

// What the CPU's variadic kernel does: pairwise into out, then Mean's division in T.
template <class T>
std::vector<T> variadicOnCpu(VariadicOp op, const std::vector<std::vector<T>>& inputs,
                             const std::vector<std::vector<int64_t>>& dims, const std::vector<int64_t>& outDims) {
  const BinaryOp pairOp = op == VariadicOp::kMin ? BinaryOp::kMin : op == VariadicOp::kMax ? BinaryOp::kMax : BinaryOp::kAdd;
  std::vector<T> out(static_cast<size_t>(elementCount(outDims)));
  kiln::kernels::binary<T>(pairOp, inputs[0].data(), inputs[1].data(), out.data(),
                           kiln::kernels::BroadcastPlan(outDims, {dims[0], dims[1]}));
  for (size_t i = 2; i < inputs.size(); ++i)
    kiln::kernels::binary<T>(pairOp, out.data(), inputs[i].data(), out.data(),
                             kiln::kernels::BroadcastPlan(outDims, {outDims, dims[i]}));
  if (op == VariadicOp::kMean) {
    const T divisor = kiln::kernels::fromFloat<T>(float(inputs.size()));
    kiln::kernels::binary<T>(BinaryOp::kDiv, out.data(), &divisor, out.data(), kiln::kernels::BroadcastPlan(outDims, {outDims, {}}));
  }
  return out;
}

template <class T>
void checkVariadic() {
  const std::vector<std::vector<int64_t>> dims{{3, 4}, {2, 3, 4}, {2, 1, 4}, {1}};
  const std::vector<int64_t> outDims{2, 3, 4};
  std::vector<std::vector<T>> inputs;
  std::vector<std::unique_ptr<DeviceBuffer>> buffers;
  std::vector<const void*> pointers;
  for (size_t i = 0; i < dims.size(); ++i) {
    inputs.push_back(randomValues<T>(elementCount(dims[i]), -20, 20, uint32_t(10 + i)));
    buffers.push_back(std::make_unique<DeviceBuffer>(inputs.back()));
    pointers.push_back(buffers.back()->data());
  }
  DeviceBuffer out(elementCount(outDims) * sizeof(T));
  for (VariadicOp op : {VariadicOp::kSum, VariadicOp::kMean, VariadicOp::kMin, VariadicOp::kMax}) {
    const std::vector<T> want = variadicOnCpu(op, inputs, dims, outDims);
    ASSERT_TRUE(runPoisoned(out, [&] {
      return launchVariadic(op, pointers, dims, out.data(), outDims, elementTypeOf<T>(), nullptr);
    }));
    EXPECT_TRUE(closeTo(out.read<T>(), want)) << toString(elementTypeOf<T>()) << " op " << int(op);
  }
  DeviceBuffer single(inputs[1]);  // one input: a copy
  ASSERT_TRUE(runPoisoned(out, [&] {
    return launchVariadic(VariadicOp::kMean, {single.data()}, {dims[1]}, out.data(), outDims, elementTypeOf<T>(), nullptr);
  }));
  EXPECT_TRUE(closeTo(out.read<T>(), inputs[1]));
}

}  // namespace

TEST(CudaBinary, VariadicMatchesCpu) {
  KILN_REQUIRE_GPU();
  checkVariadic<float>();
  checkVariadic<Float16>();
  checkVariadic<BFloat16>();
  checkVariadic<double>();
  checkVariadic<int32_t>();
  checkVariadic<uint8_t>();
}
