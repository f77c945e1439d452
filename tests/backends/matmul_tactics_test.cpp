// The CPU matrix-product tactics (cpu.matmul.blas, cpu.matmul.onednn) through the Backend interface,
// on random data: MatMul, Gemm and kiln.FusedMatMul over both, each offered tactic against a
// double-precision product written here; products the tactics do not take keep the op's kernel.
#include <kiln/error.h>

#include "common/step_harness.h"
#include "backends/backend.h"
#include "common/test_models.h"
#include "ops/fused.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

using namespace kiln;

namespace {

struct Inputs {
  std::vector<Value> values;  // A, B, then bias / C, then residual as the layer has them
  LayerWeights constants;     // B and the bias when the case makes them constant
};

Layer matMulLayer(const std::string& opType) {
  Layer l;
  l.name = "product";
  l.opType = opType;
  l.opsetVersion = 17;
  l.inputs = {"a", "b"};
  l.outputs = {"y"};
  return l;
}

// opType's layer wrapped in kiln.FusedMatMul with an activation and a residual (input 3).
Layer fusedLayer(Layer base, const std::string& activation, bool residualFirst) {
  Layer l = base;
  l.domain = fused::kDomain;
  l.opType = fused::kFusedMatMul;
  l.attributes[fused::kBase] = base.opType;
  l.attributes[fused::kActivation] = activation;
  l.attributes[fused::kActivationAlpha] = 0.1f;
  l.attributes[fused::kActivationBeta] = 0.5f;
  l.attributes[fused::kResidualBeforeActivation] = int64_t(residualFirst);
  l.inputs.resize(3);
  l.inputs.push_back("residual");
  return l;
}

double activate(const std::string& name, double v) {
  if (name == "Relu") return std::max(0.0, v);
  if (name == "LeakyRelu") return v < 0 ? 0.1 * v : v;
  if (name == "Sigmoid") return 1 / (1 + std::exp(-v));
  if (name == "Gelu") return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
  if (name == "Tanh") return std::tanh(v);
  return v;
}

// A [m, k] (leading axes folded), B [k, n] or [n, k] when transB; bias (may be null) per column.
std::vector<double> product(const HostTensor& a, const HostTensor& b, bool transB, const HostTensor* bias) {
  const int64_t k = a.dims().back(), m = a.elementCount() / k, n = transB ? b.dim(0) : b.dim(1);
  std::vector<double> y(size_t(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = bias ? bias->data<float>()[j] : 0.0;
      for (int64_t p = 0; p < k; ++p)
        acc += double(a.data<float>()[i * k + p]) * b.data<float>()[transB ? j * k + p : p * n + j];
      y[size_t(i * n + j)] = acc;
    }
  return y;
}

// Runs every tactic the backend offers for `layer` and checks each against `want`.
std::set<std::string> expectEveryTacticGives(const Layer& layer, const Inputs& in, const std::vector<double>& want) {
  const auto backend = makeCpuBackend();
  auto stream = backend->createStream();
  LayerInputs described;
  std::vector<const Value*> inputs;
  for (const Value& v : in.values) {
    inputs.push_back(&v);
    described.types.push_back(v.tensor.dtype());
    described.dims.push_back(v.tensor.dims());
  }
  described.weights = in.constants;
  described.weights.resize(layer.inputs.size());
  std::set<std::string> offered;
  for (const Tactic& tactic : backend->tactics(layer, Precision::kFP32, described)) {
    offered.insert(tactic.id);
    SCOPED_TRACE(tactic.id);
    test::StandaloneStep step(*backend, layer, tactic, described.weights);
    EXPECT_EQ(step.workspaceBytes(inputs), tactic.workspaceBytes);
    auto outputs = step.enqueue(inputs, *stream);
    stream->synchronize();
    const HostTensor& y = outputs.at(0).tensor;
    EXPECT_EQ(y.elementCount(), int64_t(want.size()));
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_NEAR(y.data<float>()[i], want[i], 1e-4 * (1 + std::fabs(want[i]))) << "element " << i;
  }
  return offered;
}

const std::set<std::string> kBoth = {"cpu.matmul.blas", "cpu.matmul.onednn"};

TEST(MatMulTactics, MatMulWith2dAnd3dActivations) {
  for (const std::vector<int64_t>& aDims : {std::vector<int64_t>{7, 24}, {2, 5, 24}, {1, 33, 24}}) {
    SCOPED_TRACE(std::to_string(aDims.size()) + "-D A");
    const HostTensor a = test::randomFloats(aDims, 1), b = test::randomFloats({24, 40}, 2);
    for (bool constantB : {true, false}) {
      Inputs in{{Value(a), Value(b)}, {nullptr, constantB ? &b : nullptr}};
      EXPECT_EQ(expectEveryTacticGives(matMulLayer("MatMul"), in, product(a, b, false, nullptr)), kBoth);
    }
  }
}

TEST(MatMulTactics, GemmWithTransposedBAndBiasRow) {
  for (bool transB : {false, true})
    for (const std::vector<int64_t>& cDims : {std::vector<int64_t>{}, {19}, {1, 19}}) {
      SCOPED_TRACE(std::string(transB ? "transB" : "B") + ", C rank " + std::to_string(cDims.size()));
      Layer layer = matMulLayer("Gemm");
      layer.attributes["transB"] = int64_t(transB);
      const HostTensor a = test::randomFloats({9, 31}, 3), b = test::randomFloats(transB ? std::vector<int64_t>{19, 31} : std::vector<int64_t>{31, 19}, 4);
      const HostTensor c = test::randomFloats(cDims.empty() ? std::vector<int64_t>{19} : cDims, 5);
      Inputs in{{Value(a), Value(b)}, {nullptr, &b}};
      if (!cDims.empty()) {
        layer.inputs.push_back("c");
        in.values.push_back(Value(c));
        in.constants.push_back(&c);
      }
      EXPECT_EQ(expectEveryTacticGives(layer, in, product(a, b, transB, cDims.empty() ? nullptr : &c)), kBoth);
    }
}

TEST(MatMulTactics, FusedMatMulEveryActivationAroundTheResidual) {
  const HostTensor a = test::randomFloats({3, 6, 20}, 6), b = test::randomFloats({20, 36}, 7);
  const HostTensor bias = test::randomFloats({36}, 8), residual = test::randomFloats({3, 6, 36}, 9);
  const std::vector<double> linear = product(a, b, false, &bias);
  for (const std::string activation : {"Relu", "LeakyRelu", "Sigmoid", "Gelu", "Tanh"})
    for (bool residualFirst : {true, false}) {
      SCOPED_TRACE(activation + (residualFirst ? " after residual" : " before residual"));
      Layer layer = matMulLayer("MatMul");
      layer.inputs.push_back("bias");
      layer = fusedLayer(layer, activation, residualFirst);
      std::vector<double> want(linear.size());
      for (size_t i = 0; i < want.size(); ++i) {
        const double r = residual.data<float>()[i];
        want[i] = residualFirst ? activate(activation, linear[i] + r) : activate(activation, linear[i]) + r;
      }
      Inputs in{{Value(a), Value(b), Value(bias), Value(residual)}, {nullptr, &b, &bias}};
      EXPECT_EQ(expectEveryTacticGives(layer, in, want), kBoth);
    }
}

TEST(MatMulTactics, FusedGemmWithBias) {
  Layer gemm = matMulLayer("Gemm");
  gemm.attributes["transB"] = int64_t(1);
  gemm.inputs.push_back("c");
  const Layer layer = fusedLayer(gemm, "Relu", true);
  const HostTensor a = test::randomFloats({4, 16}, 10), b = test::randomFloats({12, 16}, 11);
  const HostTensor c = test::randomFloats({12}, 12), residual = test::randomFloats({4, 12}, 13);
  std::vector<double> want = product(a, b, true, &c);
  for (size_t i = 0; i < want.size(); ++i) want[i] = std::max(0.0, want[i] + residual.data<float>()[i]);
  Inputs in{{Value(a), Value(b), Value(c), Value(residual)}, {nullptr, &b, &c}};
  EXPECT_EQ(expectEveryTacticGives(layer, in, want), kBoth);
}

// Products outside the tactics' form keep the op's own kernel, alone.
TEST(MatMulTactics, OtherProductsKeepTheOpKernel) {
  const auto backend = makeCpuBackend();
  auto onlyCandidate = [&](const Layer& layer, LayerInputs in) {
    auto tactics = backend->tactics(layer, Precision::kFP32, in);
    return tactics.size() == 1 ? tactics[0].id : std::to_string(tactics.size()) + " candidates";
  };
  const LayerInputs twoByTwo{{DataType::kFloat32, DataType::kFloat32}, {{4, 8}, {8, 5}}, {}};
  LayerInputs batchedB = twoByTwo;
  batchedB.dims = {{2, 4, 8}, {2, 8, 5}};
  EXPECT_EQ(onlyCandidate(matMulLayer("MatMul"), batchedB), "cpu.matmul");
  LayerInputs doubles = twoByTwo;
  doubles.types = {DataType::kFloat64, DataType::kFloat64};
  EXPECT_EQ(onlyCandidate(matMulLayer("MatMul"), doubles), "cpu.matmul");
  Layer transA = matMulLayer("Gemm");
  transA.attributes["transA"] = int64_t(1);
  LayerInputs transposedA = twoByTwo;
  transposedA.dims = {{8, 4}, {8, 5}};
  EXPECT_EQ(onlyCandidate(transA, transposedA), "cpu.gemm");
  Layer scaled = matMulLayer("Gemm");
  scaled.attributes["alpha"] = 2.0f;
  EXPECT_EQ(onlyCandidate(scaled, twoByTwo), "cpu.gemm");
  Layer fullC = matMulLayer("Gemm");
  fullC.inputs.push_back("c");
  LayerInputs withFullC{{DataType::kFloat32, DataType::kFloat32, DataType::kFloat32}, {{4, 8}, {8, 5}, {4, 5}}, {}};
  EXPECT_EQ(onlyCandidate(fullC, withFullC), "cpu.gemm");
}

// One oneDNN step meets several row counts (a dynamic batch or sequence) with constant and run-time B.
TEST(MatMulTactics, OneDnnStepServesSeveralShapes) {
  const HostTensor b = test::randomFloats({32, 48}, 20);
  const Layer layer = matMulLayer("MatMul");  // outlives the step, which refers to it
  for (bool constantB : {true, false}) {
    SCOPED_TRACE(constantB ? "constant B" : "run-time B");
    const LayerWeights weights = {nullptr, constantB ? &b : nullptr};
    const auto backend = makeCpuBackend();
    test::StandaloneStep step(*backend, layer, Tactic{"cpu.matmul.onednn"}, weights);
    auto stream = makeCpuBackend()->createStream();
    uint32_t seed = 21;
    for (int round = 0; round < 2; ++round)
      for (int64_t rows : {1, 17, 128}) {
        const Value a(test::randomFloats({rows, 32}, ++seed)), bValue(b);
        auto outputs = step.enqueue({&a, &bValue}, *stream);
        stream->synchronize();
        const std::vector<double> want = product(a.tensor, b, false, nullptr);
        const HostTensor& y = outputs.at(0).tensor;
        ASSERT_EQ(y.dims(), (std::vector<int64_t>{rows, 48}));
        for (size_t i = 0; i < want.size(); ++i)
          ASSERT_NEAR(y.data<float>()[i], want[i], 1e-4 * (1 + std::fabs(want[i]))) << "rows " << rows << " element " << i;
      }
  }
}

}  // namespace
