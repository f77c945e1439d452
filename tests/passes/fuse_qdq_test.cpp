// Explicit quantization: Q/DQ models in onnxruntime.quantization's QDQ style (uint8 asymmetric
// activations, int8 weights per channel, int32 biases) and the symmetric int8 style of TensorRT /
// pytorch-quantization, fused into kiln.QuantizedConv / kiln.QuantizedMatMul after the standard
// passes: layer counts before and after, the fused network computing what the unfused Q/DQ graph
// computes on Kiln's reference executor, and the pairs that cannot be fused kept with their reason.
#include "pass_test_util.h"

#include "common/qdq_models.h"
#include "passes/fuse_qdq.h"

#include <cmath>

using namespace kiln;
using namespace kiln::test;

namespace {

constexpr auto F = onnx::TensorProto::FLOAT;

struct Fused {
  std::shared_ptr<Network> original, fused;
  QdqFusionOutcome outcome;
};

// The standard passes, then FuseQdq.
Fused fuseQdq(const ModelBuilder& mb, QdqFusionOptions options = {}) {
  Fused f;
  f.original = importModel(mb);
  f.fused = std::make_shared<Network>(*f.original);
  PassManager manager = PassManager::standard(3);
  manager.add(createFuseQdqPass(std::move(options), f.outcome));
  PassContext context;
  manager.run(*f.fused, context);
  return f;
}

// The largest |fused - unfused| over the outputs, relative to the largest |unfused| value.
double worstDifference(const Fused& f, uint32_t seed) {
  const ValueMap inputs = randomInputs(*f.original, seed);
  const ValueMap expected = ReferenceExecutor(f.original).run(inputs);
  const ValueMap actual = ReferenceExecutor(f.fused).run(inputs);
  double worst = 0, largest = 0;
  for (const auto& [name, value] : expected) {
    const HostTensor& e = value.tensor;
    const HostTensor& a = actual.at(name).tensor;
    EXPECT_EQ(a.dims(), e.dims()) << name;
    for (int64_t i = 0; i < e.elementCount(); ++i) {
      worst = std::max(worst, double(std::fabs(a.data<float>()[i] - e.data<float>()[i])));
      largest = std::max(largest, double(std::fabs(e.data<float>()[i])));
    }
  }
  EXPECT_GT(largest, 0.0);
  return worst / largest;
}

const std::string* reasonFor(const std::map<std::string, std::string>& reasons, const std::string& fragment) {
  for (const auto& [name, why] : reasons)
    if (why.find(fragment) != std::string::npos) return &why;
  return nullptr;
}

}  // namespace

// Every pair fuses: the MaxPool and Flatten run on the uint8 values between two QuantizeLinear /
// DequantizeLinear pairs of one scale (the identity, dropped), each Conv and the Gemm take their
// input's DequantizeLinear, their weights' and bias's, and the QuantizeLinear after them.
TEST(FuseQdq, OnnxRuntimeStyleCnnFusesEveryPairAndComputesWhatTheQdqGraphComputes) {
  std::vector<std::string> nodes;
  const Fused f = fuseQdq(qdqCnn(QdqStyle::kOnnxRuntime, &nodes));
  EXPECT_EQ(nodes.size(), 16u);
  EXPECT_EQ(f.original->layers().size(), 22u);
  EXPECT_EQ(opCounts(*f.fused), (std::map<std::string, int>{{"kiln.QuantizedConv", 2},
                                                             {"MaxPool", 1},
                                                             {"Flatten", 1},
                                                             {"kiln.QuantizedMatMul", 1}}));
  EXPECT_TRUE(f.outcome.unfused.empty());
  EXPECT_TRUE(f.outcome.keptFloat.empty());
  const Network& net = *f.fused;
  const Layer& pool = onlyLayer(net, "MaxPool");
  EXPECT_EQ(net.tensor(pool.inputs[0]).dtype, DataType::kUInt8) << "the MaxPool runs on the quantized values";
  for (const Layer& l : net.layers()) {
    if (l.name == "conv1") {
      EXPECT_EQ(l.inputs[0], "x") << "x's QuantizeLinear is done on entry";
      EXPECT_EQ(net.tensor(l.outputs[0]).dtype, DataType::kUInt8) << "r1's QuantizeLinear is its output quantization";
      EXPECT_EQ(l.attrString("activation"), "Relu");
      EXPECT_TRUE(hasOrigins(l, {"conv1", "relu1", "x_QuantizeLinear", "x_DequantizeLinear", "w1_DequantizeLinear",
                                 "b1_DequantizeLinear", "r1_QuantizeLinear"}));
    }
    if (l.name == "gemm") EXPECT_EQ(net.tensor(l.outputs[0]).dtype, DataType::kFloat32);
  }
  // The dropped identities are named.
  EXPECT_EQ(f.outcome.removed.count("p1_QuantizeLinear"), 1u);
  EXPECT_EQ(f.outcome.removed.count("f_QuantizeLinear"), 1u);
  const double worst = worstDifference(f, 7);
  std::cout << "[ measured ] ORT-style CNN: largest |fused - unfused| / max|y| = " << worst << "\n";
  EXPECT_LT(worst, 1e-5);
}

