// CPU and CUDA engines agree on RNN, GRU and LSTM: weights as initializers and as graph inputs
// (as the ONNX node tests give them), forward, reverse and bidirectional, both layouts, biases,
// peepholes, initial states, sequence lengths, clip and non-default activations, at odd sizes and
// batch 1, in fp32 and fp16.
#include <kiln/shape.h>

#include "gpu/agreement_models.h"
#include "gpu/backend_agreement.h"

#include <gtest/gtest.h>

using namespace kiln;
using kiln::test::ModelBuilder;
using namespace kiln::test::onnx_types;

namespace {

struct RecurrentModel {
  std::string op;
  int64_t steps, batch, inputSize, hidden;
  std::string direction = "forward";
  int64_t layout = 0;
  bool bias = false, lengths = false, initial = false, peephole = false, weightsAsInputs = false;
  float clip = 0;
  int64_t linearBeforeReset = 0;
  std::vector<std::string> activations = {};
};

int64_t gatesOf(const std::string& op) { return op == "RNN" ? 1 : op == "GRU" ? 3 : 4; }

void expectAgreement(const RecurrentModel& m) {
  const int64_t D = m.direction == "bidirectional" ? 2 : 1, G = gatesOf(m.op), H = m.hidden;
  const std::vector<int64_t> xDims =
      m.layout ? std::vector<int64_t>{m.batch, m.steps, m.inputSize} : std::vector<int64_t>{m.steps, m.batch, m.inputSize};
  const std::vector<int64_t> stateDims = m.layout ? std::vector<int64_t>{m.batch, D, H} : std::vector<int64_t>{D, m.batch, H};
  for (Precision precision : test::kFloatPrecisions) {
    SCOPED_TRACE(m.op + " " + m.direction + " layout " + std::to_string(m.layout) + " " + toString(precision));
    ModelBuilder mb(14);
    std::map<std::string, HostTensor> inputs{{"x", test::randomFloats(xDims, 51)}};
    mb.input("x", kFloat, xDims);
    auto tensor = [&](const std::string& name, const std::vector<int64_t>& dims, uint32_t seed, bool asInput) {
      HostTensor value = test::randomFloats(dims, seed, -0.5f, 0.5f);
      if (asInput) {
        mb.input(name, kFloat, dims);
        inputs.emplace(name, value);
      } else {
        mb.initializer(name, value);
      }
      return name;
    };
    std::vector<std::string> in{"x", tensor("w", {D, G * H, m.inputSize}, 52, m.weightsAsInputs),
                                tensor("r", {D, G * H, H}, 53, m.weightsAsInputs)};
    in.push_back(m.bias || m.lengths || m.initial || m.peephole ? tensor("b", {D, 2 * G * H}, 54, m.weightsAsInputs) : "");
    if (m.lengths) {
      mb.input("lengths", kInt32, {m.batch});
      std::vector<int64_t> lengths;
      for (int64_t b = 0; b < m.batch; ++b) lengths.push_back((b * 2 + 1) % (m.steps + 1));
      inputs.emplace("lengths", test::int32s({m.batch}, lengths));
    }
    in.push_back(m.lengths ? "lengths" : "");
    in.push_back(m.initial || m.peephole ? tensor("h0", stateDims, 55, true) : "");
    if (m.op == "LSTM") {
      in.push_back(m.initial || m.peephole ? tensor("c0", stateDims, 56, true) : "");
      in.push_back(m.peephole ? tensor("p", {D, 3 * H}, 57, m.weightsAsInputs) : "");
    }
    while (!in.empty() && in.back().empty()) in.pop_back();
    std::vector<std::string> out{"y", "y_h"};
    if (m.op == "LSTM") out.push_back("y_c");
    for (const auto& o : out) mb.output(o);
    auto& node = mb.node(m.op, in, out, "recurrent");
    ModelBuilder::setInt(node, "hidden_size", H);
    ModelBuilder::setString(node, "direction", m.direction);
    if (m.layout) ModelBuilder::setInt(node, "layout", m.layout);
    if (m.clip > 0) ModelBuilder::setFloat(node, "clip", m.clip);
    if (m.linearBeforeReset) ModelBuilder::setInt(node, "linear_before_reset", 1);
    if (!m.activations.empty()) {
      test::setStrings(node, "activations", m.activations);
      test::setFloats(node, "activation_alpha", {0.3f, 0.6f});
      test::setFloats(node, "activation_beta", {0.4f});
    }
    const auto agreement = test::expectBackendsAgree(mb.bytes(), inputs, precision);
    EXPECT_NE(agreement.gpuLayerOfType(m.op), nullptr);
  }
}

TEST(RecurrentAgreement, Rnn) {
  KILN_REQUIRE_CUDA_BACKEND();
  expectAgreement({"RNN", 5, 3, 3, 7});
  expectAgreement({"RNN", 3, 1, 2, 4, "reverse", 1, true, false, true, false, true});
  expectAgreement({"RNN", 4, 3, 5, 9, "bidirectional", 0, true, true, true, false, false, 0.8f, 0, {"Relu", "Tanh"}});
}

TEST(RecurrentAgreement, Gru) {
  KILN_REQUIRE_CUDA_BACKEND();
  expectAgreement({"GRU", 3, 3, 3, 5, "forward", 0, true, false, false, false, true});
  expectAgreement({"GRU", 4, 3, 2, 6, "bidirectional", 0, true, true, true, false, false, 0, 1});
  expectAgreement({"GRU", 3, 1, 3, 7, "forward", 1, true, false, true, false, false, 1.2f, 0,
                   {"HardSigmoid", "LeakyRelu"}});
}

TEST(RecurrentAgreement, Lstm) {
  KILN_REQUIRE_CUDA_BACKEND();
  expectAgreement({"LSTM", 3, 3, 2, 3});
  expectAgreement({"LSTM", 4, 2, 4, 3, "forward", 0, true, true, true, true, true});
  expectAgreement({"LSTM", 3, 3, 3, 11, "bidirectional", 1, true, true, true, true, false, 2.0f});
  expectAgreement({"LSTM", 2, 1, 33, 65, "reverse", 0, true, false, false, false, false, 0, 0,
                   {"Sigmoid", "Tanh", "Softsign"}});
}

}  // namespace
