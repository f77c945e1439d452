// RNN, GRU and LSTM on the CPU reference backend against a naive step loop written here from the
// ONNX equations (double precision, one batch entry and one gate at a time).
#include <kiln/error.h>
#include <kiln/onnx_importer.h>
#include <kiln/reference_executor.h>

#include "common/test_models.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

using namespace kiln;
using kiln::test::ModelBuilder;
using kiln::test::randomFloats;

namespace {

struct Activation {
  std::string name;
  double alpha = 0, beta = 0;
  double operator()(double x) const {
    if (name == "Sigmoid") return 1 / (1 + std::exp(-x));
    if (name == "Tanh") return std::tanh(x);
    if (name == "Relu") return std::max(x, 0.0);
    if (name == "LeakyRelu") return x >= 0 ? x : alpha * x;
    if (name == "HardSigmoid") return std::clamp(alpha * x + beta, 0.0, 1.0);
    if (name == "ScaledTanh") return alpha * std::tanh(beta * x);
    ADD_FAILURE() << "the test reference lacks activation " << name;
    return 0;
  }
};

struct Case {
  std::string op;  // RNN, GRU, LSTM
  int64_t steps = 4, batch = 3, inputSize = 5, hidden = 4;
  std::string direction = "forward";
  bool batchMajor = false;
  bool bias = false, lengths = false, initial = false, peephole = false;
  bool linearBeforeReset = false, inputForget = false;
  float clip = 0;
  std::vector<Activation> activations;  // per direction, all directions; empty: ONNX defaults

