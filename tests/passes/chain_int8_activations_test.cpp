// ChainInt8Activations on hand-built int8 layers: a result read by one layer as its activation and
// by another as its residual becomes int8 at the activation's scale, the residual reader getting
// that scale as z_scale; a result only a residual reads takes its calibrated scale when the
// calibration has one and stays float otherwise; an fp8 reader keeps it float.
#include <kiln/network.h>

#include "ops/fused.h"
#include "ops/quantized.h"
#include "passes/chain_int8_activations.h"

#include <gtest/gtest.h>

#include <map>

using namespace kiln;

namespace {

// kiln.QuantizedConv 1x1 named `name` over x (and residual z) writing y, weights [4, 4, 1, 1].
Layer quantizedConv(const std::string& name, const std::string& x, const std::string& z, const std::string& y,
                    const char* precision = "int8") {
  Layer l;
  l.name = name;
  l.domain = fused::kDomain;
  l.opType = quantized::kQuantizedConv;
  l.inputs = {x, std::string(precision) == "fp8" ? "w8" : "w", "", z, "xs_" + name, "ws"};
  l.outputs = {y};
  l.attributes[fused::kBase] = std::string("Conv");
  l.attributes[quantized::kPrecision] = std::string(precision);
  return l;
}

// x -> producer -> t; t read by `readers`; every reader's output a graph output.
Network networkWith(const std::vector<Layer>& readers) {
  Network n;
  n.addInput("x", DataType::kFloat32, Shape::fromDims({1, 4, 3, 3}));
  n.addConstant("w", HostTensor(DataType::kInt8, {4, 4, 1, 1}));
  n.addConstant("w8", HostTensor(DataType::kFloat8E4M3, {4, 4, 1, 1}));
  n.addConstant("ws", HostTensor::scalar<float>(0.01f));
  n.addConstant("xs_producer", HostTensor::scalar<float>(0.02f));
  n.addLayer(quantizedConv("producer", "x", "", "t"));
  for (const Layer& r : readers) {
    n.addConstant("xs_" + r.name, HostTensor::scalar<float>(0.05f));
    n.addLayer(r);
    n.markOutput(r.outputs[0]);
  }
  n.inferShapes();
  return n;
}

const Layer& layerNamed(const Network& n, const std::string& name) {
  for (const Layer& l : n.layers())
    if (l.name == name) return l;
  throw std::runtime_error("no layer " + name);
}

PassRecord chain(Network& n, const std::map<std::string, float>* scales = nullptr) {
  PassContext context;
  PassRecord record = createChainInt8ActivationsPass(scales)->run(n, context);
  n.inferShapes();
  return record;
}

}  // namespace

TEST(ChainInt8Activations, AResultReadAsActivationAndAsResidualBecomesInt8WithTheResidualScale) {
  Network n = networkWith({quantizedConv("conv1", "t", "", "y1"), quantizedConv("conv3", "x", "t", "y3")});
  const PassRecord record = chain(n);
  const Layer& producer = layerNamed(n, "producer");
  ASSERT_TRUE(producer.hasInput(quantized::kOutputScaleInput));
  EXPECT_EQ(producer.inputs[quantized::kOutputScaleInput], "xs_conv1");
  EXPECT_EQ(n.tensor("t").dtype, DataType::kInt8);
  const Layer& conv3 = layerNamed(n, "conv3");
  ASSERT_TRUE(conv3.hasInput(quantized::kResidualScaleInput));
  EXPECT_EQ(conv3.inputs[quantized::kResidualScaleInput], "xs_conv1");
  ASSERT_EQ(record.changes.size(), 1u);
  EXPECT_NE(record.changes[0].find("1 as their int8 residual ('conv3')"), std::string::npos) << record.changes[0];
}

TEST(ChainInt8Activations, AResultOnlyResidualsReadTakesItsCalibratedScaleOrStaysFloat) {
  {
    Network n = networkWith({quantizedConv("conv3", "x", "t", "y3")});
    chain(n);
    EXPECT_EQ(n.tensor("t").dtype, DataType::kFloat32) << "no calibration: no scale";
  }
  Network n = networkWith({quantizedConv("conv3", "x", "t", "y3")});
  const std::map<std::string, float> scales{{"t", 0.125f}};
  chain(n, &scales);
  EXPECT_EQ(n.tensor("t").dtype, DataType::kInt8);
  const Layer& conv3 = layerNamed(n, "conv3");
  ASSERT_TRUE(conv3.hasInput(quantized::kResidualScaleInput));
  const Tensor& scale = n.tensor(conv3.inputs[quantized::kResidualScaleInput]);
  ASSERT_TRUE(scale.isConstant());
  EXPECT_EQ(scale.constant->data<float>()[0], 0.125f);
  EXPECT_EQ(layerNamed(n, "producer").inputs[quantized::kOutputScaleInput],
            conv3.inputs[quantized::kResidualScaleInput]);
}

TEST(ChainInt8Activations, AnFp8OrFloatReaderKeepsTheResultFloat) {
  {
    Network n = networkWith({quantizedConv("conv1", "t", "", "y1"), quantizedConv("conv3", "x", "t", "y3", "fp8")});
    chain(n);
    EXPECT_EQ(n.tensor("t").dtype, DataType::kFloat32);
    EXPECT_FALSE(layerNamed(n, "conv3").hasInput(quantized::kResidualScaleInput));
  }
  Layer relu;
  relu.name = "relu", relu.opType = "Relu", relu.opsetVersion = 19, relu.inputs = {"t"}, relu.outputs = {"r"};
  Network n = networkWith({quantizedConv("conv3", "x", "t", "y3"), relu});
  const std::map<std::string, float> scales{{"t", 0.125f}};
  chain(n, &scales);
  EXPECT_EQ(n.tensor("t").dtype, DataType::kFloat32);
  EXPECT_FALSE(layerNamed(n, "conv3").hasInput(quantized::kResidualScaleInput));
}
