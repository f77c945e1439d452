// Normalization ops on random data, checked against naive formulas written here, plus error paths.
#include <kiln/error.h>
#include <kiln/onnx_importer.h>
#include <kiln/reference_executor.h>

#include "common/test_models.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

using namespace kiln;
using kiln::test::ModelBuilder;

namespace {

using namespace kiln::test::onnx_types;

void expectClose(const HostTensor& actual, const std::vector<double>& expected, double tol, const std::string& what) {
  ASSERT_EQ(actual.elementCount(), int64_t(expected.size())) << what;
  std::vector<double> a = actual.toDoubleVector();
  for (size_t i = 0; i < expected.size(); ++i)
    ASSERT_NEAR(a[i], expected[i], tol * (1 + std::fabs(expected[i]))) << what << " at " << i;
}

// Mean and biased variance of x[i] for the indices `pick` selects.
void stats(const float* x, const std::vector<int64_t>& pick, double& mean, double& var) {
  mean = 0, var = 0;
  for (int64_t i : pick) mean += x[i];
  mean /= double(pick.size());
  for (int64_t i : pick) var += (x[i] - mean) * (x[i] - mean);
  var /= double(pick.size());
}

void expectErrorNaming(const std::function<void()>& fn, const std::vector<std::string>& words) {
  try {
    fn();
    FAIL() << "expected kiln::Error";
  } catch (const Error& e) {
    for (const auto& w : words) EXPECT_NE(std::string(e.what()).find(w), std::string::npos) << e.what();
  }
}

// x[N=2, C=3, 4, 5] with per-channel parameters.
struct BatchNormData {
  HostTensor x = test::randomFloats({2, 3, 4, 5}, 1, -2, 3);
  HostTensor scale = test::randomFloats({3}, 2), bias = test::randomFloats({3}, 3);
  HostTensor mean = test::randomFloats({3}, 4), var = test::randomFloats({3}, 5, 0.5f, 2.0f);
  std::vector<int64_t> channelIndices(int64_t c) const {
    std::vector<int64_t> out;
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t i = 0; i < 20; ++i) out.push_back((n * 3 + c) * 20 + i);
    return out;
  }
  ModelBuilder model(int64_t opset, bool training) const {
    ModelBuilder mb(opset);
    mb.input("x", kFloat, x.dims()).initializer("s", scale).initializer("b", bias);
    mb.initializer("m", mean).initializer("v", var).output("y");
    std::vector<std::string> outs = {"y"};
    if (training) mb.output("rm").output("rv"), outs = {"y", "rm", "rv"};
    auto& node = mb.node("BatchNormalization", {"x", "s", "b", "m", "v"}, outs, "bn");
    ModelBuilder::setFloat(node, "epsilon", 1e-3f);
    if (training) ModelBuilder::setInt(node, "training_mode", 1);
    return mb;
  }
};

TEST(BatchNormalization, InferenceUsesGivenStatistics) {
  BatchNormData d;
  ModelBuilder mb = d.model(15, false);
  auto out = ReferenceExecutor(OnnxImporter().importBytes(mb.bytes())).run({{"x", d.x}});
  std::vector<double> expected(120);
  for (int64_t i = 0; i < 120; ++i) {
    int64_t c = i / 20 % 3;
    expected[size_t(i)] = (d.x.data<float>()[i] - d.mean.data<float>()[c]) /
                              std::sqrt(d.var.data<float>()[c] + 1e-3) * d.scale.data<float>()[c] +
                          d.bias.data<float>()[c];
  }
  expectClose(out.at("y").tensor, expected, 1e-5, "bn inference");
}

TEST(BatchNormalization, TrainingModeUsesBatchStatisticsAndUpdatesRunningOnes) {
  BatchNormData d;
  ModelBuilder mb = d.model(15, true);
  auto out = ReferenceExecutor(OnnxImporter().importBytes(mb.bytes())).run({{"x", d.x}});
  std::vector<double> expected(120), runningMean, runningVar;
  for (int64_t c = 0; c < 3; ++c) {
    double mean, var;
    stats(d.x.data<float>(), d.channelIndices(c), mean, var);
    for (int64_t i : d.channelIndices(c))
      expected[size_t(i)] = (d.x.data<float>()[i] - mean) / std::sqrt(var + 1e-3) * d.scale.data<float>()[c] +
                            d.bias.data<float>()[c];
    runningMean.push_back(d.mean.data<float>()[c] * 0.9 + mean * 0.1);  // default momentum 0.9
    runningVar.push_back(d.var.data<float>()[c] * 0.9 + var * 0.1);
  }
  expectClose(out.at("y").tensor, expected, 1e-5, "bn training y");
  expectClose(out.at("rm").tensor, runningMean, 1e-5, "running mean");
  expectClose(out.at("rv").tensor, runningVar, 1e-5, "running var");
}