  int64_t directions() const { return direction == "bidirectional" ? 2 : 1; }
  int64_t gates() const { return op == "RNN" ? 1 : op == "GRU" ? 3 : 4; }
  std::vector<Activation> resolvedActivations() const {
    if (!activations.empty()) return activations;
    std::vector<Activation> one = op == "RNN" ? std::vector<Activation>{{"Tanh"}}
                                  : op == "GRU" ? std::vector<Activation>{{"Sigmoid"}, {"Tanh"}}
                                                : std::vector<Activation>{{"Sigmoid"}, {"Tanh"}, {"Tanh"}};
    std::vector<Activation> all = one;
    if (directions() == 2) all.insert(all.end(), one.begin(), one.end());
    return all;
  }
};

struct Inputs {
  HostTensor x, w, r, b, lengths, h0, c0, p;  // x, h0, c0 in the case's layout
};

struct Outputs {
  std::vector<double> y, yh, yc;  // layout 0: [steps, dirs, batch, hidden] and [dirs, batch, hidden]
};

double at(const HostTensor& t, int64_t i) { return t.data<float>()[i]; }

// Element offsets of x[t, b, :] and state[d, b, :] in the case's layout.
int64_t xOffset(const Case& c, int64_t t, int64_t b) {
  return (c.batchMajor ? b * c.steps + t : t * c.batch + b) * c.inputSize;
}
int64_t stateOffset(const Case& c, int64_t d, int64_t b) {
  return (c.batchMajor ? b * c.directions() + d : d * c.batch + b) * c.hidden;
}

Outputs naive(const Case& c, const Inputs& in) {
  const int64_t D = c.directions(), H = c.hidden, G = c.gates(), I = c.inputSize;
  auto acts = c.resolvedActivations();
  size_t perDirection = acts.size() / size_t(D);
  Outputs out;
  out.y.assign(size_t(c.steps * D * c.batch * H), 0.0);
  out.yh.assign(size_t(D * c.batch * H), 0.0);
  out.yc = out.yh;
  auto clip = [&](double v) { return c.clip > 0 ? std::clamp(v, -double(c.clip), double(c.clip)) : v; };
  for (int64_t d = 0; d < D; ++d) {
    const Activation& f = acts[size_t(d) * perDirection];
    const Activation& g = acts[std::min(size_t(d) * perDirection + 1, acts.size() - 1)];
    const Activation& hAct = acts[std::min(size_t(d) * perDirection + 2, acts.size() - 1)];
    bool reverse = c.direction == "reverse" || d == 1;
    for (int64_t b = 0; b < c.batch; ++b) {
      int64_t length = c.lengths ? in.lengths.data<int32_t>()[b] : c.steps;
      std::vector<double> h(size_t(H), 0.0), cell(size_t(H), 0.0);
      for (int64_t j = 0; j < H && c.initial; ++j) {
        h[size_t(j)] = at(in.h0, stateOffset(c, d, b) + j);
        if (c.op == "LSTM") cell[size_t(j)] = at(in.c0, stateOffset(c, d, b) + j);
      }
      for (int64_t s = 0; s < length; ++s) {
        int64_t t = reverse ? length - 1 - s : s;
        // xw[k] = W_k·x_t + Wb_k, hr[k] = R_k·h + Rb_k for every gate row k.
        std::vector<double> xw(size_t(G * H)), hr(size_t(G * H));
        for (int64_t k = 0; k < G * H; ++k) {
          double sx = c.bias ? at(in.b, d * 2 * G * H + k) : 0.0, sh = c.bias ? at(in.b, d * 2 * G * H + G * H + k) : 0.0;
          for (int64_t i = 0; i < I; ++i) sx += at(in.w, (d * G * H + k) * I + i) * at(in.x, xOffset(c, t, b) + i);
          for (int64_t i = 0; i < H; ++i) sh += at(in.r, (d * G * H + k) * H + i) * h[size_t(i)];
          xw[size_t(k)] = sx;
          hr[size_t(k)] = sh;
        }
        std::vector<double> next(static_cast<size_t>(H));
        for (int64_t j = 0; j < H; ++j) {
          auto gate = [&](int64_t k) { return xw[size_t(k * H + j)] + hr[size_t(k * H + j)]; };
          auto peep = [&](int64_t k) { return c.peephole ? at(in.p, d * 3 * H + k * H + j) : 0.0; };
          if (c.op == "RNN") {
            next[size_t(j)] = f(clip(gate(0)));
          } else if (c.op == "GRU") {
            double z = f(clip(gate(0))), r = f(clip(gate(1)));
            double candidate;
            if (c.linearBeforeReset) {
              candidate = g(clip(xw[size_t(2 * H + j)] + r * hr[size_t(2 * H + j)]));
            } else {  // (r ⊙ h)·Rh + Rbh
              double rh = c.bias ? at(in.b, d * 2 * G * H + G * H + 2 * H + j) : 0.0;
              for (int64_t i = 0; i < H; ++i) {
                double ri = f(clip(xw[size_t(H + i)] + hr[size_t(H + i)]));
                rh += at(in.r, (d * G * H + 2 * H + j) * H + i) * ri * h[size_t(i)];
              }
              candidate = g(clip(xw[size_t(2 * H + j)] + rh));
            }
            next[size_t(j)] = (1 - z) * candidate + z * h[size_t(j)];
          } else {  // LSTM, gates i, o, f, c
            double ig = f(clip(gate(0) + peep(0) * cell[size_t(j)]));
            double fg = c.inputForget ? 1 - ig : f(clip(gate(2) + peep(2) * cell[size_t(j)]));
            double cc = g(clip(gate(3)));
            cell[size_t(j)] = fg * cell[size_t(j)] + ig * cc;
            double og = f(clip(gate(1) + peep(1) * cell[size_t(j)]));
            next[size_t(j)] = og * hAct(cell[size_t(j)]);
          }
        }
        h = next;
        for (int64_t j = 0; j < H; ++j) out.y[size_t(((t * D + d) * c.batch + b) * H + j)] = h[size_t(j)];
      }
      for (int64_t j = 0; j < H; ++j) {
        out.yh[size_t((d * c.batch + b) * H + j)] = h[size_t(j)];
        out.yc[size_t((d * c.batch + b) * H + j)] = cell[size_t(j)];
      }
    }
  }
  return out;
}

Inputs randomInputs(const Case& c, uint32_t seed) {
  const int64_t D = c.directions(), G = c.gates(), H = c.hidden;
  Inputs in;
  in.x = randomFloats(c.batchMajor ? std::vector<int64_t>{c.batch, c.steps, c.inputSize}
                                   : std::vector<int64_t>{c.steps, c.batch, c.inputSize}, seed);
  in.w = randomFloats({D, G * H, c.inputSize}, seed + 1, -0.7f, 0.7f);
  in.r = randomFloats({D, G * H, H}, seed + 2, -0.7f, 0.7f);
  in.b = randomFloats({D, 2 * G * H}, seed + 3);
  std::vector<int32_t> lengths(size_t(c.batch));
  for (int64_t b = 0; b < c.batch; ++b) lengths[size_t(b)] = int32_t(c.steps - b % c.steps);  // full, then shorter
  in.lengths = HostTensor::fromVector<int32_t>({c.batch}, lengths);
  std::vector<int64_t> stateDims = c.batchMajor ? std::vector<int64_t>{c.batch, D, H} : std::vector<int64_t>{D, c.batch, H};
  in.h0 = randomFloats(stateDims, seed + 4);
  in.c0 = randomFloats(stateDims, seed + 5);
  in.p = randomFloats({D, 3 * H}, seed + 6);
  return in;
}

void addStrings(onnx::NodeProto& n, const std::string& name, const std::vector<std::string>& values) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRINGS);
  for (const auto& v : values) a->add_strings(v);
}

