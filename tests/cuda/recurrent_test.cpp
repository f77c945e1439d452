// The CUDA recurrent time loop (kernels/cuda/recurrent) against the CPU kernel (kernels/cpu/rnn):
// RNN, GRU (both reset placements) and LSTM (peepholes, coupled input-forget), forward, reverse
// and bidirectional, both layouts, clip, sequence lengths, initial states and non-default
// activations, in float32 and float16 storage. The input projection the step gets from cuBLASLt
// is computed here on the host.
#include "cuda/layout_test_support.h"

#include <kernels/cpu/rnn/recurrent.h>
#include <kernels/cuda/recurrent/recurrent.h>

#include <random>

using namespace kiln::kernels::cuda;
using namespace kiln::test;
namespace cpu = kiln::kernels;

namespace {

struct RecurrentCase {
  std::string name;
  cpu::RecurrentCell cell;
  int64_t steps, batch, inputSize, hidden;
  int directions = 1;
  bool reverse = false, batchMajor = false;
  float clip = 0.0f;
  bool linearBeforeReset = false, inputForget = false;
  bool bias = false, peephole = false, lengths = false, initial = false, yOut = true;
  std::vector<std::string> activations = {};  // per direction, empty: the defaults
};

std::vector<std::string> defaultActivations(cpu::RecurrentCell cell) {
  if (cell == cpu::RecurrentCell::kRnn) return {"Tanh"};
  if (cell == cpu::RecurrentCell::kGru) return {"Sigmoid", "Tanh"};
  return {"Sigmoid", "Tanh", "Tanh"};
}

// Values in [-scale, scale] rounded to `type`.
std::vector<double> randomIn(int64_t n, double scale, uint32_t seed, ElementType type) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-scale, scale);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) x = dist(rng);
  return valuesOf(fromValues(v, type), type);
}

std::vector<float> floats(const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); }

void runCase(const RecurrentCase& c, ElementType type) {
  SCOPED_TRACE(c.name + (type == ElementType::kFloat16 ? " fp16" : " fp32"));
  const int64_t D = c.directions, S = c.steps, B = c.batch, I = c.inputSize, H = c.hidden;
  const int64_t G = cpu::gateCount(c.cell), GH = G * H;
  const auto x = randomIn(S * B * I, 1.0, 1, type), w = randomIn(D * GH * I, 0.6, 2, type);
  const auto r = randomIn(D * GH * H, 0.6, 3, type), bias = randomIn(D * 2 * GH, 0.5, 4, type);
  const auto p = randomIn(D * 3 * H, 0.5, 5, type), h0 = randomIn(D * B * H, 0.8, 6, type);
  const auto c0 = randomIn(D * B * H, 0.8, 7, type);
  std::vector<int32_t> lengths(static_cast<size_t>(B), int32_t(S));
  if (c.lengths)
    for (int64_t b = 0; b < B; ++b) lengths[size_t(b)] = int32_t((b * 3 + 1) % (S + 1));

  std::vector<std::string> names;
  for (int64_t d = 0; d < D; ++d) {
    const auto one = c.activations.empty() ? defaultActivations(c.cell) : c.activations;
    names.insert(names.end(), one.begin(), one.end());
  }
  std::vector<cpu::RecurrentActivation> resolved;
  ASSERT_EQ(cpu::resolveRecurrentActivations(names, {0.3f, 0.7f}, {0.4f}, resolved), "");
  const size_t perDirection = resolved.size() / size_t(D);

  // The CPU reference, direction by direction (as backends/cpu/ops/recurrent.cpp calls it).
  const auto xf = floats(x), wf = floats(w), rf = floats(r), bf = floats(bias), pf = floats(p);
  const auto h0f = floats(h0), c0f = floats(c0);
  std::vector<float> y(size_t(S * D * B * H), 0.0f), yh(size_t(D * B * H), 0.0f), yc(size_t(D * B * H), 0.0f);
  for (int64_t d = 0; d < D; ++d) {
    cpu::RecurrentConfig config;
    config.cell = c.cell;
    config.steps = S, config.batch = B, config.inputSize = I, config.hidden = H;
    config.reverse = c.reverse || d == 1;
    config.batchMajor = c.batchMajor;
    config.clip = c.clip;
    config.linearBeforeReset = c.linearBeforeReset;
    config.inputForget = c.inputForget;
    config.f = resolved[size_t(d) * perDirection];
    if (perDirection > 1) config.g = resolved[size_t(d) * perDirection + 1];
    if (perDirection > 2) config.h = resolved[size_t(d) * perDirection + 2];
    cpu::RecurrentTensors t;
    t.x = xf.data();
    t.w = wf.data() + d * GH * I;
    t.r = rf.data() + d * GH * H;
    t.bias = c.bias ? bf.data() + d * 2 * GH : nullptr;
    t.peephole = c.peephole ? pf.data() + d * 3 * H : nullptr;
    t.lengths = c.lengths ? lengths.data() : nullptr;
    const int64_t stateOffset = c.batchMajor ? d * H : d * B * H;
    t.stateStride = c.batchMajor ? D * H : H;
    t.initialH = c.initial ? h0f.data() + stateOffset : nullptr;
    t.initialC = c.initial ? c0f.data() + stateOffset : nullptr;
    t.finalH = yh.data() + stateOffset;
    t.finalC = yc.data() + stateOffset;
    t.y = y.data() + (c.batchMajor ? d * H : d * B * H);
    t.yStepStride = c.batchMajor ? D * H : D * B * H;
    t.yBatchStride = c.batchMajor ? S * D * H : H;
    cpu::runRecurrentDirection(config, t);
  }

  // X·Wᵀ per direction, rows in x's order, as the step's GEMM writes it.
  std::vector<float> projected(size_t(D * S * B * GH));
  for (int64_t d = 0; d < D; ++d)
    for (int64_t row = 0; row < S * B; ++row)
      for (int64_t j = 0; j < GH; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < I; ++k) acc += x[size_t(row * I + k)] * w[size_t((d * GH + j) * I + k)];
        projected[size_t((d * S * B + row) * GH + j)] = float(acc);
      }

  DeviceBuffer dProjected(projected), dR(fromValues(r, type)), dBias(fromValues(bias, type));
  DeviceBuffer dP(fromValues(p, type)), dH0(fromValues(h0, type)), dC0(fromValues(c0, type)), dLengths(lengths);
  DeviceBuffer dY(byteSize(type, S * D * B * H)), dYh(byteSize(type, D * B * H)), dYc(byteSize(type, D * B * H));
  dY.fill(0);  // the step zeroes Y: steps past a length are not written
  RecurrentShape shape;
  shape.cell = c.cell == cpu::RecurrentCell::kRnn   ? RecurrentCellKind::kRnn
               : c.cell == cpu::RecurrentCell::kGru ? RecurrentCellKind::kGru
                                                    : RecurrentCellKind::kLstm;
  shape.steps = S, shape.batch = B, shape.hidden = H, shape.directions = int(D);
  shape.reverse = c.reverse, shape.batchMajor = c.batchMajor, shape.clip = c.clip;
  shape.linearBeforeReset = c.linearBeforeReset, shape.inputForget = c.inputForget;
  for (int64_t d = 0; d < D; ++d)
    for (size_t f = 0; f < perDirection; ++f) shape.activations[d][f] = resolved[size_t(d) * perDirection + f];
  RecurrentTensorsDevice t;
  t.projected = dProjected.as<float>();
  t.r = dR.get();
  t.bias = c.bias ? dBias.get() : nullptr;
  t.peephole = c.peephole ? dP.get() : nullptr;
  t.lengths = c.lengths ? dLengths.as<int32_t>() : nullptr;
  t.initialH = c.initial ? dH0.get() : nullptr;
  t.initialC = c.initial ? dC0.get() : nullptr;
  t.finalH = dYh.get();
  t.finalC = c.cell == cpu::RecurrentCell::kLstm ? dYc.get() : nullptr;
  t.y = c.yOut ? dY.get() : nullptr;
  KILN_CUDA_OK(recurrentSequence(shape, t, type, nullptr));
  const double tolerance = type == ElementType::kFloat16 ? 3e-3 : 2e-5;
  auto doubles = [](const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); };
  if (c.yOut) EXPECT_TRUE(closeValues(valuesOf(dY.download(), type), doubles(y), tolerance)) << "Y";
  EXPECT_TRUE(closeValues(valuesOf(dYh.download(), type), doubles(yh), tolerance)) << "Y_h";
  if (c.cell == cpu::RecurrentCell::kLstm)
    EXPECT_TRUE(closeValues(valuesOf(dYc.download(), type), doubles(yc), tolerance)) << "Y_c";
}

