// ReductionSoftmax family on the CPU backend: every op against a naive loop written here, on
// seeded random inputs, plus error paths.
#include "backends/single_node_runner.h"

#include <cmath>
#include <functional>
#include <limits>
#include <numeric>

using namespace kiln;
using namespace kiln::test;

namespace {

// Element offset of `index` in a row-major tensor of `dims`.
int64_t offsetOf(const std::vector<int64_t>& dims, const std::vector<int64_t>& index) {
  int64_t o = 0;
  for (size_t d = 0; d < dims.size(); ++d) o = o * dims[d] + index[d];
  return o;
}

// Calls fn(index) for every index of `dims` in row-major order.
void forEachIndex(const std::vector<int64_t>& dims, const std::function<void(const std::vector<int64_t>&)>& fn) {
  const int64_t total = std::accumulate(dims.begin(), dims.end(), int64_t(1), std::multiplies<>());
  std::vector<int64_t> index(dims.size(), 0);
  for (int64_t i = 0; i < total; ++i) {
    int64_t rest = i;
    for (size_t d = dims.size(); d-- > 0;) index[d] = rest % dims[d], rest /= dims[d];
    fn(index);
  }
}

struct ReduceSpec {
  const char* op;
  double init;
  std::function<double(double, double)> step;     // acc, x -> acc
  std::function<double(double, int64_t)> finish;  // acc, count -> result
};

const ReduceSpec kReductions[] = {
    {"ReduceSum", 0, [](double a, double x) { return a + x; }, [](double a, int64_t) { return a; }},
    {"ReduceMean", 0, [](double a, double x) { return a + x; }, [](double a, int64_t n) { return a / n; }},
    {"ReduceMax", -1e300, [](double a, double x) { return std::max(a, x); }, [](double a, int64_t) { return a; }},
    {"ReduceMin", 1e300, [](double a, double x) { return std::min(a, x); }, [](double a, int64_t) { return a; }},
    {"ReduceProd", 1, [](double a, double x) { return a * x; }, [](double a, int64_t) { return a; }},
    {"ReduceL1", 0, [](double a, double x) { return a + std::abs(x); }, [](double a, int64_t) { return a; }},
    {"ReduceL2", 0, [](double a, double x) { return a + x * x; }, [](double a, int64_t) { return std::sqrt(a); }},
    {"ReduceLogSum", 0, [](double a, double x) { return a + x; }, [](double a, int64_t) { return std::log(a); }},
    {"ReduceLogSumExp", 0, [](double a, double x) { return a + std::exp(x); },
     [](double a, int64_t) { return std::log(a); }},
    {"ReduceSumSquare", 0, [](double a, double x) { return a + x * x; }, [](double a, int64_t) { return a; }},
};

std::vector<double> naiveReduce(const ReduceSpec& spec, const HostTensor& x, const std::vector<bool>& reduced) {
  std::vector<int64_t> outDims;
  int64_t count = 1;
  for (size_t d = 0; d < x.rank(); ++d) {
    if (reduced[d])
      count *= x.dim(d);
    else
      outDims.push_back(x.dim(d));
  }
  const int64_t outCount = std::accumulate(outDims.begin(), outDims.end(), int64_t(1), std::multiplies<>());
  std::vector<double> acc(size_t(outCount), spec.init);
  const auto v = valuesOf(x);
  forEachIndex(x.dims(), [&](const std::vector<int64_t>& index) {
    std::vector<int64_t> outIndex;
    for (size_t d = 0; d < index.size(); ++d)
      if (!reduced[d]) outIndex.push_back(index[d]);
    double& a = acc[offsetOf(outDims, outIndex)];
    a = spec.step(a, v[offsetOf(x.dims(), index)]);
  });
  for (double& a : acc) a = spec.finish(a, count);
  return acc;
}

// Runs a Reduce* node with axes as attribute (opset 13; ReduceSum 11) or as input (opset 18).
HostTensor runReduce(const char* op, const HostTensor& x, const std::vector<int64_t>& axes, bool keepDims,
                     bool axesAsInput, const std::string& name = "reduce") {
  ModelBuilder mb(axesAsInput ? 18 : (std::string(op) == "ReduceSum" ? 11 : 13));
  std::vector<std::pair<std::string, HostTensor>> inputs = {{"x", x}};
  std::vector<std::string> nodeInputs = {"x"};
  if (axesAsInput) {
    mb.initializer("axes", HostTensor::fromVector<int64_t>({int64_t(axes.size())}, axes));
    nodeInputs.push_back("axes");
  }
  auto& node = mb.node(op, nodeInputs, {"y"}, name);
  if (!axesAsInput && !axes.empty()) ModelBuilder::setInts(node, "axes", axes);
  ModelBuilder::setInt(node, "keepdims", keepDims);
  mb.output("y");
  return runModel(mb, inputs).at("y").tensor;
}

}  // namespace

