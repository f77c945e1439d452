// MatMulQuant family on the CPU backend: every op against a naive loop written here, on seeded
// random inputs, plus error paths.
#include <kernels/cpu/common/numeric_types.h>

#include "backends/single_node_runner.h"

#include <cmath>
#include <map>

using namespace kiln;
using namespace kiln::test;

namespace {

// Naive NumPy matmul with broadcasting; dims already at least 2-D.
std::vector<double> naiveMatMul(const std::vector<double>& a, std::vector<int64_t> aDims, const std::vector<double>& b,
                                std::vector<int64_t> bDims, std::vector<int64_t>& outDims) {
  const size_t rank = std::max(aDims.size(), bDims.size());
  aDims.insert(aDims.begin(), rank - aDims.size(), 1);
  bDims.insert(bDims.begin(), rank - bDims.size(), 1);
  const int64_t M = aDims[rank - 2], K = aDims[rank - 1], N = bDims[rank - 1];
  outDims.assign(rank, 0);
  for (size_t d = 0; d + 2 < rank; ++d) outDims[d] = std::max(aDims[d], bDims[d]);
  outDims[rank - 2] = M;
  outDims[rank - 1] = N;
  int64_t batch = 1;
  for (size_t d = 0; d + 2 < rank; ++d) batch *= outDims[d];
  std::vector<double> out(size_t(batch * M * N));
  for (int64_t bi = 0; bi < batch; ++bi) {
    int64_t rest = bi, aOff = 0, bOff = 0, aStride = M * K, bStride = K * N;
    for (size_t d = rank - 2; d-- > 0;) {
      const int64_t idx = rest % outDims[d];
      rest /= outDims[d];
      aOff += (aDims[d] == 1 ? 0 : idx) * aStride;
      bOff += (bDims[d] == 1 ? 0 : idx) * bStride;
      aStride *= aDims[d];
      bStride *= bDims[d];
    }
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k) s += a[aOff + i * K + k] * b[bOff + k * N + j];
        out[(bi * M + i) * N + j] = s;
      }
  }
  return out;
}

ValueMap runMatMul(const HostTensor& a, const HostTensor& b) {
  ModelBuilder mb(13);
  mb.node("MatMul", {"a", "b"}, {"y"});
  mb.output("y");
  return runModel(mb, {{"a", a}, {"b", b}});
}

void checkMatMul(const HostTensor& a, const HostTensor& b, std::vector<int64_t> expectDims, double tol = 1e-4) {
  const HostTensor y = runMatMul(a, b).at("y").tensor;
  auto aDims = a.dims(), bDims = b.dims();
  if (aDims.size() == 1) aDims.insert(aDims.begin(), 1);
  if (bDims.size() == 1) bDims.push_back(1);
  std::vector<int64_t> dims;
  const auto expected = naiveMatMul(valuesOf(a), aDims, valuesOf(b), bDims, dims);
  EXPECT_EQ(y.dims(), expectDims);
  expectNear(valuesOf(y), expected, tol);
}

}  // namespace

TEST(MatMulQuantCpu, MatMulPlainBroadcastAndOneDimensional) {
  checkMatMul(randomFloats({5, 7}, 1), randomFloats({7, 3}, 2), {5, 3});
  checkMatMul(randomFloats({2, 1, 3, 4}, 3), randomFloats({3, 4, 5}, 4), {2, 3, 3, 5});
  checkMatMul(randomFloats({4}, 5), randomFloats({2, 4, 3}, 6), {2, 3});
  checkMatMul(randomFloats({2, 3, 4}, 7), randomFloats({4}, 8), {2, 3});
  checkMatMul(randomFloats({4}, 9), randomFloats({4}, 10), {});
}

TEST(MatMulQuantCpu, MatMulBatchStrategies) {
  checkMatMul(randomFloats({3, 37, 96}, 11), randomFloats({96, 80}, 12), {3, 37, 80});     // folds into one GEMM
  checkMatMul(randomFloats({130, 70}, 13), randomFloats({70, 150}, 14), {130, 150});       // tiled over threads
  checkMatMul(randomFloats({9, 12, 16}, 15), randomFloats({9, 16, 10}, 16), {9, 12, 10});  // parallel over batch
  checkMatMul(randomFloats({2, 70, 70}, 17), randomFloats({2, 70, 70}, 18), {2, 70, 70});  // few big products
}

