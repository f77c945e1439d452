// The CUDA backend's MatMul / Gemm / kiln.FusedMatMul planning (backends/cuda/ops/matmul_plan.h)
// run with cuBLASLt's arithmetic emulated on its descriptors, against a direct computation of the
// ONNX semantics: every batch form (folded, strided with broadcast strides, looped), 1-D operands,
// K = 0, every Gemm C shape with transposes, alpha and beta, and each fused epilogue at both fusion
// levels. Also the tactic payload and precision helpers.
#include "backends/cuda/ops/matmul_plan.h"
#include "cuda_plans/library_emulation.h"

#include <kiln/shape.h>

#include <gtest/gtest.h>

#include <kiln/error.h>

#include <cmath>
#include <cstring>

using namespace kiln;
using namespace kiln::cuda;
using kiln::test::broadcastAt;
using kiln::test::countOf;

namespace {

struct Case {
  std::string op;  // "MatMul", "Gemm", "FusedMatMul:MatMul", "FusedMatMul:Gemm"
  std::vector<int64_t> a, b, c;
  bool hasC = false, cConstant = false;
  bool transA = false, transB = false;
  float alpha = 1, beta = 1;
  std::string activation;
  int residual = 0;  // 0 none, 1 before the activation, 2 after

  std::string describe() const {
    return op + " A " + dimsToString(a) + " B " + dimsToString(b) + (hasC ? " C " + dimsToString(c) : "") +
           (cConstant ? " (weight)" : "") + (transA ? " transA" : "") + (transB ? " transB" : "") + " alpha " +
           std::to_string(alpha) + " beta " + std::to_string(beta) + " " + activation + " residual " +
           std::to_string(residual);
  }
};

constexpr float kClipLow = -0.3f, kClipHigh = 0.4f;

float activate(const std::string& name, float x) {
  if (name == "Relu") return std::max(x, 0.0f);
  if (name == "GeluTanh") return test::geluTanh(x);
  if (name == "Sigmoid") return 1.0f / (1.0f + std::exp(-x));
  if (name == "Clip") return std::min(std::max(x, kClipLow), kClipHigh);
  return x;
}

Layer layerOf(const Case& c) {
  Layer layer;
  layer.name = "mm";
  layer.opsetVersion = 17;
  const bool fusedLayer = c.op.rfind("FusedMatMul", 0) == 0, gemm = c.op.find("Gemm") != std::string::npos;
  if (fusedLayer) {
    layer.domain = "kiln";
    layer.opType = "FusedMatMul";
    layer.attributes["base"] = std::string(gemm ? "Gemm" : "MatMul");
    if (!c.activation.empty()) layer.attributes["activation"] = c.activation;
    layer.attributes["activation_alpha"] = kClipLow;
    layer.attributes["activation_beta"] = kClipHigh;
    if (c.residual) layer.attributes["residual_before_activation"] = int64_t(c.residual == 1);
  } else {
    layer.opType = c.op;
  }
  if (gemm) {
    layer.attributes["transA"] = int64_t(c.transA);
    layer.attributes["transB"] = int64_t(c.transB);
    layer.attributes["alpha"] = c.alpha;
    layer.attributes["beta"] = c.beta;
  }
  layer.inputs = {"a", "b"};
  if (c.hasC) layer.inputs.push_back("c");
  if (c.residual) {
    layer.inputs.resize(3);
    layer.inputs.push_back("z");
  }
  layer.outputs = {"y"};
  return layer;
}

// What ONNX says the layer computes, directly.
std::vector<float> reference(const Case& c, const std::vector<int64_t>& outDims, const std::vector<float>& A,
                             const std::vector<float>& B, const std::vector<float>& C, const std::vector<float>& Z) {
  const bool fusedLayer = c.op.rfind("FusedMatMul", 0) == 0, gemm = c.op.find("Gemm") != std::string::npos;
  std::vector<int64_t> a = c.a, b = c.b;
  if (!gemm && a.size() == 1) a.insert(a.begin(), 1);
  if (!gemm && b.size() == 1) b.push_back(1);
  const int64_t M = gemm ? (c.transA ? a[1] : a[0]) : a[a.size() - 2];
  const int64_t K = gemm ? (c.transA ? a[0] : a[1]) : a.back();
  const int64_t N = gemm ? (c.transB ? b[0] : b[1]) : b.back();
  const std::vector<int64_t> aBatch(a.begin(), a.end() - 2), bBatch(b.begin(), b.end() - 2);
  std::vector<int64_t> batch;
  if (!gemm) {
    const size_t rank = std::max(aBatch.size(), bBatch.size());
    for (size_t i = 0; i < rank; ++i) {
      const int64_t da = i < rank - aBatch.size() ? 1 : aBatch[i - (rank - aBatch.size())];
      const int64_t db = i < rank - bBatch.size() ? 1 : bBatch[i - (rank - bBatch.size())];
      batch.push_back(std::max(da, db));
    }
  }
  // Matrix index of each operand for batch entry `index`: broadcastAt over a ramp of matrix numbers.
  auto matrices = [](const std::vector<int64_t>& dims) {
    std::vector<float> ramp(size_t(countOf(dims)));
    for (size_t i = 0; i < ramp.size(); ++i) ramp[i] = float(i);
    return ramp;
  };
  const std::vector<float> aMatrices = matrices(aBatch), bMatrices = matrices(bBatch);
  std::vector<float> y(size_t(countOf(outDims)));
  for (int64_t index = 0; index < countOf(batch); ++index) {
    const int64_t ao = int64_t(broadcastAt(aMatrices, aBatch, batch, index)) * M * K;
    const int64_t bo = int64_t(broadcastAt(bMatrices, bBatch, batch, index)) * K * N;
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double sum = 0;
        for (int64_t p = 0; p < K; ++p)
          sum += double(c.transA ? A[ao + p * M + i] : A[ao + i * K + p]) *
                 double(c.transB ? B[bo + j * K + p] : B[bo + p * N + j]);
        float v = float(c.alpha * sum);
        if (gemm && c.hasC && c.beta != 0) v += c.beta * broadcastAt(C, c.c, {M, N}, i * N + j);
        y[size_t(index * M * N + i * N + j)] = v;
      }
  }
  if (fusedLayer)
    for (int64_t i = 0; i < countOf(outDims); ++i) {
      float v = y[size_t(i)];
      if (!gemm && c.hasC) v += C[size_t(outDims.empty() ? 0 : i % outDims.back())];  // along the last dim
      if (c.residual == 1) v += Z[size_t(i)];
      v = activate(c.activation, v);
      if (c.residual == 2) v += Z[size_t(i)];
      y[size_t(i)] = v;
    }
  return y;
}