// TensorRT's style: int8, zero point 0, per-tensor scales, float biases, Q/DQ only on the inputs
// of Conv and MatMul. The QuantizeLinear after the MaxPool moves before it (into conv1's output);
// conv2's residual Add reads the DequantizeLinear that also feeds conv2, which stays for it; the
// Flatten runs on int8 and its DequantizeLinear goes into the MatMul.
TEST(FuseQdq, SymmetricInt8StylePropagatesAcrossMaxPoolAndKeepsTheResidualDequantize) {
  const HostTensor w1 = randomFloats({8, 3, 3, 3}, 11, -0.5f, 0.5f), w2 = randomFloats({8, 8, 3, 3}, 12, -0.2f, 0.2f);
  const HostTensor wm = randomFloats({200, 5}, 13, -0.1f, 0.1f);
  ModelBuilder mb;
  mb.input("x", F, {2, 3, 10, 10});
  mb.initializer("b1", randomFloats({8}, 14, -0.1f, 0.1f)).initializer("b2", randomFloats({8}, 15, -0.1f, 0.1f));
  QdqWriter q(mb, QdqStyle::kSymmetricInt8);
  ModelBuilder::setInts(mb.node("Conv", {q.activation("x", -1, 1), q.weights("w1", w1, 0), "b1"}, {"c1"}, "conv1"),
                        "pads", {1, 1, 1, 1});
  mb.node("Relu", {"c1"}, {"r1"}, "relu1");
  auto& pool = mb.node("MaxPool", {"r1"}, {"p1"}, "pool");
  ModelBuilder::setInts(pool, "kernel_shape", {2, 2});
  ModelBuilder::setInts(pool, "strides", {2, 2});
  const std::string p1 = q.activation("p1", 0, 1.5f);
  ModelBuilder::setInts(mb.node("Conv", {p1, q.weights("w2", w2, 0), "b2"}, {"c2"}, "conv2"), "pads", {1, 1, 1, 1});
  mb.node("Add", {"c2", p1}, {"s"}, "residual");
  mb.node("Relu", {"s"}, {"r2"}, "relu2");
  mb.node("Flatten", {q.activation("r2", 0, 2.5f)}, {"f"}, "flatten");
  mb.node("MatMul", {"f", q.weights("wm", wm, 1)}, {"y"}, "matmul");
  mb.output("y");
  const Fused f = fuseQdq(mb);
  EXPECT_EQ(f.original->layers().size(), 17u);  // 8 ops, 9 Q/DQ
  EXPECT_EQ(opCounts(*f.fused), (std::map<std::string, int>{{"kiln.QuantizedConv", 2},
                                                             {"MaxPool", 1},
                                                             {"DequantizeLinear", 1},
                                                             {"Flatten", 1},
                                                             {"kiln.QuantizedMatMul", 1}}));
  ASSERT_EQ(f.outcome.unfused.size(), 1u);
  EXPECT_NE(f.outcome.unfused.begin()->second.find("QuantizedConv 'conv2' adds it as its float residual"),
            std::string::npos)
      << f.outcome.unfused.begin()->second;
  for (const Layer& l : f.fused->layers())
    if (l.name == "conv1") EXPECT_EQ(f.fused->tensor(l.outputs[0]).dtype, DataType::kInt8);
  const double worst = worstDifference(f, 8);
  std::cout << "[ measured ] symmetric int8 CNN: largest |fused - unfused| / max|y| = " << worst << "\n";
  EXPECT_LT(worst, 1e-5);
}

// A MatMul of two uint8 activations with zero points (attention's Q.K^T in ORT's QDQ BERT) and a
// MatMul with int8 weights per column.
TEST(FuseQdq, MatMulOfTwoAsymmetricActivationsKeepsBothZeroPoints) {
  ModelBuilder mb;
  mb.input("a", F, {2, 4, 6}).input("b", F, {2, 6, 3});
  QdqWriter q(mb, QdqStyle::kOnnxRuntime);
  mb.node("MatMul", {q.activation("a", -1, 1), q.activation("b", -0.5f, 1)}, {"ab"}, "scores");
  mb.node("MatMul", {q.activation("ab", -2, 3), q.weights("w", randomFloats({3, 5}, 3), 1)}, {"y"}, "project");
  mb.output("y");
  const Fused f = fuseQdq(mb);
  EXPECT_EQ(opCounts(*f.fused), (std::map<std::string, int>{{"kiln.QuantizedMatMul", 2}}));
  for (const Layer& l : f.fused->layers())
    if (l.name == "scores") {
      EXPECT_EQ(l.inputs[0], "a");
      EXPECT_EQ(l.inputs[1], "b");  // both quantized on entry with their zero points
      EXPECT_EQ(f.fused->tensor(l.outputs[0]).dtype, DataType::kUInt8);
    }
  EXPECT_LT(worstDifference(f, 9), 1e-5);
}

