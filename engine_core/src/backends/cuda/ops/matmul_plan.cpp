#include "matmul_plan.h"

#include "../../../ops/fused.h"
#include "../../common/matmul_geometry.h"

#include <kiln/error.h>

namespace kiln::cuda {
namespace {

using kernels::Activation;


std::string dimsText(const std::vector<int64_t>& dims) { return dimsToString(dims); }

// A batch dim of the product: its size and each operand's stride along it.
struct BatchDim {
  int64_t size, a, b, y;
};

// MatMul's batch: folded into M, one strided batch, or strided batches looped over.
void planBatch(const MatMulGeometry& mg, Geometry& g) {
  std::vector<BatchDim> dims;
  int64_t yStride = mg.M * mg.N;
  std::vector<int64_t> yStrides(mg.batchDims.size());
  for (size_t d = mg.batchDims.size(); d-- > 0;) {
    yStrides[d] = yStride;
    yStride *= mg.batchDims[d];
  }
  bool bBatched = false, aDense = true;
  int64_t aDenseStride = mg.M * mg.K;
  for (size_t d = mg.batchDims.size(); d-- > 0;) {
    if (mg.batchDims[d] == 1) continue;
    bBatched = bBatched || mg.bStrides[d] != 0;
    aDense = aDense && mg.aStrides[d] == aDenseStride;
    aDenseStride *= mg.batchDims[d];
  }
  if (!bBatched && aDense) {  // A's matrices follow each other, B is one: one (batch·M) × K product
    g.m = mg.M * mg.batchCount();
    return;
  }
  for (size_t d = 0; d < mg.batchDims.size(); ++d)
    if (mg.batchDims[d] != 1) dims.push_back({mg.batchDims[d], mg.aStrides[d], mg.bStrides[d], yStrides[d]});
  // Merge neighbours whose strides continue each other for all three operands (0 and 0 merge).
  std::vector<BatchDim> merged;
  for (const BatchDim& d : dims) {
    if (!merged.empty()) {
      BatchDim& last = merged.back();
      if (last.a == d.a * d.size && last.b == d.b * d.size && last.y == d.y * d.size) {
        last = {last.size * d.size, d.a, d.b, d.y};
        continue;
      }
    }
    merged.push_back(d);
  }
  if (merged.empty()) return;
  const BatchDim inner = merged.back();
  merged.pop_back();
  g.batch = inner.size;
  g.strideA = inner.a;
  g.strideB = inner.b;
  g.strideY = inner.y;
  int64_t outerCount = 1;
  for (const BatchDim& d : merged) outerCount *= d.size;
  g.outer.assign(size_t(outerCount), Offsets{});
  for (int64_t i = 0; i < outerCount; ++i) {
    int64_t rest = i;
    Offsets& o = g.outer[size_t(i)];
    for (size_t d = merged.size(); d-- > 0;) {
      const int64_t index = rest % merged[d].size;
      rest /= merged[d].size;
      o.a += index * merged[d].a;
      o.b += index * merged[d].b;
      o.y += index * merged[d].y;
    }
  }
}

}  // namespace

MatMulSpec matMulSpecOf(const Layer& layer, Precision precision, DataType outputDeclared, bool cConstant) {
  MatMulSpec s;
  s.fused = layer.domain == fused::kDomain;
  const Layer base = s.fused ? fused::baseLayer(layer) : layer;
  s.gemm = base.opType == "Gemm";
  if (s.gemm) {
    s.transA = base.attrInt("transA", 0) != 0;
    s.transB = base.attrInt("transB", 0) != 0;
    s.alpha = base.attrFloat("alpha", 1.0f);
    s.beta = base.attrFloat("beta", 1.0f);
  }
  s.hasC = layer.hasInput(kMatMulC) && (!s.gemm || s.beta != 0.0f);  // Gemm ignores a C scaled by 0
  s.cConstant = s.hasC && cConstant;
  s.hasResidual = s.fused && layer.hasInput(kMatMulResidual);
  if (s.fused) s.epilogue = readFusedEpilogue(layer);
  setProductTypes(s, layer, precision, outputDeclared);
  return s;
}

void setProductTypes(MatMulSpec& s, const Layer& layer, Precision precision, DataType outputDeclared) {
  s.storage = storageOf(outputDeclared, precision);
  const auto type = cublasTypeOf(s.storage);
  if (!type)
    throw Error(ErrorCode::kUnsupported, layer.describe() + ": cuBLASLt takes float32, float16 or bfloat16, not " +
                                             std::string(toString(s.storage)));
  s.type = *type;
  // TF32 only where the plan allows it; fp16 / bf16 accumulate in fp32 either way.
  s.compute = s.storage == DataType::kFloat32 && precision == Precision::kTF32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                                               : CUBLAS_COMPUTE_32F;
}

Geometry productGeometryOf(const Layer& layer, const MatMulSpec& s, const LayerShapes& dims) {
  Geometry g;
  if (dims.size() < 2 || dims[kMatMulA].empty() || dims[kMatMulB].empty())
    throw Error(ErrorCode::kInvalidArgument, layer.describe() + ": A and B must have at least one dim");
  std::vector<int64_t> outDims;
  if (!s.gemm) {
    const MatMulGeometry mg = matMulGeometry(dims[kMatMulA], dims[kMatMulB]);
    const int64_t bK = dims[kMatMulB].size() == 1 ? dims[kMatMulB][0] : dims[kMatMulB][dims[kMatMulB].size() - 2];
    if (bK != mg.K)
      throw Error(ErrorCode::kInvalidArgument, layer.describe() + ": A " + dimsText(dims[kMatMulA]) + " and B " +
                                                   dimsText(dims[kMatMulB]) + " do not agree on K");
    g.m = mg.M;
    g.n = mg.N;
    g.k = mg.K;
    planBatch(mg, g);
    g.outputElements = mg.batchCount() * mg.M * mg.N;
    if (s.hasC) {
      // The bias runs along the output's last dim: N, unless B is 1-D (then the output ends in M,
      // or is a scalar when A is 1-D too).
      const bool alongN = dims[kMatMulB].size() != 1;
      if (alongN)
        g.cDims = {mg.N};
      else if (dims[kMatMulA].size() != 1)
        g.cDims = {mg.M};
      g.c = alongN && s.cConstant ? CRole::kBias : CRole::kElementwiseBias;
    }
  } else {
    const auto &a = dims[kMatMulA], &b = dims[kMatMulB];
    if (a.size() != 2 || b.size() != 2)
      throw Error(ErrorCode::kInvalidArgument,
                  layer.describe() + ": Gemm takes 2-D A and B, got " + dimsText(a) + " and " + dimsText(b));
    g.m = s.transA ? a[1] : a[0];
    g.k = s.transA ? a[0] : a[1];
    g.n = s.transB ? b[0] : b[1];
    if ((s.transB ? b[1] : b[0]) != g.k)
      throw Error(ErrorCode::kInvalidArgument,
                  layer.describe() + ": A " + dimsText(a) + " and B " + dimsText(b) + " do not agree on K");
    g.outputElements = g.m * g.n;
    if (s.hasC) {
      g.cDims = dims.size() > kMatMulC ? dims[kMatMulC] : std::vector<int64_t>{};
      if (g.cDims == std::vector<int64_t>{g.m, g.n})
        g.c = CRole::kOperand;
      else if (s.cConstant && s.beta == 1.0f &&
               (g.cDims == std::vector<int64_t>{g.n} || g.cDims == std::vector<int64_t>{1, g.n}))
        g.c = CRole::kBias;
      else
        g.c = CRole::kBroadcast;
    }
  }
  g.empty = g.outputElements == 0;
  const uint64_t abBytes = byteSize(s.storage), yBytes = abBytes;
  for (const Offsets& o : g.outer)
    g.offsetBits |= uint64_t(o.a) * abBytes | uint64_t(o.b) * abBytes | uint64_t(o.y) * yBytes;
  return g;
}

Fusion fusionOf(const MatMulSpec& s, const Geometry& g, int level, bool zeroK) {
  Fusion f;
  const bool residualBefore = s.hasResidual && s.epilogue.residualBeforeActivation;
  f.elementwiseResidualAfter = s.hasResidual && !s.epilogue.residualBeforeActivation;
  if (zeroK) {  // no product runs: out = beta·C (Gemm) or 0, then the epilogue elementwise
    f.elementwiseBias = g.c == CRole::kElementwiseBias || (!s.gemm && g.c == CRole::kBias);
    f.elementwiseResidualBefore = residualBefore;
    f.elementwiseActivation = s.epilogue.activation != Activation::kNone;
    return f;
  }
  const bool biasInEpilogue = level == 0 && g.c == CRole::kBias;
  f.elementwiseBias = g.c == CRole::kElementwiseBias || (g.c == CRole::kBias && !biasInEpilogue);
  // The residual as C (beta 1) wherever Gemm's C does not take that place.
  f.residualInC = residualBefore && g.c != CRole::kOperand && g.c != CRole::kBroadcast;
  f.elementwiseResidualBefore = residualBefore && !f.residualInC;
  const Activation act = s.epilogue.activation;
  // cuBLASLt's GELU is the tanh form. It stands in for the erf form only where the output is 16-bit:
  // the forms differ by at most 4.7e-4 (at x = -2.70), under half an fp16 step at 1.0, and one
  // kernel fewer a layer is what batch-1 transformers need (TensorRT's fp16 GELU is the tanh form too).
  const bool geluInEpilogue =
      act == Activation::kGeluTanh || (act == Activation::kGelu && s.storage != DataType::kFloat32);
  const bool activationInEpilogue = level == 0 && !f.elementwiseBias && !f.elementwiseResidualBefore &&
                                    (act == Activation::kRelu || geluInEpilogue);
  f.elementwiseActivation = act != Activation::kNone && !activationInEpilogue;
  if (activationInEpilogue && act == Activation::kRelu)
    f.epilogue = biasInEpilogue ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
  else if (activationInEpilogue)  // cuBLASLt's GELU is the tanh approximation
    f.epilogue = biasInEpilogue ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
  else if (biasInEpilogue)
    f.epilogue = CUBLASLT_EPILOGUE_BIAS;
  return f;
}

GemmShape gemmShapeOf(const MatMulSpec& s, const Geometry& g, const Fusion& f) {
  GemmShape shape;
  shape.m = g.m;
  shape.n = g.n;
  shape.k = g.k;
  shape.transA = s.transA;
  shape.transB = s.transB;
  shape.batch = g.batch;
  shape.strideA = g.strideA;
  shape.strideB = g.strideB;
  shape.strideC = shape.strideD = g.strideY;  // C is output-shaped whenever it is used
  shape.abType = shape.cdType = s.type;
  shape.compute = s.compute;
  shape.epilogue = f.epilogue;
  return shape;
}

}  // namespace kiln::cuda
