// Every CPU convolution tactic, run through the Backend interface (tactics -> instantiate -> Step on
// a stream), on random data across shapes, as Conv and as kiln.FusedConv with bias + residual +
// Relu, checked against the textbook loops written here.
#include <kiln/error.h>

#include "common/step_harness.h"
#include "backends/backend.h"
#include "common/test_models.h"
#include "ops/fused.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

using namespace kiln;

namespace {

struct ConvCase {
  std::string name;
  int64_t batch, channels, outChannels, group;
  std::vector<int64_t> in, kernel, strides, pads, dilations;  // pads: begins, then ends
  std::set<std::string> expectedTactics;                      // must be among the candidates
};

std::vector<int64_t> outputSpatial(const ConvCase& c) {
  std::vector<int64_t> out;
  const size_t r = c.in.size();
  for (size_t i = 0; i < r; ++i)
    out.push_back((c.in[i] + c.pads[i] + c.pads[i + r] - (c.kernel[i] - 1) * c.dilations[i] - 1) / c.strides[i] + 1);
  return out;
}

std::vector<int64_t> withLeading(std::vector<int64_t> spatial, int64_t a, int64_t b) {
  spatial.insert(spatial.begin(), {a, b});
  return spatial;
}

// y[n, m, o...] = bias[m] + sum over c in m's group and kernel taps of x * w, by definition;
// spatial ranks 1-3 handled as 3-D with leading size-1 axes.
std::vector<double> naiveConv(const ConvCase& c, const HostTensor& x, const HostTensor& w, const HostTensor& bias) {
  const size_t r = c.in.size(), lead = 3 - r;
  int64_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, d[3] = {1, 1, 1}, p[3] = {0, 0, 0}, o[3] = {1, 1, 1};
  const auto out = outputSpatial(c);
  for (size_t i = 0; i < r; ++i) {
    in[lead + i] = c.in[i], k[lead + i] = c.kernel[i], s[lead + i] = c.strides[i];
    d[lead + i] = c.dilations[i], p[lead + i] = c.pads[i], o[lead + i] = out[i];
  }
  const int64_t cg = c.channels / c.group, mg = c.outChannels / c.group;
  const float *xp = x.data<float>(), *wp = w.data<float>(), *bp = bias.data<float>();
  std::vector<double> y;
  for (int64_t n = 0; n < c.batch; ++n)
    for (int64_t m = 0; m < c.outChannels; ++m)
      for (int64_t od = 0; od < o[0]; ++od)
        for (int64_t oh = 0; oh < o[1]; ++oh)
          for (int64_t ow = 0; ow < o[2]; ++ow) {
            double acc = bp[m];
            for (int64_t ci = 0; ci < cg; ++ci)
              for (int64_t kd = 0; kd < k[0]; ++kd)
                for (int64_t kh = 0; kh < k[1]; ++kh)
                  for (int64_t kw = 0; kw < k[2]; ++kw) {
                    const int64_t id = od * s[0] - p[0] + kd * d[0], ih = oh * s[1] - p[1] + kh * d[1],
                                  iw = ow * s[2] - p[2] + kw * d[2];
                    if (id < 0 || ih < 0 || iw < 0 || id >= in[0] || ih >= in[1] || iw >= in[2]) continue;
                    const int64_t channel = m / mg * cg + ci;
                    acc += double(xp[(((n * c.channels + channel) * in[0] + id) * in[1] + ih) * in[2] + iw]) *
                           wp[(((m * cg + ci) * k[0] + kd) * k[1] + kh) * k[2] + kw];
                  }
            y.push_back(acc);
          }
  return y;
}

Layer makeLayer(const ConvCase& c, bool fusedLayer) {
  Layer l;
  l.name = c.name;
  l.opsetVersion = 17;
  l.inputs = {"x", "w", "b"};
  l.outputs = {"y"};
  l.attributes["kernel_shape"] = c.kernel;
  l.attributes["strides"] = c.strides;
  l.attributes["pads"] = c.pads;
  l.attributes["dilations"] = c.dilations;
  l.attributes["group"] = c.group;
  if (fusedLayer) {
    l.domain = fused::kDomain;
    l.opType = fused::kFusedConv;
    l.inputs.push_back("residual");
    l.attributes[fused::kBase] = std::string("Conv");
    l.attributes[fused::kActivation] = std::string("Relu");
  } else {
    l.opType = "Conv";
  }
  return l;
}

class ConvTactics : public ::testing::TestWithParam<ConvCase> {};

TEST_P(ConvTactics, EveryTacticMatchesTheDefinition) {
  const ConvCase& c = GetParam();
  const auto backend = makeCpuBackend();
  auto stream = backend->createStream();
  const std::vector<int64_t> yDims = withLeading(outputSpatial(c), c.batch, c.outChannels);
  HostTensor x = test::randomFloats(withLeading(c.in, c.batch, c.channels), 1);
  HostTensor w = test::randomFloats(withLeading(c.kernel, c.outChannels, c.channels / c.group), 2);
  HostTensor bias = test::randomFloats({c.outChannels}, 3);
  HostTensor residual = test::randomFloats(yDims, 4);
  const std::vector<double> conv = naiveConv(c, x, w, bias);

  for (bool fusedLayer : {false, true}) {
    const Layer layer = makeLayer(c, fusedLayer);
    std::vector<Value> values = {Value(x), Value(w), Value(bias), Value(residual)};
    values.resize(layer.inputs.size());
    std::vector<const Value*> inputs;
    LayerInputs described;
    for (const Value& v : values) {
      inputs.push_back(&v);
      described.types.push_back(DataType::kFloat32);
      described.dims.push_back(v.tensor.dims());
    }
    described.weights = {nullptr, &w, &bias, nullptr};
    described.weights.resize(layer.inputs.size());

    std::set<std::string> offered;
    for (const Tactic& tactic : backend->tactics(layer, Precision::kFP32, described)) {
      offered.insert(tactic.id);
      SCOPED_TRACE(tactic.id + (fusedLayer ? " fused" : " plain"));
      test::StandaloneStep step(*backend, layer, tactic, described.weights);
      EXPECT_EQ(step.workspaceBytes(inputs), tactic.workspaceBytes);  // same dims, same need
      auto outputs = step.enqueue(inputs, *stream);
      stream->synchronize();
      ASSERT_EQ(outputs.size(), 1u);
      const HostTensor& y = outputs[0].tensor;
      ASSERT_EQ(y.dims(), yDims);
      const float* got = y.data<float>();
      for (size_t i = 0; i < conv.size(); ++i) {
        const double want = fusedLayer ? std::max(0.0, conv[i] + residual.data<float>()[i]) : conv[i];
        ASSERT_NEAR(got[i], want, 1e-4 * (1 + std::fabs(want))) << "element " << i;
      }
    }
    for (const auto& id : c.expectedTactics) EXPECT_TRUE(offered.count(id)) << id << " not offered";
  }
}

const std::set<std::string> kGeneral = {"cpu.conv.im2col_gemm", "cpu.conv.direct", "cpu.conv.onednn"};

INSTANTIATE_TEST_SUITE_P(
    Shapes, ConvTactics,
    ::testing::Values(
        ConvCase{"basic3x3", 1, 8, 16, 1, {9, 11}, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, kGeneral},
        ConvCase{"stridedAsymPads", 2, 5, 12, 1, {10, 9}, {3, 2}, {2, 3}, {1, 0, 2, 1}, {1, 1}, kGeneral},
        ConvCase{"dilated", 1, 4, 9, 1, {12, 10}, {3, 3}, {1, 2}, {2, 2, 2, 2}, {2, 3}, kGeneral},
        // 40 output channels: two full blocks of 16 and a partial one in the direct loops.
        ConvCase{"wideUnpadded", 1, 6, 40, 1, {8, 15}, {3, 3}, {1, 1}, {0, 0, 0, 0}, {1, 1}, kGeneral},
        ConvCase{"stem7x7", 1, 3, 16, 1, {30, 30}, {7, 7}, {2, 2}, {3, 3, 3, 3}, {1, 1}, kGeneral},
        ConvCase{"grouped", 2, 6, 24, 3, {7, 6}, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, kGeneral},
        ConvCase{"depthwise", 2, 8, 8, 8, {9, 8}, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1},
                 {"cpu.conv.depthwise", "cpu.conv.onednn"}},
        ConvCase{"depthwiseStrided", 1, 4, 8, 4, {11, 10}, {5, 3}, {2, 2}, {2, 1, 1, 0}, {1, 2},
                 {"cpu.conv.depthwise", "cpu.conv.onednn"}},
        ConvCase{"pointwise", 2, 16, 24, 1, {6, 7}, {1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1},
                 {"cpu.conv.gemm_1x1", "cpu.conv.im2col_gemm", "cpu.conv.direct", "cpu.conv.onednn"}},
        // Wide enough for oneDNN's blocked kernels (16-channel blocks, a partial last block).
        ConvCase{"blocked", 2, 40, 72, 1, {14, 13}, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, kGeneral},
        ConvCase{"pointwiseStrided", 1, 8, 16, 1, {9, 9}, {1, 1}, {2, 2}, {0, 0, 0, 0}, {1, 1}, kGeneral},
        ConvCase{"conv1d", 2, 3, 10, 1, {17}, {4}, {2}, {1, 2}, {2}, kGeneral},
        ConvCase{"conv3d", 1, 2, 8, 1, {5, 6, 7}, {3, 2, 3}, {1, 2, 1}, {1, 0, 1, 1, 1, 0}, {1, 1, 1}, kGeneral},
        // Big enough for the GEMM paths to split: one GEMM across threads, and a task (with its own
        // im2col slot of the workspace) per thread.
        ConvCase{"splitGemm", 1, 32, 48, 1, {20, 20}, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, kGeneral},
        ConvCase{"taskPerThread", 3, 16, 32, 1, {24, 24}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, kGeneral}),
    [](const auto& info) { return info.param.name; });