using Cell = cpu::RecurrentCell;

const std::vector<RecurrentCase> kCases = {
    {"rnn forward", Cell::kRnn, 4, 3, 3, 5},
    {"rnn batch 1 reverse, bias, initial", Cell::kRnn, 5, 1, 2, 4, 1, true, false, 0, false, false, true, false, false,
     true},
    {"rnn bidirectional batch-major lengths relu clip", Cell::kRnn, 4, 3, 3, 5, 2, false, true, 0.9f, false, false, true,
     false, true, true, true, {"Relu"}},
    {"gru forward bias", Cell::kGru, 3, 3, 3, 5, 1, false, false, 0, false, false, true},
    {"gru linear-before-reset bidirectional lengths", Cell::kGru, 4, 3, 2, 6, 2, false, false, 0, true, false, true,
     false, true, true},
    {"gru batch-major hardsigmoid leakyrelu clip", Cell::kGru, 3, 2, 3, 7, 1, true, true, 0.8f, false, false, true,
     false, false, true, true, {"HardSigmoid", "LeakyRelu"}},
    {"lstm forward", Cell::kLstm, 3, 3, 2, 3},
    {"lstm peepholes lengths initial", Cell::kLstm, 4, 2, 4, 3, 1, false, false, 0, false, false, true, true, true,
     true},
    {"lstm bidirectional batch-major input-forget softsign", Cell::kLstm, 3, 3, 3, 7, 2, false, true, 1.5f, false, true,
     true, true, true, true, true, {"Sigmoid", "Tanh", "Softsign"}},
    {"lstm hidden 40 (several warps per gate)", Cell::kLstm, 2, 2, 5, 40, 1, false, false, 0, false, false, true, true},
    {"lstm no Y, zero steps", Cell::kLstm, 0, 2, 3, 3, 1, false, false, 0, false, false, true, false, false, true,
     false},
};

TEST(RecurrentKernel, MatchesTheCpuInEveryConfiguration) {
  KILN_REQUIRE_GPU();
  for (const RecurrentCase& c : kCases)
    for (ElementType type : {ElementType::kFloat32, ElementType::kFloat16}) runCase(c, type);
}

TEST(RecurrentKernel, RefusesStatesBeyondSharedMemory) {
  EXPECT_TRUE(recurrentFits(RecurrentCellKind::kLstm, 1024));
  EXPECT_FALSE(recurrentFits(RecurrentCellKind::kLstm, 4096));
  RecurrentShape shape;
  shape.cell = RecurrentCellKind::kLstm;
  shape.hidden = 4096;
  shape.batch = 1;
  EXPECT_EQ(recurrentSequence(shape, {}, ElementType::kFloat32, nullptr), cudaErrorInvalidValue);
}

}  // namespace