TEST(ReductionSoftmaxCpu, EveryReduceOpOverSeveralAxisSets) {
  const HostTensor x = randomFloats({3, 4, 5, 6}, 1, 0.2f, 1.5f);  // positive, so logs are defined
  const std::vector<std::vector<int64_t>> axisSets = {{1}, {0, 2}, {-1}, {1, 3}, {}, {0, 1, 2, 3}, {0}};
  for (const ReduceSpec& spec : kReductions)
    for (const auto& axes : axisSets)
      for (bool axesAsInput : {false, true}) {
        std::vector<bool> reduced(4, axes.empty());
        for (int64_t a : axes) reduced[size_t(a < 0 ? a + 4 : a)] = true;
        const bool keepDims = axes.size() != 2;
        const HostTensor y = runReduce(spec.op, x, axes, keepDims, axesAsInput);
        std::vector<int64_t> dims;
        for (size_t d = 0; d < 4; ++d)
          if (!reduced[d])
            dims.push_back(x.dim(d));
          else if (keepDims)
            dims.push_back(1);
        EXPECT_EQ(y.dims(), dims) << spec.op;
        expectNear(valuesOf(y), naiveReduce(spec, x, reduced), 1e-4);
        if (HasFailure()) FAIL() << spec.op << " axes size " << axes.size() << " input " << axesAsInput;
      }
}

// Contiguous runs of 16 and more take the kernel's lanes for floats; GCC 12.2 at -O3 dropped
// elements there for int8 and int16, so integer folds take the plain loop.
TEST(ReductionSoftmaxCpu, NarrowIntegerRunsFoldEveryElement) {
  HostTensor bytes(DataType::kInt8, {3, 40});
  for (int64_t i = 0; i < bytes.elementCount(); ++i) bytes.data<int8_t>()[i] = int8_t(i % 5 - 2 == 0 ? 1 : i % 5 - 2);
  HostTensor shorts(DataType::kInt16, {2, 20});
  for (int64_t i = 0; i < shorts.elementCount(); ++i)
    shorts.data<int16_t>()[i] = int16_t((i % 3 == 0 ? -1 : 1) * (i % 7 == 0 ? 2 : 1));
  for (int spec : {0, 5})  // ReduceSum, ReduceL1
    expectNear(valuesOf(runReduce(kReductions[spec].op, bytes, {1}, false, true)),
               naiveReduce(kReductions[spec], bytes, {false, true}), 0);
  for (int spec : {4, 5})  // ReduceProd, ReduceL1
    expectNear(valuesOf(runReduce(kReductions[spec].op, shorts, {1}, false, true)),
               naiveReduce(kReductions[spec], shorts, {false, true}), 0);
}

TEST(ReductionSoftmaxCpu, ReduceIntegersAndLogSumExpOfLargeValues) {
  const HostTensor ints = randomTensor<int32_t>({4, 7}, 2, -50, 50);
  expectNear(valuesOf(runReduce("ReduceSum", ints, {1}, false, true)), naiveReduce(kReductions[0], ints, {false, true}),
             0);
  expectNear(valuesOf(runReduce("ReduceMax", ints, {0}, true, false)), naiveReduce(kReductions[2], ints, {true, false}),
             0);
  // exp(1000) overflows: only the max-shifted evaluation gets 1000 + log(sum(exp(x - 1000))).
  const HostTensor big = HostTensor::fromVector<float>({2, 3}, {1000, 999, 998, -5, -6, -7});
  const auto y = valuesOf(runReduce("ReduceLogSumExp", big, {1}, false, false));
  EXPECT_NEAR(y[0], 1000 + std::log(1 + std::exp(-1.0) + std::exp(-2.0)), 1e-3);
  EXPECT_NEAR(y[1], -5 + std::log(1 + std::exp(-1.0) + std::exp(-2.0)), 1e-4);
}