TEST(ConvTactics, ListsOnlyTacticsThatApply) {
  const auto backend = makeCpuBackend();
  ConvCase general{"g", 1, 8, 16, 1, {9, 9}, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, {}};
  Layer layer = makeLayer(general, false);
  HostTensor w = test::randomFloats({16, 8, 3, 3}, 5);
  LayerInputs in{{DataType::kFloat32, DataType::kFloat32, DataType::kFloat32},
                 {{1, 8, 9, 9}, {16, 8, 3, 3}, {16}},
                 {nullptr, &w, nullptr}};
  std::vector<std::string> ids;
  for (const auto& t : backend->tactics(layer, Precision::kFP32, in)) ids.push_back(t.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"cpu.conv.im2col_gemm", "cpu.conv.direct", "cpu.conv.onednn"}));
  // float64 convolutions have no tactics: the reference kernel is the only candidate.
  in.types = {DataType::kFloat64, DataType::kFloat64, DataType::kFloat64};
  auto fallback = backend->tactics(layer, Precision::kFP32, in);
  ASSERT_EQ(fallback.size(), 1u);
  EXPECT_EQ(fallback[0].id, "cpu.conv");
}

// Runs a step on the given inputs.
HostTensor runStep(const test::StandaloneStep& step, const std::vector<Value>& values) {
  auto stream = makeCpuBackend()->createStream();
  std::vector<const Value*> inputs;
  for (const Value& v : values) inputs.push_back(&v);
  auto outputs = step.enqueue(inputs, *stream);
  stream->synchronize();
  return outputs.at(0).tensor;
}