TEST(InstanceNormalization, NormalisesEachPlane) {
  HostTensor x = test::randomFloats({2, 3, 7}, 6, -1, 4), s = test::randomFloats({3}, 7), b = test::randomFloats({3}, 8);
  ModelBuilder mb;
  mb.input("x", kFloat, x.dims()).initializer("s", s).initializer("b", b).output("y");
  mb.node("InstanceNormalization", {"x", "s", "b"}, {"y"});
  HostTensor y = ReferenceExecutor(OnnxImporter().importBytes(mb.bytes())).run({{"x", x}}).at("y").tensor;
  std::vector<double> expected(42);
  for (int64_t p = 0; p < 6; ++p) {
    std::vector<int64_t> pick;
    for (int64_t i = 0; i < 7; ++i) pick.push_back(p * 7 + i);
    double mean, var;
    stats(x.data<float>(), pick, mean, var);
    for (int64_t i : pick)
      expected[size_t(i)] = (x.data<float>()[i] - mean) / std::sqrt(var + 1e-5) * s.data<float>()[p % 3] + b.data<float>()[p % 3];
  }
  expectClose(y, expected, 1e-5, "instance norm");
}

TEST(LayerNormalization, NormalisesTrailingAxesAndReturnsStatistics) {
  HostTensor x = test::randomFloats({2, 3, 4}, 9, -3, 2), s = test::randomFloats({3, 4}, 10), b = test::randomFloats({3, 4}, 11);
  ModelBuilder mb;
  mb.input("x", kFloat, x.dims()).initializer("s", s).initializer("b", b).output("y").output("mean").output("inv");
  ModelBuilder::setInt(mb.node("LayerNormalization", {"x", "s", "b"}, {"y", "mean", "inv"}), "axis", 1);
  auto out = ReferenceExecutor(OnnxImporter().importBytes(mb.bytes())).run({{"x", x}});
  std::vector<double> expected(24), means, invs;
  for (int64_t r = 0; r < 2; ++r) {
    std::vector<int64_t> pick;
    for (int64_t i = 0; i < 12; ++i) pick.push_back(r * 12 + i);
    double mean, var;
    stats(x.data<float>(), pick, mean, var);
    means.push_back(mean);
    invs.push_back(1 / std::sqrt(var + 1e-5));
    for (int64_t i = 0; i < 12; ++i)
      expected[size_t(r * 12 + i)] = (x.data<float>()[r * 12 + i] - mean) * invs.back() * s.data<float>()[i] + b.data<float>()[i];
  }
  expectClose(out.at("y").tensor, expected, 1e-5, "layer norm");
  EXPECT_EQ(out.at("mean").tensor.dims(), (std::vector<int64_t>{2, 1, 1}));
  EXPECT_EQ(out.at("mean").tensor.dtype(), DataType::kFloat32);
  expectClose(out.at("mean").tensor, means, 1e-5, "mean");
  expectClose(out.at("inv").tensor, invs, 1e-5, "inv std");
}

TEST(GroupNormalization, PerGroupParametersOpset18) {
  HostTensor x = test::randomFloats({2, 4, 3}, 12, -1, 2), s = test::randomFloats({2}, 13), b = test::randomFloats({2}, 14);
  ModelBuilder mb(18);
  mb.input("x", kFloat, x.dims()).initializer("s", s).initializer("b", b).output("y");
  ModelBuilder::setInt(mb.node("GroupNormalization", {"x", "s", "b"}, {"y"}), "num_groups", 2);
  HostTensor y = ReferenceExecutor(OnnxImporter().importBytes(mb.bytes())).run({{"x", x}}).at("y").tensor;
  std::vector<double> expected(24);
  for (int64_t r = 0; r < 4; ++r) {  // (n, group) rows of 2 channels x 3
    std::vector<int64_t> pick;
    for (int64_t i = 0; i < 6; ++i) pick.push_back(r * 6 + i);
    double mean, var;
    stats(x.data<float>(), pick, mean, var);
    for (int64_t i : pick)
      expected[size_t(i)] = (x.data<float>()[i] - mean) / std::sqrt(var + 1e-5) * s.data<float>()[r % 2] + b.data<float>()[r % 2];
  }
  expectClose(y, expected, 1e-5, "group norm");
}