std::vector<int64_t> outputDims(const Case& c) {
  if (c.op.find("Gemm") != std::string::npos) return {c.transA ? c.a[1] : c.a[0], c.transB ? c.b[0] : c.b[1]};
  std::vector<int64_t> a = c.a, b = c.b;
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (b.size() == 1) b.push_back(1);
  std::vector<int64_t> out;
  const size_t rank = std::max(a.size(), b.size()) - 2;
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i + a.size() - 2 < rank ? 1 : a[i + a.size() - 2 - rank];
    const int64_t db = i + b.size() - 2 < rank ? 1 : b[i + b.size() - 2 - rank];
    out.push_back(std::max(da, db));
  }
  if (c.a.size() != 1) out.push_back(a[a.size() - 2]);
  if (c.b.size() != 1) out.push_back(b.back());
  return out;
}

// The step's launch (cuda_matmul.cpp's enqueue) with cuBLASLt and the elementwise kernels emulated.
void checkCase(const Case& c) {
  SCOPED_TRACE(c.describe());
  const Layer layer = layerOf(c);
  const std::vector<int64_t> outDims = outputDims(c);
  LayerShapes dims{c.a, c.b};
  if (c.hasC) dims.push_back(c.c);
  if (c.residual) {
    dims.resize(3);
    dims.push_back(outDims);
  }
  const auto A = test::randomValues(countOf(c.a), 1), B = test::randomValues(countOf(c.b), 2);
  const auto C = test::randomValues(c.hasC ? countOf(c.c) : 1, 3), Z = test::randomValues(countOf(outDims), 4);
  const std::vector<float> want = reference(c, outDims, A, B, C, Z);
  const MatMulSpec spec = matMulSpecOf(layer, Precision::kFP32, DataType::kFloat32, c.cConstant);
  const Geometry g = productGeometryOf(layer, spec, dims);
  ASSERT_EQ(g.outputElements, countOf(outDims));
  for (int level = 0; level < 2; ++level) {
    SCOPED_TRACE("fusion level " + std::to_string(level));
    const bool zeroK = g.k == 0;
    const Fusion f = fusionOf(spec, g, level, zeroK);
    std::vector<float> y(size_t(countOf(outDims)), 1e30f);  // what the arena held before
    if (spec.gemm && (g.c == CRole::kBroadcast || (zeroK && g.c != CRole::kNone)))
      for (int64_t i = 0; i < countOf(outDims); ++i) y[size_t(i)] = spec.beta * broadcastAt(C, g.cDims, outDims, i);
    else if (zeroK)
      std::fill(y.begin(), y.end(), 0.0f);
    if (!zeroK) {
      const LtGemm gemm(gemmShapeOf(spec, g, f));
      const float* cOperand = y.data();
      float beta = 0;
      if (g.c == CRole::kOperand) cOperand = C.data(), beta = spec.beta;
      else if (g.c == CRole::kBroadcast) beta = 1;
      else if (f.residualInC) cOperand = Z.data(), beta = 1;
      const float* bias = gemm.shape().hasBias() ? C.data() : nullptr;
      for (const Offsets& o : g.outer)
        test::emulateLtMatmul(gemm, spec.alpha, A.data() + o.a, B.data() + o.b, beta, cOperand + o.y, y.data() + o.y,
                              bias);
    }
    for (int64_t i = 0; i < countOf(outDims); ++i) {
      float v = y[size_t(i)];
      if (f.elementwiseBias) v += broadcastAt(C, g.cDims, outDims, i);
      if (f.elementwiseResidualBefore) v += Z[size_t(i)];
      if (f.elementwiseActivation) v = activate(c.activation, v);
      if (f.elementwiseResidualAfter) v += Z[size_t(i)];
      y[size_t(i)] = v;
    }
    double worst = 0;
    for (size_t i = 0; i < y.size(); ++i) worst = std::max(worst, double(std::fabs(y[i] - want[i])));
    EXPECT_LE(worst, 1e-4) << "batch " << g.batch << ", " << g.outer.size() << " strided batches, m " << g.m;
  }
}

