#include "backends/support/quantized_layer_checks.h"

#include <kiln/reference_executor.h>

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

}  // namespace kiln::test