TEST(MatMulQuantCpu, MatMulOtherElementTypes) {
  checkMatMul(randomTensor<double>({3, 5, 6}, 19), randomTensor<double>({6, 4}, 20), {3, 5, 4}, 1e-12);
  checkMatMul(randomTensor<int32_t>({2, 4, 5}, 21, -9, 9), randomTensor<int32_t>({2, 5, 3}, 22, -9, 9), {2, 4, 3}, 0);
  checkMatMul(randomTensor<int64_t>({3, 4}, 23, -9, 9), randomTensor<int64_t>({4, 2}, 24, -9, 9), {3, 2}, 0);
  checkMatMul(randomTensor<kernels::Float16>({2, 6, 8}, 25), randomTensor<kernels::Float16>({8, 5}, 26), {2, 6, 5},
              1e-2);
}

TEST(MatMulQuantCpu, GemmTransposesAlphaBetaAndBroadcastC) {
  const int64_t M = 6, N = 5, K = 7;
  struct Case {
    bool transA, transB;
    std::vector<int64_t> cDims;  // empty vector with hasC=false: no C
    bool hasC;
  };
  for (const Case& c : {Case{false, false, {M, N}, true}, Case{true, false, {N}, true}, Case{false, true, {M, 1}, true},
                        Case{true, true, {}, true}, Case{true, false, {}, false}}) {
    const HostTensor a = randomFloats(c.transA ? std::vector<int64_t>{K, M} : std::vector<int64_t>{M, K}, 31);
    const HostTensor b = randomFloats(c.transB ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N}, 32);
    const HostTensor cT = randomFloats(c.cDims, 33);
    ModelBuilder mb(13);
    auto& node =
        mb.node("Gemm", c.hasC ? std::vector<std::string>{"a", "b", "c"} : std::vector<std::string>{"a", "b"}, {"y"});
    ModelBuilder::setInt(node, "transA", c.transA);
    ModelBuilder::setInt(node, "transB", c.transB);
    ModelBuilder::setFloat(node, "alpha", 0.75f);
    ModelBuilder::setFloat(node, "beta", 1.5f);
    mb.output("y");
    std::vector<std::pair<std::string, HostTensor>> inputs = {{"a", a}, {"b", b}};
    if (c.hasC) inputs.push_back({"c", cT});
    const HostTensor y = runModel(mb, inputs).at("y").tensor;
    const auto av = valuesOf(a), bv = valuesOf(b), cv = valuesOf(cT);
    std::vector<double> expected(M * N);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k)
          s += av[c.transA ? k * M + i : i * K + k] * bv[c.transB ? j * K + k : k * N + j];
        double bias = 0;
        if (c.hasC) {
          const int64_t rows = c.cDims.size() == 2 ? c.cDims[0] : 1, cols = c.cDims.empty() ? 1 : c.cDims.back();
          bias = cv[(rows == 1 ? 0 : i) * cols + (cols == 1 ? 0 : j)];
        }
        expected[i * N + j] = 0.75 * s + 1.5 * bias;
      }
    EXPECT_EQ(y.dims(), (std::vector<int64_t>{M, N}));
    expectNear(valuesOf(y), expected, 1e-4);
  }
}

TEST(MatMulQuantCpu, GemmInnerDimensionMismatchNamesNode) {
  ModelBuilder mb(13);
  mb.node("Gemm", {"a", "b"}, {"y"}, "bad_gemm");
  mb.output("y");
  expectErrorMentioning(
      [&] {
        runModel(mb, {{"a", randomFloats({3, 4}, 1)}, {"b", randomFloats({5, 2}, 2)}});
      },
      {"bad_gemm", "inner dimensions"});
}

TEST(MatMulQuantCpu, MatMulIntegerWithPerRowAndPerColumnZeroPoints) {
  const int64_t M = 4, K = 300, N = 3;  // K large enough for the double-precision accumulation path
  const HostTensor a = randomTensor<uint8_t>({M, K}, 41, 0, 255), b = randomTensor<int8_t>({K, N}, 42, -128, 127);
  const HostTensor aZero = randomTensor<uint8_t>({M}, 43, 0, 255), bZero = randomTensor<int8_t>({N}, 44, -100, 100);
  ModelBuilder mb(13);
  mb.node("MatMulInteger", {"a", "b", "az", "bz"}, {"y"});
  mb.output("y");
  const HostTensor y = runModel(mb, {{"a", a}, {"b", b}, {"az", aZero}, {"bz", bZero}}).at("y").tensor;
  ASSERT_EQ(y.dtype(), DataType::kInt32);
  const auto av = valuesOf(a), bv = valuesOf(b), azv = valuesOf(aZero), bzv = valuesOf(bZero);
  std::vector<double> expected(M * N);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j)
      for (int64_t k = 0; k < K; ++k) expected[i * N + j] += (av[i * K + k] - azv[i]) * (bv[k * N + j] - bzv[j]);
  expectNear(valuesOf(y), expected, 0);
}