const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> kMatMulShapes = {
    {{3, 5}, {5, 7}},
    {{1, 17, 33}, {33, 19}},
    {{2, 3, 5}, {2, 5, 7}},
    {{4, 1, 9}, {1, 9, 6}},
    {{3, 9}, {4, 9, 6}},
    {{2, 1, 3, 5}, {4, 5, 7}},
    {{1, 4, 3, 5}, {2, 1, 5, 7}},
    {{2, 3, 4, 6, 5}, {3, 1, 5, 7}},
    {{5}, {5, 7}},
    {{2, 3, 5}, {5}},
    {{5}, {5}},
    {{3, 1, 5}, {5}},
    {{2, 5}, {3, 5, 1}},
    {{1, 1, 64}, {64, 40}},
    {{6, 40, 24}, {6, 24, 1}},
    {{2, 3, 0}, {0, 4}},
    {{3, 2, 4, 5}, {3, 1, 5, 2}},
    {{2, 3, 4, 5}, {1, 3, 5, 2}},
    {{5}, {2, 3, 5, 4}},
    {{2, 1, 4, 5}, {2, 3, 5, 6}},
};

TEST(MatMulPlan, EveryBatchFormAndOneDimOperands) {
  for (const auto& [a, b] : kMatMulShapes) checkCase({"MatMul", a, b});
}