// One Conv with a defect each: the pair stays float (the graph computes exactly what it did) and
// the outcome says why.
TEST(FuseQdq, PairsThatCannotBeFusedStayFloatWithTheReason) {
  struct Case {
    std::string name, reason;
    std::function<void(ModelBuilder&, QdqWriter&)> conv;
    QdqFusionOptions options;
  };
  const HostTensor w = randomFloats({4, 3, 3, 3}, 21);
  std::vector<Case> cases;
  cases.push_back({"uint8 weights with zero point 0", "asymmetric uint8 zero point on weights",
                   [&](ModelBuilder& mb, QdqWriter& q) {
                     HostTensor wq(DataType::kUInt8, {4, 3, 3, 3});
                     for (int64_t i = 0; i < wq.elementCount(); ++i) wq.data<uint8_t>()[i] = uint8_t((i * 37) % 256);
                     mb.initializer("wq", wq).initializer("ws", HostTensor::scalar<float>(0.01f));
                     mb.initializer("wz", HostTensor::scalar<uint8_t>(0));
                     mb.node("DequantizeLinear", {"wq", "ws", "wz"}, {"wd"}, "w_DequantizeLinear");
                     mb.node("Conv", {q.activation("x", -1, 1), "wd"}, {"y"}, "conv");
                   },
                   {}});
  cases.push_back({"an Add after the DequantizeLinear", "Add 'add' has no int8 kernel",
                   [&](ModelBuilder& mb, QdqWriter& q) {
                     mb.node("Conv", {"x", q.weights("w", w, 0)}, {"c"}, "conv");
                     mb.node("Add", {q.activation("c", -3, 3), "c"}, {"y"}, "add");
                   },
                   {}});
  cases.push_back({"a scale that is a graph input", "its scale is not a constant",
                   [&](ModelBuilder& mb, QdqWriter& q) {
                     mb.input("s", F, {});
                     mb.initializer("z", HostTensor::scalar<int8_t>(0));
                     mb.node("QuantizeLinear", {"x", "s", "z"}, {"xq"}, "x_QuantizeLinear");
                     mb.node("DequantizeLinear", {"xq", "s", "z"}, {"xd"}, "x_DequantizeLinear");
                     mb.node("Conv", {"xd", q.weights("w", w, 0)}, {"y"}, "conv");
                   },
                   {}});
  cases.push_back({"--layer-precision", "--layer-precision asks for fp16",
                   [&](ModelBuilder& mb, QdqWriter& q) {
                     mb.node("Conv", {q.activation("x", -1, 1), q.weights("w", w, 0)}, {"y"}, "conv");
                   },
                   {{{"conv", Precision::kFP16}}, {}}});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ModelBuilder mb;
    mb.input("x", F, {1, 3, 6, 6});
    QdqWriter q(mb, QdqStyle::kOnnxRuntime);
    c.conv(mb, q);
    mb.output("y");
    const Fused f = fuseQdq(mb, c.options);
    EXPECT_EQ(countOf(*f.fused, "kiln.QuantizedConv"), 0);
    EXPECT_GT(countOf(*f.fused, "DequantizeLinear"), 0);
    const std::string* why = reasonFor(f.outcome.unfused, c.reason);
    EXPECT_NE(why, nullptr) << "no Q/DQ layer says '" << c.reason << "'";
    if (c.name != "an Add after the DequantizeLinear")
      EXPECT_NE(reasonFor(f.outcome.keptFloat, c.reason), nullptr) << "the Conv does not say '" << c.reason << "'";
    if (c.name != "a scale that is a graph input") EXPECT_EQ(worstDifference(f, 4), 0.0);
  }
}

// Weights quantized per channel along K (axis 0 of a MatMul's B) cannot be factored out of the sum.
TEST(FuseQdq, PerChannelScalesAlongTheReducedAxisStayFloat) {
  ModelBuilder mb;
  mb.input("a", F, {3, 6});
  QdqWriter q(mb, QdqStyle::kOnnxRuntime);
  mb.node("MatMul", {q.activation("a", -1, 1), q.weights("w", randomFloats({6, 4}, 5), 0)}, {"y"}, "mm");
  mb.output("y");
  const Fused f = fuseQdq(mb);
  EXPECT_EQ(countOf(*f.fused, "kiln.QuantizedMatMul"), 0);
  ASSERT_EQ(f.outcome.keptFloat.count("mm"), 1u);
  EXPECT_EQ(f.outcome.keptFloat.at("mm"),
            "its weights are quantized per channel along axis 0, not along the output channels (axis 1)");
  EXPECT_EQ(worstDifference(f, 6), 0.0);
}