TEST(MatMulQuantCpu, QLinearMatMulMatchesFloatReference) {
  const int64_t M = 3, K = 8, N = 5;
  const HostTensor a = randomTensor<uint8_t>({2, M, K}, 51, 0, 255), b = randomTensor<uint8_t>({K, N}, 52, 0, 255);
  auto scalar = [](auto v) { return HostTensor::scalar(v); };
  ModelBuilder mb(13);
  mb.node("QLinearMatMul", {"a", "as", "az", "b", "bs", "bz", "ys", "yz"}, {"y"});
  mb.output("y");
  const float aScale = 0.02f, bScale = 0.03f, yScale = 0.5f;
  const uint8_t aZero = 120, bZero = 130, yZero = 100;
  const HostTensor y = runModel(mb, {{"a", a},
                                     {"as", scalar(aScale)},
                                     {"az", scalar(aZero)},
                                     {"b", b},
                                     {"bs", scalar(bScale)},
                                     {"bz", scalar(bZero)},
                                     {"ys", scalar(yScale)},
                                     {"yz", scalar(yZero)}})
                           .at("y")
                           .tensor;
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{2, M, N}));
  const auto av = valuesOf(a), bv = valuesOf(b), yv = valuesOf(y);
  for (int64_t bi = 0; bi < 2; ++bi)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double real = 0;
        for (int64_t k = 0; k < K; ++k)
          real += (av[(bi * M + i) * K + k] - aZero) * aScale * (bv[k * N + j] - bZero) * bScale;
        const double q = std::clamp(std::nearbyint(real / yScale) + yZero, 0.0, 255.0);
        EXPECT_NEAR(yv[(bi * M + i) * N + j], q, 1.0);  // float rounding may move a half-way value by one
      }
}

TEST(MatMulQuantCpu, QuantizeLinearPerTensorAndPerAxisSaturates) {
  const HostTensor x = randomFloats({2, 3, 4}, 61, -300.0f, 300.0f);
  const HostTensor scale = HostTensor::fromVector<float>({3}, {0.5f, 1.0f, 2.0f});
  const HostTensor zero = HostTensor::fromVector<int8_t>({3}, {-3, 0, 7});
  ModelBuilder mb(13);
  auto& node = mb.node("QuantizeLinear", {"x", "s", "z"}, {"y"});
  ModelBuilder::setInt(node, "axis", 1);
  mb.output("y");
  const HostTensor y = runModel(mb, {{"x", x}, {"s", scale}, {"z", zero}}).at("y").tensor;
  ASSERT_EQ(y.dtype(), DataType::kInt8);
  const auto xv = valuesOf(x), yv = valuesOf(y);
  const double scales[] = {0.5, 1.0, 2.0}, zeros[] = {-3, 0, 7};
  for (int64_t i = 0; i < 24; ++i) {
    const int64_t c = (i / 4) % 3;
    const double q = std::clamp(std::nearbyint(float(xv[i]) / float(scales[c])) + zeros[c], -128.0, 127.0);
    EXPECT_EQ(yv[i], q) << "at " << i;
  }

  ModelBuilder perTensor(13);
  perTensor.node("QuantizeLinear", {"x", "s"}, {"y"});  // no zero point: uint8, zero 0
  perTensor.output("y");
  const HostTensor u = runModel(perTensor, {{"x", x}, {"s", HostTensor::scalar(1.5f)}}).at("y").tensor;
  ASSERT_EQ(u.dtype(), DataType::kUInt8);
  const auto uv = valuesOf(u);
  for (int64_t i = 0; i < 24; ++i) EXPECT_EQ(uv[i], std::clamp(std::nearbyint(float(xv[i]) / 1.5f), 0.0f, 255.0f));
}