TEST(MatMulPlan, BatchFormsFoldStrideAndLoop) {
  const Layer layer = layerOf({"MatMul", {}, {}});
  const MatMulSpec spec = matMulSpecOf(layer, Precision::kFP32, DataType::kFloat32, false);
  const Geometry folded = productGeometryOf(layer, spec, {{2, 3, 5}, {5, 7}});
  EXPECT_EQ(folded.m, 6);
  EXPECT_EQ(folded.batch, 1);
  const Geometry strided = productGeometryOf(layer, spec, {{3, 9}, {4, 9, 6}});
  EXPECT_EQ(strided.batch, 4);
  EXPECT_EQ(strided.strideA, 0);
  EXPECT_EQ(strided.outer.size(), 1u);
  const Geometry looped = productGeometryOf(layer, spec, {{2, 1, 3, 5}, {4, 5, 7}});
  EXPECT_EQ(looped.batch, 4);
  EXPECT_EQ(looped.outer.size(), 2u);
}

TEST(MatMulPlan, FusedBiasActivationsAndResiduals) {
  for (const auto& [a, b] : kMatMulShapes) {
    if (a.size() == 1 && b.size() == 1) continue;  // a scalar output has no epilogue fusion
    const int64_t last = b.size() == 1 ? a[a.size() - 2] : b.back();
    for (bool bias : {true, false})
      for (bool constant : {true, false})
        for (const char* activation : {"", "Relu", "GeluTanh", "Sigmoid", "Clip"})
          for (int residual : {0, 1, 2}) {
            if (!bias && constant) continue;
            Case c{"FusedMatMul:MatMul", a, b, bias ? std::vector<int64_t>{last} : std::vector<int64_t>{}, bias,
                   constant};
            c.activation = activation;
            c.residual = residual;
            checkCase(c);
          }
  }
}

TEST(MatMulPlan, GemmTransposesScalesAndEveryCShape) {
  const int64_t M = 7, K = 13, N = 9;
  for (int transA = 0; transA < 2; ++transA)
    for (int transB = 0; transB < 2; ++transB)
      for (const std::vector<int64_t>& cDims : std::vector<std::vector<int64_t>>{
               {}, {N}, {1, N}, {M, 1}, {M, N}, {1}, {1, 1}})
        for (bool hasC : {true, false})
          for (bool constant : {true, false})
            for (const auto& [alpha, beta] : std::vector<std::pair<float, float>>{{1, 1}, {0.5f, 2}, {1.5f, 0}})
              for (const char* op : {"Gemm", "FusedMatMul:Gemm"})
                for (const char* activation : {"", "Relu", "Sigmoid"})
                  for (int residual : {0, 1, 2}) {
                    if (std::string(op) == "Gemm" && (activation[0] || residual)) continue;
                    if (!hasC && (constant || !cDims.empty())) continue;
                    checkCase({op, transA ? std::vector<int64_t>{K, M} : std::vector<int64_t>{M, K},
                               transB ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N}, cDims, hasC, constant,
                               bool(transA), bool(transB), alpha, beta, activation, residual});
                  }
}

