#include "backends/support/quantized_layer_checks.h"

#include <kiln/reference_executor.h>

#include "common/test_models.h"
#include "ops/quantized.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>

namespace kiln::test {

HostTensor runOne(Network& network, const std::map<std::string, HostTensor>& inputs) {
  ValueMap feeds;
  for (const auto& [name, t] : inputs) {
    network.addInput(name, t.dtype(), Shape::fromDims(t.dims()));
    feeds[name] = t;
  }
  network.markOutput("y");
  network.inferShapes();
  return ReferenceExecutor(std::make_shared<Network>(network)).run(feeds).at("y").tensor;
}

Layer oneLayer(const std::string& op, std::vector<std::string> inputs, const char* precision) {
  Layer l;
  l.name = "layer";
  l.domain = op.rfind("Quantized", 0) == 0 || op.rfind("Fused", 0) == 0 ? fused::kDomain : "";
  l.opType = op;
  l.opsetVersion = 19;
  l.inputs = std::move(inputs);
  l.outputs = {"y"};
  if (precision) l.attributes[quantized::kPrecision] = std::string(precision);
  return l;
}

void expectClose(const HostTensor& actual, const HostTensor& expected) {
  ASSERT_EQ(actual.dims(), expected.dims());
  double worst = 0, scale = 0;
  for (int64_t i = 0; i < expected.elementCount(); ++i) {
    worst = std::max(worst, double(std::fabs(actual.data<float>()[i] - expected.data<float>()[i])));
    scale = std::max(scale, double(std::fabs(expected.data<float>()[i])));
  }
  EXPECT_LE(worst, 1e-5 * (1 + scale));
}

void expectQuantizedConvMatches(const char* precision, const HostTensor& x, const HostTensor& w, float xScale,
                                const std::vector<float>& wScales, const HostTensor& xSeen, const HostTensor& wSeen) {
  const HostTensor bias = randomFloats({6}, 13);
  const HostTensor residual = randomFloats({2, 6, 5, 3}, 14);
  auto attributes = [](Layer& l) {
    l.attributes[fused::kBase] = std::string("Conv");
    l.attributes["group"] = int64_t(2);
    l.attributes["pads"] = std::vector<int64_t>{1, 0, 1, 1};
    l.attributes["strides"] = std::vector<int64_t>{2, 2};
    l.attributes[fused::kActivation] = std::string("LeakyRelu");
    l.attributes[fused::kActivationAlpha] = 0.1f;
  };
  Network q;
  q.addConstant("w", w);
  q.addConstant("b", bias);
  q.addConstant("xs", HostTensor::scalar<float>(xScale));
  q.addConstant("ws", HostTensor::fromVector<float>({int64_t(wScales.size())}, wScales));
  Layer conv = oneLayer(quantized::kQuantizedConv, {"x", "w", "b", "z", "xs", "ws"}, precision);
  attributes(conv);
  q.addLayer(conv);
  const HostTensor actual = runOne(q, {{"x", x}, {"z", residual}});

  Network f;
  f.addConstant("w", wSeen);
  f.addConstant("b", bias);
  Layer reference = oneLayer(fused::kFusedConv, {"x", "w", "b", "z"});
  attributes(reference);
  f.addLayer(reference);
  expectClose(actual, runOne(f, {{"x", xSeen}, {"z", residual}}));
}

}  // namespace kiln::test