// Integer reductions wrap around as NumPy's do; 40 elements take the kernel's per-lane path, whose
// partial sums overflow too. (Signed overflow is undefined in C++: UBSan's asan preset checks it.)
TEST(ReductionSoftmaxCpu, IntegerReductionsAndCumSumWrapAroundOnOverflow) {
  const int n = 40;
  std::vector<int32_t> values(n);
  for (int i = 0; i < n; ++i) values[size_t(i)] = (i % 3 ? 1 : -1) * (std::numeric_limits<int32_t>::max() - i);
  values[7] = std::numeric_limits<int32_t>::lowest();
  uint32_t sum = 0, product = 1, squares = 0, absolutes = 0;
  for (int32_t v : values) {
    sum += uint32_t(v);
    product *= uint32_t(v);
    squares += uint32_t(v) * uint32_t(v);
    absolutes += v < 0 ? 0u - uint32_t(v) : uint32_t(v);
  }
  const HostTensor x = HostTensor::fromVector<int32_t>({1, n}, values);
  auto reduced = [&](const char* op) { return runReduce(op, x, {1}, false, false).data<int32_t>()[0]; };
  EXPECT_EQ(reduced("ReduceSum"), int32_t(sum));
  EXPECT_EQ(reduced("ReduceProd"), int32_t(product));
  EXPECT_EQ(reduced("ReduceSumSquare"), int32_t(squares));
  EXPECT_EQ(reduced("ReduceL1"), int32_t(absolutes));

  ModelBuilder mb(14);
  mb.initializer("axis", HostTensor::fromVector<int64_t>({}, {1}));
  mb.node("CumSum", {"x", "axis"}, {"y"});
  mb.output("y");
  const HostTensor y = runModel(mb, {{"x", x}}).at("y").tensor;
  uint32_t running = 0;
  for (int i = 0; i < n; ++i) {
    running += uint32_t(values[size_t(i)]);
    ASSERT_EQ(y.data<int32_t>()[i], int32_t(running)) << i;
  }
}

TEST(ReductionSoftmaxCpu, ReduceEmptyAxesInputIsNoopWhenAsked) {
  const HostTensor x = randomFloats({2, 3}, 3);
  ModelBuilder mb(18);
  mb.initializer("axes", HostTensor(DataType::kInt64, {0}));
  ModelBuilder::setInt(mb.node("ReduceMean", {"x", "axes"}, {"y"}), "noop_with_empty_axes", 1);
  mb.output("y");
  const HostTensor y = runModel(mb, {{"x", x}}).at("y").tensor;
  EXPECT_EQ(y.dims(), x.dims());
  expectNear(valuesOf(y), valuesOf(x), 0);
}

TEST(ReductionSoftmaxCpu, ReduceRepeatedAxisNamesNode) {
  expectErrorMentioning(
      [] {
        runReduce("ReduceMax", randomFloats({2, 3}, 4), {1, -1}, true, false, "dup_axes");
      },
      {"dup_axes", "twice"});
  expectErrorMentioning(
      [] {
        runReduce("ReduceMean", randomFloats({2, 3}, 4), {2}, true, true, "far_axis");
      },
      {"far_axis", "out of range"});
}

TEST(ReductionSoftmaxCpu, ArgMaxArgMinWithTiesAndSelectLastIndex) {
  // Values in {-2..2} so ties are common.
  const HostTensor x = randomTensor<float>({3, 6, 4}, 5, -2, 2);
  const auto v = valuesOf(x);
  for (const char* op : {"ArgMax", "ArgMin"})
    for (int64_t axis : {0, 1, -1})
      for (int64_t last : {0, 1}) {
        ModelBuilder mb(13);
        auto& node = mb.node(op, {"x"}, {"y"});
        ModelBuilder::setInt(node, "axis", axis);
        ModelBuilder::setInt(node, "keepdims", 0);
        ModelBuilder::setInt(node, "select_last_index", last);
        mb.output("y");
        const HostTensor y = runModel(mb, {{"x", x}}).at("y").tensor;
        const size_t a = size_t(axis < 0 ? axis + 3 : axis);
        std::vector<int64_t> outDims = x.dims();
        outDims.erase(outDims.begin() + a);
        std::vector<double> expected;
        forEachIndex(outDims, [&](const std::vector<int64_t>& outIndex) {
          std::vector<int64_t> index = outIndex;
          index.insert(index.begin() + a, 0);
          int64_t best = 0;
          for (int64_t i = 1; i < x.dim(a); ++i) {
            index[a] = i;
            const double value = v[offsetOf(x.dims(), index)];
            index[a] = best;
            const double current = v[offsetOf(x.dims(), index)];
            const bool better = std::string(op) == "ArgMax" ? value > current : value < current;
            if (better || (last && value == current)) best = i;
          }
          expected.push_back(double(best));
        });
        ASSERT_EQ(y.dtype(), DataType::kInt64);
        expectNear(valuesOf(y), expected, 0);
      }
}