// Runs one tactic of a layer whose weights and bias are constant.
HostTensor runTactic(const Layer& layer, const std::string& tacticId, const std::vector<Value>& values) {
  LayerWeights weights = {nullptr, &values[1].tensor, &values[2].tensor, nullptr};
  weights.resize(layer.inputs.size());
  const auto backend = makeCpuBackend();
  test::StandaloneStep step(*backend, layer, Tactic{tacticId}, weights);
  return runStep(step, values);
}

void expectClose(const HostTensor& got, const HostTensor& want) {
  ASSERT_EQ(got.dims(), want.dims());
  for (int64_t i = 0; i < want.elementCount(); ++i)
    ASSERT_NEAR(got.data<float>()[i], want.data<float>()[i], 1e-4 * (1 + std::fabs(want.data<float>()[i])))
        << "element " << i;
}

// oneDNN runs the epilogue as post-ops: every activation, before and after the residual, must
// match the im2col tactic (itself checked against the definition above).
TEST(ConvTactics, OneDnnEpilogueMatchesEveryActivation) {
  ConvCase c{"epilogue", 1, 16, 32, 1, {10, 9}, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, {}};
  const std::vector<int64_t> yDims = withLeading(outputSpatial(c), c.batch, c.outChannels);
  const std::vector<Value> values = {Value(test::randomFloats({1, 16, 10, 9}, 11)),
                                     Value(test::randomFloats({32, 16, 3, 3}, 12)),
                                     Value(test::randomFloats({32}, 13)), Value(test::randomFloats(yDims, 14))};
  const std::pair<const char*, std::pair<float, float>> activations[] = {
      {"Relu", {0, 0}},        {"LeakyRelu", {0.1f, 0}}, {"Clip", {-0.5f, 0.75f}}, {"Sigmoid", {0, 0}},
      {"HardSigmoid", {0.2f, 0.5f}}, {"HardSwish", {0, 0}}, {"SiLU", {0, 0}},         {"Gelu", {0, 0}},
      {"GeluTanh", {0, 0}},    {"Tanh", {0, 0}}};
  for (const auto& [activation, params] : activations)
    for (int64_t residualFirst : {1, 0}) {
      SCOPED_TRACE(std::string(activation) + (residualFirst ? " after residual" : " before residual"));
      Layer layer = makeLayer(c, true);
      layer.attributes[fused::kActivation] = std::string(activation);
      layer.attributes[fused::kActivationAlpha] = params.first;
      layer.attributes[fused::kActivationBeta] = params.second;
      layer.attributes[fused::kResidualBeforeActivation] = residualFirst;
      expectClose(runTactic(layer, "cpu.conv.onednn", values), runTactic(layer, "cpu.conv.im2col_gemm", values));
    }
}