TEST(Lrn, SumsSquaresOverNeighbourChannels) {
  HostTensor x = test::randomFloats({1, 5, 2, 3}, 15);
  const int64_t size = 3;
  const float alpha = 0.02f, beta = 0.6f, bias = 1.5f;
  ModelBuilder mb;
  mb.input("x", kFloat, x.dims()).output("y");
  auto& node = mb.node("LRN", {"x"}, {"y"});
  ModelBuilder::setInt(node, "size", size);
  ModelBuilder::setFloat(node, "alpha", alpha);
  ModelBuilder::setFloat(node, "beta", beta);
  ModelBuilder::setFloat(node, "bias", bias);
  HostTensor y = ReferenceExecutor(OnnxImporter().importBytes(mb.bytes())).run({{"x", x}}).at("y").tensor;
  std::vector<double> expected;
  for (int64_t c = 0; c < 5; ++c)
    for (int64_t i = 0; i < 6; ++i) {
      double sum = 0;
      for (int64_t k = std::max<int64_t>(0, c - 1); k <= std::min<int64_t>(4, c + 1); ++k)
        sum += std::pow(x.data<float>()[k * 6 + i], 2);
      expected.push_back(x.data<float>()[c * 6 + i] / std::pow(bias + alpha / size * sum, beta));
    }
  expectClose(y, expected, 1e-5, "lrn");
}

TEST(LpNormalization, DividesByNormAlongAxis) {
  HostTensor x = test::randomFloats({3, 4, 2}, 16);
  for (int64_t p : {1, 2}) {
    ModelBuilder mb;
    mb.input("x", kFloat, x.dims()).output("y");
    auto& node = mb.node("LpNormalization", {"x"}, {"y"});
    ModelBuilder::setInt(node, "axis", 1);
    ModelBuilder::setInt(node, "p", p);
    HostTensor y = ReferenceExecutor(OnnxImporter().importBytes(mb.bytes())).run({{"x", x}}).at("y").tensor;
    std::vector<double> expected(24);
    for (int64_t o = 0; o < 3; ++o)
      for (int64_t i = 0; i < 2; ++i) {
        double norm = 0;
        for (int64_t a = 0; a < 4; ++a) norm += std::pow(std::fabs(x.data<float>()[(o * 4 + a) * 2 + i]), double(p));
        norm = std::pow(norm, 1.0 / double(p));
        for (int64_t a = 0; a < 4; ++a) expected[size_t((o * 4 + a) * 2 + i)] = x.data<float>()[(o * 4 + a) * 2 + i] / norm;
      }
    expectClose(y, expected, 1e-5, "lp norm p=" + std::to_string(p));
  }
}

TEST(MeanVarianceNormalization, DefaultAxesArePerChannel) {
  HostTensor x = test::randomFloats({2, 3, 2, 2}, 17, -1, 3);
  ModelBuilder mb;
  mb.input("x", kFloat, x.dims()).output("y");
  mb.node("MeanVarianceNormalization", {"x"}, {"y"});
  HostTensor y = ReferenceExecutor(OnnxImporter().importBytes(mb.bytes())).run({{"x", x}}).at("y").tensor;
  std::vector<double> expected(24);
  for (int64_t c = 0; c < 3; ++c) {
    std::vector<int64_t> pick;
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t i = 0; i < 4; ++i) pick.push_back((n * 3 + c) * 4 + i);
    double mean, var;
    stats(x.data<float>(), pick, mean, var);
    for (int64_t i : pick) expected[size_t(i)] = (x.data<float>()[i] - mean) / (std::sqrt(var) + 1e-9);
  }
  expectClose(y, expected, 1e-5, "mvn");
}

TEST(NormalizationErrors, BatchNormScaleSizeNamesNode) {
  BatchNormData d;
  d.scale = test::randomFloats({4}, 18);
  ModelBuilder mb = d.model(15, false);
  expectErrorNaming([&] { OnnxImporter().importBytes(mb.bytes()); }, {"'bn'", "scale", "[3]"});
}

TEST(NormalizationErrors, LayerNormAxisOutOfRange) {
  ModelBuilder mb;
  mb.input("x", kFloat, {2, 3}).initializer("s", test::randomFloats({3}, 19)).output("y");
  ModelBuilder::setInt(mb.node("LayerNormalization", {"x", "s"}, {"y"}, "ln_axis"), "axis", 2);
  expectErrorNaming([&] { OnnxImporter().importBytes(mb.bytes()); }, {"ln_axis", "axis 2"});
}

TEST(NormalizationErrors, GroupNormChannelsNotMultipleOfGroups) {
  ModelBuilder mb(18);
  mb.input("x", kFloat, {1, 6, 4}).initializer("s", test::randomFloats({4}, 20)).initializer("b", test::randomFloats({4}, 21));
  mb.output("y");
  ModelBuilder::setInt(mb.node("GroupNormalization", {"x", "s", "b"}, {"y"}, "gn"), "num_groups", 4);
  expectErrorNaming([&] { OnnxImporter().importBytes(mb.bytes()); }, {"'gn'", "num_groups 4"});
}

}  // namespace