namespace {

HostTensor runNormalize(const char* op, int64_t opset, const HostTensor& x, std::optional<int64_t> axis) {
  ModelBuilder mb(opset);
  auto& node = mb.node(op, {"x"}, {"y"}, "normalize");
  if (axis) ModelBuilder::setInt(node, "axis", *axis);
  mb.output("y");
  return runModel(mb, {{"x", x}}).at("y").tensor;
}

// Softmax / LogSoftmax / Hardmax over groups: element i belongs to group groupOf(i).
std::vector<double> naiveNormalize(const std::string& op, const std::vector<double>& v,
                                   const std::function<int64_t(int64_t)>& groupOf, int64_t groups) {
  std::vector<double> max(size_t(groups), -1e300), sum(size_t(groups), 0.0);
  std::vector<int64_t> first(size_t(groups), -1);
  for (int64_t i = 0; i < int64_t(v.size()); ++i)
    if (v[i] > max[groupOf(i)]) max[groupOf(i)] = v[i], first[groupOf(i)] = i;
  for (int64_t i = 0; i < int64_t(v.size()); ++i) sum[groupOf(i)] += std::exp(v[i] - max[groupOf(i)]);
  std::vector<double> out(v.size());
  for (int64_t i = 0; i < int64_t(v.size()); ++i) {
    const int64_t g = groupOf(i);
    if (op == "Softmax")
      out[i] = std::exp(v[i] - max[g]) / sum[g];
    else if (op == "LogSoftmax")
      out[i] = v[i] - max[g] - std::log(sum[g]);
    else
      out[i] = first[g] == i ? 1.0 : 0.0;
  }
  return out;
}

}  // namespace

TEST(ReductionSoftmaxCpu, SoftmaxFamilySingleAxisFromOpset13) {
  const HostTensor x = randomFloats({3, 4, 21}, 6, -5.0f, 5.0f);  // 21: vector body plus a tail
  const auto v = valuesOf(x);
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"}) {
    // default axis -1
    expectNear(valuesOf(runNormalize(op, 13, x, std::nullopt)),
               naiveNormalize(
                   op, v, [](int64_t i) { return i / 21; }, 12),
               1e-5);
    // axis 1: groups are (outer, inner) pairs
    expectNear(valuesOf(runNormalize(op, 13, x, 1)),
               naiveNormalize(
                   op, v, [](int64_t i) { return (i / 84) * 21 + i % 21; }, 63),
               1e-5);
    if (HasFailure()) FAIL() << op;
  }
}

TEST(ReductionSoftmaxCpu, SoftmaxFamilyFlattensBeforeOpset13) {
  const HostTensor x = randomFloats({3, 4, 5}, 7, -5.0f, 5.0f);
  const auto v = valuesOf(x);
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"}) {
    // default axis 1: each of the 3 rows of 20 is one distribution
    expectNear(valuesOf(runNormalize(op, 11, x, std::nullopt)),
               naiveNormalize(
                   op, v, [](int64_t i) { return i / 20; }, 3),
               1e-5);
    expectNear(valuesOf(runNormalize(op, 11, x, 0)),
               naiveNormalize(
                   op, v, [](int64_t) { return 0; }, 1),
               1e-5);
    if (HasFailure()) FAIL() << op;
  }
}