// One oneDNN step meets several shapes (a dynamic batch / image size) and weights that arrive at
// run time (not constant): each shape gets its own primitive, and alternating shapes reuse them.
TEST(ConvTactics, OneDnnStepServesSeveralShapesAndRuntimeWeights) {
  ConvCase c{"dynamic", 1, 16, 24, 1, {12, 12}, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, {}};
  const Layer layer = makeLayer(c, false);
  for (bool constantWeights : {true, false}) {
    SCOPED_TRACE(constantWeights ? "constant weights" : "runtime weights");
    const Value w(test::randomFloats({24, 16, 3, 3}, 21)), bias(test::randomFloats({24}, 22));
    LayerWeights weights = {nullptr, constantWeights ? &w.tensor : nullptr, constantWeights ? &bias.tensor : nullptr};
    const auto backend = makeCpuBackend();
    test::StandaloneStep oneDnn(*backend, layer, Tactic{"cpu.conv.onednn"}, weights);
    test::StandaloneStep reference(*backend, layer, Tactic{"cpu.conv.im2col_gemm"}, weights);
    int seed = 30;
    for (int round = 0; round < 2; ++round)
      for (const std::vector<int64_t>& dims : {std::vector<int64_t>{1, 16, 12, 12}, {3, 16, 12, 12}, {2, 16, 20, 9}}) {
        const std::vector<Value> values = {Value(test::randomFloats(dims, ++seed)), w, bias};
        expectClose(runStep(oneDnn, values), runStep(reference, values));
      }
  }
}

TEST(ConvTactics, UnknownTacticIsAnErrorNamingLayerAndTactic) {
  const auto backend = makeCpuBackend();
  ConvCase c{"conv7", 1, 2, 2, 1, {4, 4}, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, {}};
  try {
    test::StandaloneStep(*backend, makeLayer(c, false), Tactic{"cpu.conv.winograd"}, {});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    const std::string what = e.what();
    EXPECT_NE(what.find("conv7"), std::string::npos) << what;
    EXPECT_NE(what.find("cpu.conv.winograd"), std::string::npos) << what;
    EXPECT_NE(what.find("cpu.conv.im2col_gemm"), std::string::npos) << what;  // lists what exists
  }
}

}  // namespace
