// The CUDA reductions against the CPU kernels (reduce_reference.h): every ReduceKind and numeric
// type over axis sets from one axis to all, empty reductions and outputs, short and long lines,
// split launches with their workspace; ArgMax/ArgMin with ties and NaN; CumSum; TopK on both the
// shared-memory and the workspace path.
#include "cuda/cuda_test_util.h"
#include "cuda/reduce_reference.h"

#include <kernels/cpu/reduce/reduce.h>
#include <kernels/cuda/reduce/reduce.h>

#include <limits>

using namespace kiln::kernels::cuda;
using namespace kiln::test;
using kiln::kernels::ReduceKind;

namespace {

const ReduceKind kKinds[] = {ReduceKind::kSum, ReduceKind::kMean, ReduceKind::kMax, ReduceKind::kMin,
                             ReduceKind::kProd, ReduceKind::kL1, ReduceKind::kL2, ReduceKind::kLogSum,
                             ReduceKind::kLogSumExp, ReduceKind::kSumSquare};

struct ReduceCase {
  std::vector<int64_t> dims;
  std::vector<bool> reduced;
};

const std::vector<ReduceCase> kCases{
    {{1001}, {true}},
    {{7, 33}, {false, true}},
    {{7, 33}, {true, false}},
    {{2, 3, 4, 5}, {false, true, false, true}},
    {{2, 3, 4, 5}, {true, false, true, false}},
    {{3, 1, 5}, {false, true, false}},
    {{2, 3, 2, 3, 2}, {true, false, true, false, true}},
    {{17, 19, 5}, {true, true, true}},
    {{4, 0, 3}, {false, true, false}},   // empty reduction: the identity
    {{0, 3}, {false, true}},             // no outputs
    {{6, 20000}, {false, true}},
    {{1, 300001}, {false, true}},        // one long row: split over blocks
    {{100003, 3}, {true, false}},        // long columns: split
    {{9, 1}, {true, true}},
};

int64_t reducedCount(const ReduceCase& c) {
  int64_t r = 1;
  for (size_t d = 0; d < c.dims.size(); ++d) r *= c.reduced[d] ? c.dims[d] : 1;
  return r;
}

// Inputs whose reduction stays in range: products of values near 1, logs of positive sums, and
// for integers sums that fit (the kernels and the CPU wrap alike, but sqrt and log of a wrapped
// sum are undefined conversions).
template <class T>
bool inputsFor(ReduceKind kind, const ReduceCase& c, std::vector<T>& in, uint32_t seed) {
  const int64_t n = elementCount(c.dims), r = reducedCount(c);
  if constexpr (std::is_integral_v<T>) {
    const bool needsRange = kind == ReduceKind::kL2 || kind == ReduceKind::kLogSum || kind == ReduceKind::kLogSumExp;
    if (needsRange && double(r) * 9 > double(std::numeric_limits<T>::max())) return false;
    if (needsRange && r == 0 && kind != ReduceKind::kL2) return false;  // log(0) to an integer: undefined
    const double lo = needsRange || std::is_unsigned_v<T> ? 1 : -3;
    in = randomValues<T>(n, lo, 3, seed, kind != ReduceKind::kProd);
  } else {
    if (kind == ReduceKind::kProd && r > 2000) return false;
    const bool positive = kind == ReduceKind::kLogSum || kind == ReduceKind::kProd;
    in = kind == ReduceKind::kProd ? randomValues<T>(n, 0.9, 1.1, seed)
                                   : randomValues<T>(n, positive ? 0.1 : -4, 4, seed);
  }
  return true;
}

template <class T>
void checkReduce(ReduceKind kind, const ReduceCase& c) {
  std::vector<T> in;
  if (!inputsFor<T>(kind, c, in, uint32_t(elementCount(c.dims)) + uint32_t(kind))) return;
  const std::vector<T> want = referenceReduce(kind, in, c.dims, c.reduced);
  const size_t workspaceBytes = reduceWorkspaceBytes(kind, c.dims, c.reduced, elementTypeOf<T>());
  DeviceBuffer input(in), output(want.size() * sizeof(T)), workspace(workspaceBytes);
  ASSERT_TRUE(runPoisoned(output, [&] {
    return launchReduce(kind, input.data(), output.data(), c.dims, c.reduced, elementTypeOf<T>(), workspace.data(),
                        workspaceBytes, nullptr);
  })) << dimsText(c.dims);
  // Long float sums in a different order: allow for the CPU's own rounding as well.
  const double tolerance = std::is_same_v<T, float> && reducedCount(c) > 10000 ? 1e-4 : defaultTolerance<T>();
  EXPECT_TRUE(closeTo(output.read<T>(), want, tolerance))
      << toString(elementTypeOf<T>()) << " kind " << int(kind) << " dims " << dimsText(c.dims);
  if (workspaceBytes > 0) {
    EXPECT_EQ(launchReduce(kind, input.data(), output.data(), c.dims, c.reduced, elementTypeOf<T>(), workspace.data(),
                           workspaceBytes - 1, nullptr),
              cudaErrorInvalidValue);
  }
}

template <class T>
void checkEveryReduceKind() {
  for (ReduceKind kind : kKinds)
    for (const ReduceCase& c : kCases) checkReduce<T>(kind, c);
}

}  // namespace