TEST(MatMulQuantCpu, DequantizeLinearPerAxis) {
  const HostTensor x = randomTensor<uint8_t>({3, 2, 5}, 71, 0, 255);
  const HostTensor scale = HostTensor::fromVector<float>({2}, {0.1f, 0.25f});
  const HostTensor zero = HostTensor::fromVector<uint8_t>({2}, {128, 3});
  ModelBuilder mb(13);
  mb.node("DequantizeLinear", {"x", "s", "z"}, {"y"});  // default axis 1
  mb.output("y");
  const HostTensor y = runModel(mb, {{"x", x}, {"s", scale}, {"z", zero}}).at("y").tensor;
  const auto xv = valuesOf(x);
  std::vector<double> expected;
  for (int64_t i = 0; i < 30; ++i) {
    const int64_t c = (i / 5) % 2;
    expected.push_back((xv[i] - (c == 0 ? 128 : 3)) * (c == 0 ? 0.1f : 0.25f));
  }
  expectNear(valuesOf(y), expected, 1e-6);
}

TEST(MatMulQuantCpu, DynamicQuantizeLinearCoversRangeAndZero) {
  const HostTensor x = randomFloats({4, 6}, 81, -2.0f, 5.0f);
  ModelBuilder mb(13);
  mb.node("DynamicQuantizeLinear", {"x"}, {"y", "scale", "zero"});
  mb.output("y").output("scale").output("zero");
  const ValueMap out = runModel(mb, {{"x", x}});
  const auto xv = valuesOf(x);
  const double lo = std::min(0.0, *std::min_element(xv.begin(), xv.end()));
  const double hi = std::max(0.0, *std::max_element(xv.begin(), xv.end()));
  const float scale = float((hi - lo) / 255.0);
  const double zero = std::clamp(std::nearbyint(-lo / scale), 0.0, 255.0);
  EXPECT_NEAR(valuesOf(out.at("scale").tensor)[0], scale, 1e-7);
  EXPECT_EQ(valuesOf(out.at("zero").tensor)[0], zero);
  const auto yv = valuesOf(out.at("y").tensor);
  for (size_t i = 0; i < xv.size(); ++i)
    EXPECT_EQ(yv[i], std::clamp(std::nearbyint(float(xv[i]) / scale) + zero, 0.0, 255.0)) << "at " << i;
}

TEST(MatMulQuantCpu, QuantizeScaleCountMustMatchAxis) {
  ModelBuilder mb(13);
  mb.node("QuantizeLinear", {"x", "s", "z"}, {"y"}, "bad_quant");
  mb.output("y");
  expectErrorMentioning(
      [&] {
        runModel(mb, {{"x", randomFloats({2, 3}, 1)},
                      {"s", HostTensor::fromVector<float>({4}, {1, 1, 1, 1})},
                      {"z", HostTensor::fromVector<uint8_t>({4}, {0, 0, 0, 0})}});
      },
      {"bad_quant", "scale"});
}

namespace {

// Brute-force Einsum over letter labels: sums the product of the operands over every assignment.
std::vector<double> naiveEinsum(const std::string& lhs, const std::string& out, const std::vector<HostTensor>& ops) {
  std::map<char, int64_t> size;
  std::vector<std::string> terms(1);
  for (char c : lhs) {
    if (c == ',')
      terms.emplace_back();
    else
      terms.back().push_back(c);
  }
  for (size_t i = 0; i < ops.size(); ++i)
    for (size_t d = 0; d < terms[i].size(); ++d) size[terms[i][d]] = ops[i].dim(d);
  std::vector<char> labels;
  int64_t total = 1, outCount = 1;
  for (auto [c, n] : size) labels.push_back(c), total *= n;
  for (char c : out) outCount *= size[c];
  std::vector<std::vector<double>> values;
  for (const auto& op : ops) values.push_back(valuesOf(op));
  std::vector<double> result(size_t(outCount), 0.0);
  std::map<char, int64_t> at;
  for (int64_t index = 0; index < total; ++index) {
    int64_t rest = index;
    for (size_t l = labels.size(); l-- > 0;) at[labels[l]] = rest % size[labels[l]], rest /= size[labels[l]];
    double product = 1;
    for (size_t i = 0; i < ops.size(); ++i) {
      int64_t offset = 0;
      for (char c : terms[i]) offset = offset * size[c] + at[c];
      product *= values[i][offset];
    }
    int64_t o = 0;
    for (char c : out) o = o * size[c] + at[c];
    result[o] += product;
  }
  return result;
}

HostTensor runEinsum(const std::string& equation, const std::vector<HostTensor>& ops) {
  ModelBuilder mb(13);
  std::vector<std::string> names;
  std::vector<std::pair<std::string, HostTensor>> inputs;
  for (size_t i = 0; i < ops.size(); ++i) {
    names.push_back("x" + std::to_string(i));
    inputs.push_back({names.back(), ops[i]});
  }
  ModelBuilder::setString(mb.node("Einsum", names, {"y"}, "einsum"), "equation", equation);
  mb.output("y");
  return runModel(mb, inputs).at("y").tensor;
}

}  // namespace