TEST(ReductionSoftmaxCpu, SoftmaxIsStableForLargeInputs) {
  const HostTensor x = HostTensor::fromVector<float>({1, 9}, {1e4f, 1e4f - 1, 1e4f - 2, 1e4f, -1e4f, 0, 1, 2, 3});
  const auto v = valuesOf(x);
  for (const char* op : {"Softmax", "LogSoftmax"})
    expectNear(valuesOf(runNormalize(op, 13, x, std::nullopt)),
               naiveNormalize(
                   op, v, [](int64_t) { return 0; }, 1),
               1e-5);
}

TEST(ReductionSoftmaxCpu, SoftmaxAxisOutOfRangeNamesNode) {
  expectErrorMentioning([] { runNormalize("Softmax", 13, randomFloats({2, 3}, 8), 2); }, {"normalize", "axis 2"});
}

TEST(ReductionSoftmaxCpu, TopKLargestSmallestWithTiesByLowerIndex) {
  const HostTensor x = randomTensor<float>({2, 9, 3}, 9, -3, 3);  // integers: plenty of ties
  const auto v = valuesOf(x);
  for (int64_t largest : {1, 0}) {
    ModelBuilder mb(11);
    mb.initializer("k", HostTensor::fromVector<int64_t>({1}, {4}));
    auto& node = mb.node("TopK", {"x", "k"}, {"values", "indices"});
    ModelBuilder::setInt(node, "axis", 1);
    ModelBuilder::setInt(node, "largest", largest);
    mb.output("values").output("indices");
    const ValueMap out = runModel(mb, {{"x", x}});
    const auto values = valuesOf(out.at("values").tensor), indices = valuesOf(out.at("indices").tensor);
    ASSERT_EQ(out.at("values").tensor.dims(), (std::vector<int64_t>{2, 4, 3}));
    for (int64_t o = 0; o < 2; ++o)
      for (int64_t j = 0; j < 3; ++j) {
        std::vector<int64_t> order(9);
        std::iota(order.begin(), order.end(), 0);
        auto at = [&](int64_t i) { return v[(o * 9 + i) * 3 + j]; };
        std::stable_sort(order.begin(), order.end(),
                         [&](int64_t a, int64_t b) { return largest ? at(a) > at(b) : at(a) < at(b); });
        for (int64_t r = 0; r < 4; ++r) {
          EXPECT_EQ(indices[(o * 4 + r) * 3 + j], order[r]);
          EXPECT_EQ(values[(o * 4 + r) * 3 + j], at(order[r]));
        }
      }
  }
}

TEST(ReductionSoftmaxCpu, CumSumExclusiveAndReverse) {
  const HostTensor x = randomTensor<double>({3, 5, 2}, 10);
  const auto v = valuesOf(x);
  for (int64_t exclusive : {0, 1})
    for (int64_t reverse : {0, 1}) {
      ModelBuilder mb(14);
      mb.initializer("axis", HostTensor::scalar<int32_t>(1));
      auto& node = mb.node("CumSum", {"x", "axis"}, {"y"});
      ModelBuilder::setInt(node, "exclusive", exclusive);
      ModelBuilder::setInt(node, "reverse", reverse);
      mb.output("y");
      const auto y = valuesOf(runModel(mb, {{"x", x}}).at("y").tensor);
      for (int64_t o = 0; o < 3; ++o)
        for (int64_t j = 0; j < 2; ++j)
          for (int64_t i = 0; i < 5; ++i) {
            double expected = 0;
            for (int64_t t = 0; t < 5; ++t) {
              const bool before = reverse ? t > i : t < i;
              if (before || (!exclusive && t == i)) expected += v[(o * 5 + t) * 2 + j];
            }
            EXPECT_NEAR(y[(o * 5 + i) * 2 + j], expected, 1e-12);
          }
    }
}

namespace {

// NLL over [N, C, D] log-probabilities (D = 1 when input is 2-D) with optional weights/ignore.
std::vector<double> naiveNll(const std::vector<double>& logProb, const std::vector<int64_t>& target,
                             const std::vector<double>& weight, int64_t N, int64_t C, int64_t D,
                             const std::string& reduction, std::optional<int64_t> ignore) {
  std::vector<double> loss;
  double sum = 0, weightSum = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t d = 0; d < D; ++d) {
      const int64_t t = target[n * D + d];
      const double w = (ignore && t == *ignore) ? 0.0 : weight.empty() ? 1.0 : weight[t];
      const double l = w == 0.0 ? 0.0 : -logProb[(n * C + t) * D + d] * w;
      loss.push_back(l);
      sum += l;
      weightSum += w;
    }
  if (reduction == "sum") return {sum};
  if (reduction == "mean") return {sum / weightSum};
  return loss;
}

}  // namespace