void addFloats(onnx::NodeProto& n, const std::string& name, const std::vector<float>& values) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOATS);
  for (float v : values) a->add_floats(v);
}

ModelBuilder buildModel(const Case& c, const Inputs& in) {
  constexpr int32_t kFloat = onnx::TensorProto::FLOAT;
  ModelBuilder mb(14);
  mb.input("X", kFloat, in.x.dims()).input("W", kFloat, in.w.dims()).input("R", kFloat, in.r.dims());
  std::vector<std::string> inputs{"X", "W", "R", "", "", "", "", ""};
  auto optional = [&](bool used, size_t slot, const std::string& name, int32_t type, const HostTensor& t) {
    if (!used) return;
    mb.input(name, type, t.dims());
    inputs[slot] = name;
  };
  optional(c.bias, 3, "B", kFloat, in.b);
  optional(c.lengths, 4, "lengths", onnx::TensorProto::INT32, in.lengths);
  optional(c.initial, 5, "h0", kFloat, in.h0);
  optional(c.initial && c.op == "LSTM", 6, "c0", kFloat, in.c0);
  optional(c.peephole, 7, "P", kFloat, in.p);
  inputs.resize(c.op == "LSTM" ? 8 : 6);
  while (!inputs.empty() && inputs.back().empty()) inputs.pop_back();
  std::vector<std::string> outputs{"Y", "Y_h"};
  if (c.op == "LSTM") outputs.push_back("Y_c");
  auto& node = mb.node(c.op, inputs, outputs, "recurrent0");
  ModelBuilder::setInt(node, "hidden_size", c.hidden);
  ModelBuilder::setString(node, "direction", c.direction);
  if (c.batchMajor) ModelBuilder::setInt(node, "layout", 1);
  if (c.linearBeforeReset) ModelBuilder::setInt(node, "linear_before_reset", 1);
  if (c.inputForget) ModelBuilder::setInt(node, "input_forget", 1);
  if (c.clip > 0) ModelBuilder::setFloat(node, "clip", c.clip);
  if (!c.activations.empty()) {
    std::vector<std::string> names;
    std::vector<float> alphas, betas;
    for (const auto& a : c.activations) {
      names.push_back(a.name);
      if (a.name == "LeakyRelu" || a.name == "HardSigmoid" || a.name == "ScaledTanh") alphas.push_back(float(a.alpha));
      if (a.name == "HardSigmoid" || a.name == "ScaledTanh") betas.push_back(float(a.beta));
    }
    addStrings(node, "activations", names);
    if (!alphas.empty()) addFloats(node, "activation_alpha", alphas);
    if (!betas.empty()) addFloats(node, "activation_beta", betas);
  }
  for (const auto& o : outputs) mb.output(o);
  return mb;
}

void expectClose(const HostTensor& actual, const std::vector<double>& expected, const std::string& what) {
  ASSERT_EQ(actual.elementCount(), int64_t(expected.size())) << what;
  for (size_t i = 0; i < expected.size(); ++i)
    ASSERT_NEAR(actual.data<float>()[i], expected[i], 2e-4) << what << " element " << i;
}