TEST(MatMulPlan, EpiloguesGoIntoCublasWhereItTakesThem) {
  Case c{"FusedMatMul:MatMul", {7, 24}, {24, 10}, {10}, true, true};
  c.activation = "Relu";
  c.residual = 1;
  const Layer layer = layerOf(c);
  const MatMulSpec spec = matMulSpecOf(layer, Precision::kFP16, DataType::kFloat32, true);
  EXPECT_EQ(spec.type, CUDA_R_16F);
  EXPECT_EQ(spec.compute, CUBLAS_COMPUTE_32F);
  const Geometry g = productGeometryOf(layer, spec, {{7, 24}, {24, 10}, {10}, {7, 10}});
  const Fusion full = fusionOf(spec, g, 0, false);
  EXPECT_EQ(full.epilogue, CUBLASLT_EPILOGUE_RELU_BIAS);
  EXPECT_TRUE(full.residualInC);
  EXPECT_FALSE(full.elementwiseBias || full.elementwiseActivation || full.elementwiseResidualBefore);
  const Fusion plain = fusionOf(spec, g, 1, false);
  EXPECT_EQ(plain.epilogue, CUBLASLT_EPILOGUE_DEFAULT);
  EXPECT_TRUE(plain.elementwiseBias && plain.elementwiseActivation && plain.residualInC);
  // Exact Gelu is no cuBLASLt epilogue (its GELU is the tanh form).
  c.activation = "Gelu";
  const MatMulSpec gelu = matMulSpecOf(layerOf(c), Precision::kTF32, DataType::kFloat32, true);
  EXPECT_EQ(gelu.compute, CUBLAS_COMPUTE_32F_FAST_TF32);
  EXPECT_EQ(fusionOf(gelu, g, 0, false).epilogue, CUBLASLT_EPILOGUE_BIAS);
  EXPECT_TRUE(fusionOf(gelu, g, 0, false).elementwiseActivation);
  // With 16-bit storage the tanh form stands in for it (within half an fp16 step).
  const MatMulSpec geluHalf = matMulSpecOf(layerOf(c), Precision::kFP16, DataType::kFloat32, true);
  EXPECT_EQ(fusionOf(geluHalf, g, 0, false).epilogue, CUBLASLT_EPILOGUE_GELU_BIAS);
  EXPECT_FALSE(fusionOf(geluHalf, g, 0, false).elementwiseActivation);
}

TEST(MatMulPlan, TacticPayloadsRoundTrip) {
  StoredAlgo stored;
  for (size_t i = 0; i < 8; ++i) stored.algo.data[i] = 0x0102030405060708ull * (i + 1);
  stored.workspaceBytes = 12345;
  stored.alignment = 16;
  stored.variant = 1;
  const auto decoded = decodeAlgo(encodeAlgo(stored));
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(std::memcmp(&decoded->algo, &stored.algo, sizeof(stored.algo)), 0);
  EXPECT_EQ(decoded->workspaceBytes, 12345u);
  EXPECT_EQ(decoded->alignment, 16u);
  EXPECT_EQ(decoded->variant, 1u);
  EXPECT_FALSE(decodeAlgo({}).has_value());
  std::vector<uint8_t> bytes = encodeAlgo(stored);
  bytes[0] = 'X';
  EXPECT_FALSE(decodeAlgo(bytes).has_value());
  EXPECT_EQ(commonAlignment({0x1000, 0x2000}), 256u);
  EXPECT_EQ(commonAlignment({0x1000, 6}), 2u);
  EXPECT_EQ(commonAlignment({0x1010, 0}), 16u);
}

TEST(MatMulPlan, TacticsNameTheirPrecision) {
  Layer layer;
  layer.name = "mm";
  layer.opType = "MatMul";
  for (Precision p : {Precision::kFP32, Precision::kTF32, Precision::kFP16, Precision::kBF16}) {
    Tactic t;
    t.id = std::string("cublaslt.gemm.") + precisionTag(p) + ".h2";
    EXPECT_EQ(tacticPrecision(layer, t), p);
    t.id = std::string("cudnn.conv.") + precisionTag(p);
    EXPECT_EQ(tacticPrecision(layer, t), p);
  }
  Tactic old;
  old.id = "cuda.matmul";
  EXPECT_THROW(tacticPrecision(layer, old), Error);
  EXPECT_EQ(storageOf(DataType::kFloat32, Precision::kFP16), DataType::kFloat16);
  EXPECT_EQ(storageOf(DataType::kFloat32, Precision::kTF32), DataType::kFloat32);
  EXPECT_EQ(storageOf(DataType::kFloat16, Precision::kFP32), DataType::kFloat16);
}

}  // namespace