TEST(MatMulQuantCpu, EinsumMatchesBruteForce) {
  struct Case {
    std::string equation, naiveLhs, naiveOut;
    std::vector<std::vector<int64_t>> dims;
  };
  const Case cases[] = {
      {"ij,jk->ik", "ij,jk", "ik", {{3, 4}, {4, 5}}},
      {"bij,bjk->bik", "bij,bjk", "bik", {{2, 3, 4}, {2, 4, 5}}},
      {"bij,bkj->bik", "bij,bkj", "bik", {{2, 3, 4}, {2, 5, 4}}},
      {"ii->", "ii", "", {{4, 4}}},
      {"ii->i", "ii", "i", {{4, 4}}},
      {"bii->bi", "bii", "bi", {{2, 3, 3}}},
      {"ij->ji", "ij", "ji", {{3, 5}}},
      {"ij->", "ij", "", {{3, 5}}},
      {"i,j->ij", "i,j", "ij", {{3}, {4}}},
      {"ij,jk", "ij,jk", "ik", {{3, 4}, {4, 2}}},  // implicit output
      {"ij,jk,kl->il", "ij,jk,kl", "il", {{2, 3}, {3, 4}, {4, 5}}},
      {"...ij,...jk->...ik", "abij,abjk", "abik", {{2, 3, 4, 5}, {2, 3, 5, 2}}},
      {"b i j , b j k -> i k", "bij,bjk", "ik", {{2, 3, 4}, {2, 4, 5}}},  // spaces; batch summed away
      {"ijk,ikl->jl", "ijk,ikl", "jl", {{3, 2, 4}, {3, 4, 2}}},
  };
  uint32_t seed = 90;
  for (const Case& c : cases) {
    std::vector<HostTensor> ops;
    for (const auto& d : c.dims) ops.push_back(randomFloats(d, seed++));
    const HostTensor y = runEinsum(c.equation, ops);
    expectNear(valuesOf(y), naiveEinsum(c.naiveLhs, c.naiveOut, ops), 1e-4);
    if (HasFailure()) FAIL() << "equation " << c.equation;
  }
}

TEST(MatMulQuantCpu, EinsumEllipsisBroadcastsLikeMatMul) {
  const HostTensor a = randomFloats({2, 1, 3, 4}, 101), b = randomFloats({3, 4, 5}, 102);
  const HostTensor y = runEinsum("...ij,...jk->...ik", {a, b});
  std::vector<int64_t> dims;
  const auto expected = naiveMatMul(valuesOf(a), a.dims(), valuesOf(b), b.dims(), dims);
  EXPECT_EQ(y.dims(), dims);
  expectNear(valuesOf(y), expected, 1e-4);
}

TEST(MatMulQuantCpu, EinsumBadEquationNamesNode) {
  expectErrorMentioning(
      [] {
        runEinsum("ij,jk->iz", {randomFloats({2, 3}, 1), randomFloats({3, 4}, 2)});
      },
      {"einsum", "'z'"});
  expectErrorMentioning(
      [] {
        runEinsum("ij,jk->ik", {randomFloats({2, 3}, 1), randomFloats({4, 4}, 2)});
      },
      {"einsum", "'j'"});
}

TEST(MatMulQuantCpu, DetMatchesCofactorExpansion) {
  const HostTensor x = randomFloats({4, 3, 3}, 111, -2.0f, 2.0f);
  ModelBuilder mb(13);
  mb.node("Det", {"x"}, {"y"});
  mb.output("y");
  const HostTensor y = runModel(mb, {{"x", x}}).at("y").tensor;
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{4}));
  const auto v = valuesOf(x);
  std::vector<double> expected;
  for (int b = 0; b < 4; ++b) {
    auto m = [&](int r, int c) { return v[b * 9 + r * 3 + c]; };
    expected.push_back(m(0, 0) * (m(1, 1) * m(2, 2) - m(1, 2) * m(2, 1)) -
                       m(0, 1) * (m(1, 0) * m(2, 2) - m(1, 2) * m(2, 0)) +
                       m(0, 2) * (m(1, 0) * m(2, 1) - m(1, 1) * m(2, 0)));
  }
  expectNear(valuesOf(y), expected, 1e-5);
}