TEST(ReductionSoftmaxCpu, NegativeLogLikelihoodAndSoftmaxCrossEntropy) {
  const int64_t N = 3, C = 5, D = 4;
  const HostTensor scores = randomFloats({N, C, D}, 11, -3.0f, 3.0f);
  HostTensor target = randomTensor<int64_t>({N, D}, 12, 0, C - 1);
  target.data<int64_t>()[2] = -1;  // the ignored class
  const HostTensor weight = randomFloats({C}, 13, 0.5f, 2.0f);
  const auto s = valuesOf(scores), w = valuesOf(weight);
  std::vector<int64_t> t = target.toInt64Vector();
  // log_softmax over the class axis, the reference for SCE's log_prob and input to NLL
  std::vector<double> logProb(s.size());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t d = 0; d < D; ++d) {
      double max = -1e300, sum = 0;
      for (int64_t c = 0; c < C; ++c) max = std::max(max, s[(n * C + c) * D + d]);
      for (int64_t c = 0; c < C; ++c) sum += std::exp(s[(n * C + c) * D + d] - max);
      for (int64_t c = 0; c < C; ++c) logProb[(n * C + c) * D + d] = s[(n * C + c) * D + d] - max - std::log(sum);
    }
  for (const std::string reduction : {"none", "sum", "mean"})
    for (bool withWeight : {false, true}) {
      const auto expected = naiveNll(logProb, t, withWeight ? w : std::vector<double>{}, N, C, D, reduction, -1);
      std::vector<std::string> inputs = {"x", "t"};
      if (withWeight) inputs.push_back("w");
      std::vector<std::pair<std::string, HostTensor>> feeds = {{"x", scores}, {"t", target}};
      if (withWeight) feeds.push_back({"w", weight});

      ModelBuilder sce(13);
      auto& sceNode = sce.node("SoftmaxCrossEntropyLoss", inputs, {"loss", "log_prob"});
      ModelBuilder::setString(sceNode, "reduction", reduction);
      ModelBuilder::setInt(sceNode, "ignore_index", -1);
      sce.output("loss").output("log_prob");
      const ValueMap out = runModel(sce, feeds);
      expectNear(valuesOf(out.at("loss").tensor), expected, 1e-5);
      expectNear(valuesOf(out.at("log_prob").tensor), logProb, 1e-5);

      ModelBuilder nll(13);
      auto& nllNode = nll.node("NegativeLogLikelihoodLoss", inputs, {"loss"});
      ModelBuilder::setString(nllNode, "reduction", reduction);
      ModelBuilder::setInt(nllNode, "ignore_index", -1);
      nll.output("loss");
      feeds[0].second = out.at("log_prob").tensor;
      expectNear(valuesOf(runModel(nll, feeds).at("loss").tensor), expected, 1e-5);
      if (HasFailure()) FAIL() << reduction << (withWeight ? " with weight" : "");
    }
}

TEST(ReductionSoftmaxCpu, LossTargetOutOfRangeAndBadReductionNameNode) {
  ModelBuilder mb(13);
  mb.node("NegativeLogLikelihoodLoss", {"x", "t"}, {"loss"}, "nll_bad_target");
  mb.output("loss");
  expectErrorMentioning(
      [&] {
        runModel(mb, {{"x", randomFloats({2, 3}, 14)}, {"t", HostTensor::fromVector<int64_t>({2}, {1, 3})}});
      },
      {"nll_bad_target", "target value 3"});

  ModelBuilder bad(13);
  ModelBuilder::setString(bad.node("SoftmaxCrossEntropyLoss", {"x", "t"}, {"loss"}, "sce_bad"), "reduction", "avg");
  bad.output("loss");
  expectErrorMentioning(
      [&] {
        runModel(bad, {{"x", randomFloats({2, 3}, 15)}, {"t", HostTensor::fromVector<int64_t>({2}, {1, 2})}});
      },
      {"sce_bad", "reduction 'avg'"});
}