TEST(CudaReduce, EveryKindTypeAndAxisSetMatchesCpu) {
  KILN_REQUIRE_GPU();
#define KILN_CHECK(T) checkEveryReduceKind<T>();
  KILN_TEST_FLOAT_TYPES(KILN_CHECK)
  KILN_TEST_INTEGER_TYPES(KILN_CHECK)
#undef KILN_CHECK
}

TEST(CudaReduce, SplitsNeedTheirWorkspace) {
  KILN_REQUIRE_GPU();
  const std::vector<int64_t> dims{1, 300001};
  const std::vector<bool> reduced{false, true};
  EXPECT_GT(reduceWorkspaceBytes(ReduceKind::kSum, dims, reduced, ElementType::kFloat32), 0u);
  EXPECT_GT(reduceWorkspaceBytes(ReduceKind::kLogSumExp, dims, reduced, ElementType::kFloat32),
            reduceWorkspaceBytes(ReduceKind::kSum, dims, reduced, ElementType::kFloat32));
  EXPECT_EQ(reduceWorkspaceBytes(ReduceKind::kSum, {4096, 4096}, {false, true}, ElementType::kFloat32), 0u);
  DeviceBuffer buffer(1 << 20);
  EXPECT_EQ(launchReduce(ReduceKind::kSum, buffer.data(), buffer.data(), dims, reduced, ElementType::kFloat32, nullptr, 0,
                         nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(launchReduce(ReduceKind::kSum, buffer.data(), buffer.data(), {4}, {true}, ElementType::kBool, nullptr, 0,
                         nullptr),
            cudaErrorInvalidValue);
}

namespace {

struct LineCase {
  int64_t outer, n, inner;
};

const std::vector<LineCase> kLines{{1, 1001, 1}, {7, 33, 1},   {5, 17, 3},      {2, 1, 7},
                                   {3, 100000, 1}, {1, 30001, 2}, {1000, 5, 1}, {2, 7, 0}};

template <class T>
void checkArgExtreme(const LineCase& c) {
  const int64_t n = c.outer * c.n * c.inner, outputs = c.outer * c.inner;
  std::vector<T> in = randomValues<T>(n, std::is_unsigned_v<T> ? 0 : -20, 20, uint32_t(n), false);  // many ties
  if constexpr (kIsFloatLike<T>) {
    for (int64_t i = 3; i < n; i += 97) in[size_t(i)] = fromDouble<T>(NAN);
    if (n > 0) in[0] = fromDouble<T>(NAN);  // NaN at index 0 of the first line wins
  }
  DeviceBuffer input(in), output(size_t(outputs) * sizeof(int64_t));
  for (bool largest : {false, true})
    for (bool selectLast : {false, true}) {
      std::vector<int64_t> want(static_cast<size_t>(outputs));
      kiln::kernels::argExtreme<T>(in.data(), want.data(), c.outer, c.n, c.inner, largest, selectLast);
      ASSERT_TRUE(runPoisoned(output, [&] {
        return launchArgExtreme(input.data(), output.as<int64_t>(), c.outer, c.n, c.inner, largest, selectLast,
                                elementTypeOf<T>(), nullptr);
      }));
      EXPECT_TRUE(closeTo(output.read<int64_t>(), want))
          << toString(elementTypeOf<T>()) << " [" << c.outer << "," << c.n << "," << c.inner << "] " << largest
          << selectLast;
    }
}

template <class T>
void checkCumSum(const LineCase& c) {
  const int64_t n = c.outer * c.n * c.inner;
  const std::vector<T> in = randomValues<T>(n, std::is_unsigned_v<T> ? 0 : -5, 5, uint32_t(n));
  DeviceBuffer input(in), output(size_t(n) * sizeof(T));
  for (bool exclusive : {false, true})
    for (bool reverse : {false, true}) {
      std::vector<T> want(static_cast<size_t>(n));
      kiln::kernels::cumulativeSum<T>(in.data(), want.data(), c.outer, c.n, c.inner, exclusive, reverse);
      ASSERT_TRUE(runPoisoned(output, [&] {
        return launchCumSum(input.data(), output.data(), c.outer, c.n, c.inner, exclusive, reverse, elementTypeOf<T>(),
                            nullptr);
      }));
      // A parallel scan adds in another order than the CPU's running sum.
      const double tolerance = std::is_same_v<T, float> ? 1e-4 : defaultTolerance<T>();
      EXPECT_TRUE(closeTo(output.read<T>(), want, tolerance))
          << toString(elementTypeOf<T>()) << " [" << c.outer << "," << c.n << "," << c.inner << "] " << exclusive
          << reverse;
    }
}

template <class T>
void checkLines() {
  for (const LineCase& c : kLines) {
    if (c.n > 0) checkArgExtreme<T>(c);
    checkCumSum<T>(c);
  }
}

}  // namespace

TEST(CudaReduce, ArgExtremeAndCumSumMatchCpu) {
  KILN_REQUIRE_GPU();
#define KILN_CHECK(T) checkLines<T>();
  KILN_TEST_FLOAT_TYPES(KILN_CHECK)
  KILN_TEST_INTEGER_TYPES(KILN_CHECK)
#undef KILN_CHECK
  DeviceBuffer buffer(64);
  EXPECT_EQ(launchArgExtreme(buffer.data(), buffer.as<int64_t>(), 2, 0, 1, true, false, ElementType::kFloat32, nullptr),
            cudaErrorInvalidValue);
}

namespace {

template <class T>
void checkTopK(const LineCase& c, int64_t k) {
  const int64_t n = c.outer * c.n * c.inner, outputs = c.outer * k * c.inner;
  std::vector<T> in = randomValues<T>(n, std::is_unsigned_v<T> ? 0 : -50, 50, uint32_t(n + k), false);
  if constexpr (kIsFloatLike<T>) {
    for (int64_t i = 5; i < n; i += 37) in[size_t(i)] = fromDouble<T>(NAN);
    for (int64_t i = 7; i < n; i += 41) in[size_t(i)] = fromDouble<T>(-0.0);
  }
  const size_t workspaceBytes = topKWorkspaceBytes(c.outer, c.n, c.inner, k);
  DeviceBuffer input(in), values(size_t(outputs) * sizeof(T)), indices(size_t(outputs) * sizeof(int64_t)),
      workspace(workspaceBytes);
  for (bool largest : {true, false}) {
    std::vector<T> wantValues(static_cast<size_t>(outputs));
    std::vector<int64_t> wantIndices(static_cast<size_t>(outputs));
    kiln::kernels::topK<T>(in.data(), wantValues.data(), wantIndices.data(), c.outer, c.n, c.inner, k, largest);
    ASSERT_TRUE(runPoisoned(std::vector<WrittenRegion>{{&values}, {&indices}}, [&] {
      return launchTopK(input.data(), values.data(), indices.as<int64_t>(), c.outer, c.n, c.inner, k, largest,
                        elementTypeOf<T>(), workspace.data(), workspaceBytes, nullptr);
    }));
    const std::string what = std::string(toString(elementTypeOf<T>())) + " [" + std::to_string(c.outer) + "," +
                             std::to_string(c.n) + "," + std::to_string(c.inner) + "] k " + std::to_string(k) +
                             (largest ? " largest" : " smallest");
    EXPECT_TRUE(closeTo(indices.read<int64_t>(), wantIndices)) << what;
    EXPECT_TRUE(closeTo(values.read<T>(), wantValues, 0)) << what;
  }
}

template <class T>
void checkTopKShapes() {
  checkTopK<T>({1, 1001, 1}, 1);
  checkTopK<T>({1, 1001, 1}, 10);
  checkTopK<T>({1, 1001, 1}, 1001);
  checkTopK<T>({7, 33, 1}, 33);
  checkTopK<T>({5, 17, 3}, 4);
  checkTopK<T>({3, 1, 1}, 1);
  checkTopK<T>({2, 5000, 1}, 100);   // workspace path
  checkTopK<T>({1, 4097, 2}, 4097);  // workspace path, k = n, strided lines
}

}  // namespace

TEST(CudaReduce, TopKMatchesCpu) {
  KILN_REQUIRE_GPU();
#define KILN_CHECK(T) checkTopKShapes<T>();
  KILN_TEST_FLOAT_TYPES(KILN_CHECK)
  KILN_TEST_INTEGER_TYPES(KILN_CHECK)
#undef KILN_CHECK
  EXPECT_GT(topKWorkspaceBytes(2, 5000, 1, 100), 0u);
  EXPECT_EQ(topKWorkspaceBytes(7, 2048, 1, 100), 0u);
  DeviceBuffer buffer(64);
  EXPECT_EQ(launchTopK(buffer.data(), buffer.data(), buffer.as<int64_t>(), 1, 3, 1, 4, true, ElementType::kFloat32,
                       nullptr, 0, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(launchTopK(buffer.data(), buffer.data(), buffer.as<int64_t>(), 1, 5000, 1, 4, true, ElementType::kFloat32,
                       nullptr, 0, nullptr),
            cudaErrorInvalidValue);
}