// Layout-0 reference values reordered to the case's layout.
std::vector<double> inLayout(const Case& c, const std::vector<double>& layout0, bool sequence) {
  if (!c.batchMajor) return layout0;
  const int64_t D = c.directions(), H = c.hidden, T = sequence ? c.steps : 1;
  std::vector<double> out(layout0.size());
  for (int64_t t = 0; t < T; ++t)
    for (int64_t d = 0; d < D; ++d)
      for (int64_t b = 0; b < c.batch; ++b)
        for (int64_t j = 0; j < H; ++j)
          out[size_t(((b * T + t) * D + d) * H + j)] = layout0[size_t(((t * D + d) * c.batch + b) * H + j)];
  return out;
}

void checkAgainstNaive(const Case& c, uint32_t seed) {
  Inputs in = randomInputs(c, seed);
  ValueMap feeds{{"X", in.x}, {"W", in.w}, {"R", in.r}};
  if (c.bias) feeds["B"] = in.b;
  if (c.lengths) feeds["lengths"] = in.lengths;
  if (c.initial) feeds["h0"] = in.h0;
  if (c.initial && c.op == "LSTM") feeds["c0"] = in.c0;
  if (c.peephole) feeds["P"] = in.p;
  auto out = ReferenceExecutor(OnnxImporter().importBytes(buildModel(c, in).bytes())).run(feeds);
  Outputs expected = naive(c, in);
  expectClose(out.at("Y").tensor, inLayout(c, expected.y, true), "Y");
  expectClose(out.at("Y_h").tensor, inLayout(c, expected.yh, false), "Y_h");
  if (c.op == "LSTM") expectClose(out.at("Y_c").tensor, inLayout(c, expected.yc, false), "Y_c");
}

TEST(Recurrent, LstmBidirectionalWithEverything) {
  Case c{.op = "LSTM", .direction = "bidirectional", .bias = true, .lengths = true, .initial = true, .peephole = true};
  checkAgainstNaive(c, 100);
}

TEST(Recurrent, LstmBatchMajorCoupledGatesClipAndCustomActivations) {
  Case c{.op = "LSTM", .direction = "reverse", .batchMajor = true, .bias = true, .initial = true, .inputForget = true,
         .clip = 0.8f, .activations = {{"HardSigmoid", 0.3, 0.4}, {"ScaledTanh", 1.5, 0.7}, {"Tanh"}}};
  checkAgainstNaive(c, 200);
}

TEST(Recurrent, GruResetAfterAndBeforeTheRecurrentProduct) {
  for (bool linearBeforeReset : {false, true}) {
    Case c{.op = "GRU", .direction = "bidirectional", .bias = true, .lengths = true, .initial = true,
           .linearBeforeReset = linearBeforeReset};
    SCOPED_TRACE(linearBeforeReset ? "linear_before_reset=1" : "linear_before_reset=0");
    checkAgainstNaive(c, 300);
  }
}

TEST(Recurrent, GruBatchMajorReverse) {
  checkAgainstNaive(Case{.op = "GRU", .direction = "reverse", .batchMajor = true, .lengths = true}, 400);
}

TEST(Recurrent, RnnWithPerDirectionActivations) {
  Case c{.op = "RNN", .direction = "bidirectional", .bias = true, .lengths = true, .initial = true,
         .activations = {{"LeakyRelu", 0.1}, {"Tanh"}}};
  checkAgainstNaive(c, 500);
}

void expectImportErrorNamingNode(const ModelBuilder& mb) {
  try {
    OnnxImporter().importBytes(mb.bytes());
    FAIL() << "expected an import error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("recurrent0"), std::string::npos) << e.what();
  }
}

TEST(Recurrent, UnknownDirectionFailsNamingTheNode) {
  Case c{.op = "LSTM", .direction = "sideways"};
  expectImportErrorNamingNode(buildModel(c, randomInputs(Case{.op = "LSTM"}, 1)));
}

TEST(Recurrent, WeightsOfTheWrongShapeFailNamingTheNode) {
  Case c{.op = "GRU"};
  Inputs in = randomInputs(c, 2);
  in.w = randomFloats({1, 2 * c.hidden, c.inputSize}, 3);  // GRU needs 3 gates
  expectImportErrorNamingNode(buildModel(c, in));
}

}  // namespace
