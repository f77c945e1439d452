// MatMul, Gemm and kiln.FusedMatMul on cuBLASLt (cublaslt_matmul.h), in fp32 (exact), tf32,
// fp16 and bf16 (fp32 accumulation).
//
// A MatMul's batch dims become one strided batch where they can: a B without batch dims folds A's
// batch into its rows (one M·batch × K product), broadcast batch dims of 1 are strides of 0, and
// dims whose strides do not merge into one are looped over on the host, one strided batch each.
// Gemm's C enters as cuBLASLt's C (an M×N C, scaled by beta), as its bias epilogue (a constant row
// with beta 1), or broadcast into the output first (out = beta·C, then the product accumulates onto
// it). A fused layer's bias, Relu / GeluTanh and a residual added before the activation go into
// cuBLASLt (bias epilogue, RELU_BIAS / GELU_BIAS, the residual as C with beta 1) where it takes
// them; the rest of the epilogue runs as elementwise kernels after the product (cuda_epilogue.h).
//
// Tactics: the heuristic's top candidates "cublaslt.gemm.<precision>.h0".."h3", each carrying its
// algorithm in the payload; a step validates it for each shape it meets (cublasLtMatmulAlgoCheck)
// and asks the heuristic again where it no longer fits. Integer matmuls have no CUDA kernel yet.
#include "../../../ops/fused.h"
#include "../../common/matmul_geometry.h"
#include "../cublaslt_matmul.h"
#include "../cuda_epilogue.h"
#include "../cuda_ops.h"
#include "../cuda_step.h"

#include <kernels/cuda/elementwise/binary.h>

#include <kiln/error.h>

#include <algorithm>

namespace kiln::cuda {
namespace {

namespace k = kernels::cuda;
using kernels::Activation;

constexpr uint64_t kCublasWorkspaceBytes = uint64_t(32) << 20;  // NVIDIA's advice for Hopper (split-K needs it)
constexpr int kTacticCandidates = 4;
constexpr uint64_t kAlignment = 256;

uint64_t alignUp(uint64_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

enum Input : size_t { kA = 0, kB = 1, kC = 2, kResidual = 3 };

// What a layer computes, from its attributes and precision; dims come with each shape.
struct MatMulSpec {
  bool fused = false, gemm = false;
  bool transA = false, transB = false;
  float alpha = 1, beta = 1;
  bool hasC = false;         // Gemm's C (used: beta != 0) or a fused MatMul's bias
  bool cConstant = false;    // ... and it is a weight
  bool hasResidual = false;  // a fused layer's input 3
  FusedEpilogue epilogue;
  DataType storage = DataType::kFloat32;  // of every activation and the output
  cudaDataType_t type = CUDA_R_32F;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
};

bool inputPresent(const Layer& layer, size_t i) { return i < layer.inputs.size() && !layer.inputs[i].empty(); }

MatMulSpec specOf(const Layer& layer, Precision precision, DataType outputDeclared, bool cConstant) {
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
  s.hasC = inputPresent(layer, kC) && (!s.gemm || s.beta != 0.0f);  // Gemm ignores a C scaled by 0
  s.cConstant = s.hasC && cConstant;
  s.hasResidual = s.fused && inputPresent(layer, kResidual);
  if (s.fused) s.epilogue = readFusedEpilogue(layer);
  s.storage = storageOf(outputDeclared, precision);
  const auto type = cublasTypeOf(s.storage);
  if (!type)
    throw Error(ErrorCode::kUnsupported, layer.describe() + ": cuBLASLt takes float32, float16 or bfloat16, not " +
                                             std::string(toString(s.storage)));
  s.type = *type;
  // TF32 only where the plan allows it; fp16 / bf16 accumulate in fp32 either way.
  s.compute = s.storage == DataType::kFloat32 && precision == Precision::kTF32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                                               : CUBLAS_COMPUTE_32F;
  return s;
}

// How Gemm's C (or a fused MatMul's bias) enters the product.
enum class CRole { kNone, kOperand, kBias, kBroadcast, kElementwiseBias };

struct Offsets {
  int64_t a = 0, b = 0, y = 0;  // elements
};

// One set of input dims as cuBLASLt products.
struct Geometry {
  int64_t m = 0, n = 0, k = 0;
  int64_t batch = 1, strideA = 0, strideB = 0, strideY = 0;  // the strided batch
  std::vector<Offsets> outer{Offsets{}};                      // one strided batch each
  uint64_t offsetBits = 0;  // every outer offset in bytes, OR-ed: what they do to pointer alignment
  bool empty = false;       // the output has no element
  CRole c = CRole::kNone;
  std::vector<int64_t> cDims;  // Gemm's C, or the fused bias as it broadcasts against the output
  int64_t outputElements = 0;
};

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

Geometry geometryOf(const Layer& layer, const MatMulSpec& s, const LayerShapes& dims) {
  Geometry g;
  if (dims.size() < 2 || dims[kA].empty() || dims[kB].empty())
    throw Error(ErrorCode::kInvalidArgument, layer.describe() + ": A and B must have at least one dim");
  std::vector<int64_t> outDims;
  if (!s.gemm) {
    const MatMulGeometry mg = matMulGeometry(dims[kA], dims[kB]);
    const int64_t bK = dims[kB].size() == 1 ? dims[kB][0] : dims[kB][dims[kB].size() - 2];
    if (bK != mg.K)
      throw Error(ErrorCode::kInvalidArgument, layer.describe() + ": A " + dimsText(dims[kA]) + " and B " +
                                                   dimsText(dims[kB]) + " do not agree on K");
    g.m = mg.M;
    g.n = mg.N;
    g.k = mg.K;
    planBatch(mg, g);
    g.outputElements = mg.batchCount() * mg.M * mg.N;
    if (s.hasC) {
      // The bias runs along the output's last dim: N, unless B is 1-D (then the output ends in M,
      // or is a scalar when A is 1-D too).
      const bool alongN = dims[kB].size() != 1;
      if (alongN) g.cDims = {mg.N};
      else if (dims[kA].size() != 1) g.cDims = {mg.M};
      g.c = alongN && s.cConstant ? CRole::kBias : CRole::kElementwiseBias;
    }
  } else {
    const auto &a = dims[kA], &b = dims[kB];
    if (a.size() != 2 || b.size() != 2)
      throw Error(ErrorCode::kInvalidArgument, layer.describe() + ": Gemm takes 2-D A and B, got " + dimsText(a) +
                                                   " and " + dimsText(b));
    g.m = s.transA ? a[1] : a[0];
    g.k = s.transA ? a[0] : a[1];
    g.n = s.transB ? b[0] : b[1];
    if ((s.transB ? b[1] : b[0]) != g.k)
      throw Error(ErrorCode::kInvalidArgument, layer.describe() + ": A " + dimsText(a) + " and B " + dimsText(b) +
                                                   " do not agree on K");
    g.outputElements = g.m * g.n;
    if (s.hasC) {
      g.cDims = dims.size() > kC ? dims[kC] : std::vector<int64_t>{};
      if (g.cDims == std::vector<int64_t>{g.m, g.n}) g.c = CRole::kOperand;
      else if (s.cConstant && s.beta == 1.0f &&
               (g.cDims == std::vector<int64_t>{g.n} || g.cDims == std::vector<int64_t>{1, g.n}))
        g.c = CRole::kBias;
      else g.c = CRole::kBroadcast;
    }
  }
  g.empty = g.outputElements == 0;
  const uint64_t abBytes = byteSize(s.storage), yBytes = abBytes;
  for (const Offsets& o : g.outer) g.offsetBits |= uint64_t(o.a) * abBytes | uint64_t(o.b) * abBytes | uint64_t(o.y) * yBytes;
  return g;
}

// Which parts of the epilogue run inside cuBLASLt at one fusion level (0: all it takes; 1: none
// of its epilogues, for when it has no algorithm with them).
struct Fusion {
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  bool residualInC = false;
  bool elementwiseBias = false, elementwiseResidualBefore = false, elementwiseActivation = false,
       elementwiseResidualAfter = false;
};

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
  const bool activationInEpilogue = level == 0 && !f.elementwiseBias && !f.elementwiseResidualBefore &&
                                    (act == Activation::kRelu || act == Activation::kGeluTanh);
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

// The per-shape choices of one execution context.
struct Variant {
  uint32_t alignment = 0;
  Fusion fusion;
  std::unique_ptr<LtGemm> gemm;  // null when no product runs (K = 0)
  cublasLtMatmulAlgo_t algo{};
  uint64_t workspaceBytes = 0;
  ElementwiseEpilogue::Work work;  // the pointers are set at each launch
};

struct ShapeEntry {
  LayerShapes inputDims;
  std::vector<int64_t> outputDims;
  Geometry geometry;
  std::vector<std::unique_ptr<Variant>> variants;  // one per pointer alignment met
};

class MatMulState : public StepState {
 public:
  std::vector<std::unique_ptr<ShapeEntry>> shapes;
};

bool sameDims(const LayerShapes& key, std::span<const TensorView> inputs) {
  if (key.size() != inputs.size()) return false;
  for (size_t i = 0; i < key.size(); ++i)
    if (key[i] != inputs[i].dims) return false;
  return true;
}

DataType outputDeclared(const LayerSignature& signature) {
  return signature.outputs.empty() || !signature.outputs[0] ? DataType::kFloat32 : signature.outputs[0]->dtype;
}

bool constantInput(const LayerSignature& signature, size_t i) {
  return i < signature.inputs.size() && signature.inputs[i] && signature.inputs[i]->isConstant();
}

std::string tacticBase(Precision precision) { return std::string("cublaslt.gemm.") + precisionTag(precision); }

class MatMulStep : public CudaStep {
 public:
  MatMulStep(const Layer& layer, const Tactic& tactic, const LayerSignature& signature, CudaDevice& device)
      : CudaStep(layer, tactic, signature, device, storageOf(outputDeclared(signature), tacticPrecision(layer, tactic))),
        spec_(specOf(layer, tacticPrecision(layer, tactic), outputDeclared(signature), constantInput(signature, kC))),
        epilogue_(layer, spec_.storage, device),
        stored_(decodeAlgo(tactic.payload)),
        name_(layer.describe()) {
    if (spec_.gemm && spec_.hasC)  // beta as a device scalar, for a C broadcast into the output
      beta_ = deviceScalar(device.allocator, spec_.beta, spec_.storage);
  }

  uint64_t workspaceBytes(std::span<const TensorView>, std::span<const TensorView> outputs) const override {
    const int64_t elements = outputs.empty() ? 0 : outputs[0].elementCount();
    return alignUp(epilogue_.scratchBytes(elements)) + (stored_ ? stored_->workspaceBytes : kCublasWorkspaceBytes);
  }

  std::unique_ptr<StepState> createState() const override { return std::make_unique<MatMulState>(); }

  void enqueue(const StepArgs& args, Stream& stream) const override {
    auto* state = dynamic_cast<MatMulState*>(args.state);
    if (!state) throw Error(ErrorCode::kInternal, name_ + ": enqueued without the state its step made");
    const TensorView& out = args.outputs[0];
    ShapeEntry& entry = shapeFor(*state, args);
    if (entry.geometry.empty) return;
    const Geometry& g = entry.geometry;
    const void* a = input(args, kA);
    const void* b = input(args, kB);
    const void* c = spec_.hasC ? input(args, kC) : nullptr;
    const void* residual = spec_.hasResidual ? input(args, kResidual) : nullptr;
    void* y = out.data;
    const uint32_t alignment =
        commonAlignment({address(a), address(b), g.c == CRole::kOperand ? address(c) : 0, address(residual),
                         address(y), g.offsetBits});
    const uint64_t scratchBytes = alignUp(epilogue_.scratchBytes(g.outputElements));
    if (args.workspaceBytes < scratchBytes)
      throw Error(ErrorCode::kInternal, name_ + ": its workspace of " + std::to_string(args.workspaceBytes) +
                                            " bytes is smaller than the " + std::to_string(scratchBytes) + " it asked for");
    const uint64_t budget = std::min(args.workspaceBytes - scratchBytes, kCublasWorkspaceBytes);
    Variant& v = variantFor(entry, alignment, budget);
    void* scratch = args.workspace;
    void* cublasWorkspace = static_cast<char*>(args.workspace) + scratchBytes;
    const cudaStream_t s = streamOf(stream);
    const uint64_t elementBytes = byteSize(spec_.storage);
    const bool broadcastC = spec_.gemm && (g.c == CRole::kBroadcast || (!v.gemm && g.c != CRole::kNone));
    if (broadcastC)  // out = beta·C, onto which the product accumulates (or which it is, for K = 0)
      check(k::launchBinary(kernels::BinaryOp::kMul, c, g.cDims, beta_.get(), kScalarDims, y, out.dims,
                            elementType(out), s),
            "broadcasting C into its output");
    else if (!v.gemm)
      check(cudaMemsetAsync(y, 0, uint64_t(g.outputElements) * elementBytes, s), "zeroing its output (K = 0)");
    if (v.gemm) {
      const void* cOperand = y;
      float beta = 0;
      if (g.c == CRole::kOperand) cOperand = c, beta = spec_.beta;
      else if (g.c == CRole::kBroadcast) beta = 1;
      else if (v.fusion.residualInC) cOperand = residual, beta = 1;
      const void* bias = v.gemm->shape().hasBias() ? c : nullptr;
      for (const Offsets& o : g.outer)
        v.gemm->run(cublasLtHandle(device_), v.algo, spec_.alpha, at(a, o.a, elementBytes), at(b, o.b, elementBytes),
                    beta, at(cOperand, o.y, elementBytes), at(y, o.y, elementBytes), bias, cublasWorkspace,
                    v.workspaceBytes, s, name_);
    }
    v.work.bias = v.fusion.elementwiseBias ? c : nullptr;
    v.work.residualBefore = v.fusion.elementwiseResidualBefore ? residual : nullptr;
    v.work.activate = v.fusion.elementwiseActivation;
    v.work.residualAfter = v.fusion.elementwiseResidualAfter ? residual : nullptr;
    epilogue_.apply(y, entry.outputDims, v.work, scratch, s);
  }

 private:
  static inline const std::vector<int64_t> kScalarDims{1};

  static uint64_t address(const void* p) { return uint64_t(reinterpret_cast<uintptr_t>(p)); }
  static const void* at(const void* p, int64_t elements, uint64_t bytes) {
    return static_cast<const char*>(p) + elements * int64_t(bytes);
  }
  static void* at(void* p, int64_t elements, uint64_t bytes) { return static_cast<char*>(p) + elements * int64_t(bytes); }

  ShapeEntry& shapeFor(MatMulState& state, const StepArgs& args) const {
    for (auto& entry : state.shapes)
      if (sameDims(entry->inputDims, args.inputs)) return *entry;
    // First launch at these dims: work the products out once.
    auto entry = std::make_unique<ShapeEntry>();
    for (const TensorView& view : args.inputs) entry->inputDims.push_back(view.dims);
    entry->outputDims = args.outputs[0].dims;
    entry->geometry = geometryOf(layer_, spec_, entry->inputDims);
    if (entry->geometry.outputElements != args.outputs[0].elementCount())
      throw Error(ErrorCode::kInternal, name_ + ": its products make " +
                                            std::to_string(entry->geometry.outputElements) + " elements but the output " +
                                            dimsText(entry->outputDims) + " has " +
                                            std::to_string(args.outputs[0].elementCount()));
    state.shapes.push_back(std::move(entry));
    return *state.shapes.back();
  }

  Variant& variantFor(ShapeEntry& entry, uint32_t alignment, uint64_t budget) const {
    for (auto& v : entry.variants)
      if (v->alignment == alignment) return *v;
    const Geometry& g = entry.geometry;
    const bool zeroK = g.k == 0;
    auto v = std::make_unique<Variant>();
    v->alignment = alignment;
    v->work.biasDims = g.cDims;
    std::string tried;
    for (int level = 0; level < 2; ++level) {
      v->fusion = fusionOf(spec_, g, level, zeroK);
      if (zeroK) break;
      v->gemm = std::make_unique<LtGemm>(gemmShapeOf(spec_, g, v->fusion));
      cublasLtHandle_t handle = cublasLtHandle(device_);
      if (stored_ && stored_->variant == uint32_t(level) && alignment >= stored_->alignment)
        if (auto needs = v->gemm->check(handle, stored_->algo); needs && *needs <= budget) {
          v->algo = stored_->algo;
          v->workspaceBytes = *needs;
          break;
        }
      const auto results = v->gemm->heuristics(handle, 1, budget, alignment);
      if (!results.empty()) {
        v->algo = results[0].algo;
        v->workspaceBytes = results[0].workspaceSize;
        break;
      }
      tried += (tried.empty() ? "" : ", then ") + v->gemm->shape().describe();
      v->gemm.reset();
    }
    if (!zeroK && !v->gemm)
      throw Error(ErrorCode::kUnsupported, name_ + ": cuBLASLt has no algorithm for its product (" + tried +
                                               ") with pointers aligned to " + std::to_string(alignment) +
                                               " bytes and " + std::to_string(budget) + " bytes of workspace");
    entry.variants.push_back(std::move(v));
    return *entry.variants.back();
  }

  MatMulSpec spec_;
  ElementwiseEpilogue epilogue_;
  std::optional<StoredAlgo> stored_;
  std::string name_;  // layer.describe(), made once: launches build no strings
  DeviceCopy beta_;
};

// The heuristic's candidates at the max shapes, each its own tactic.
std::vector<Tactic> matMulTactics(const Layer& layer, Precision precision, const LayerInputs& inputs,
                                  CudaDevice& device) {
  const std::string base = tacticBase(precision);
  Tactic plain;
  plain.id = base;
  plain.workspaceBytes = kCublasWorkspaceBytes;
  for (size_t i = 0; i < layer.inputs.size() && i < inputs.dims.size(); ++i)
    if (inputPresent(layer, i) && inputs.dims[i].empty() &&
        !(i < inputs.weights.size() && inputs.weights[i] && inputs.weights[i]->rank() == 0))
      return {plain};  // dims unknown: the step asks the heuristic when it meets them
  try {
    const DataType declared = inputs.types.empty() ? DataType::kFloat32 : inputs.types[0];
    const bool cConstant = inputs.weights.size() > kC && inputs.weights[kC] != nullptr;
    const MatMulSpec spec = specOf(layer, precision, declared, cConstant);
    const Geometry g = geometryOf(layer, spec, inputs.dims);
    if (g.empty || g.k == 0) return {plain};
    const uint32_t alignment = commonAlignment({g.offsetBits});  // arena and weight pointers are 256-aligned
    const uint64_t scratch = alignUp(ElementwiseEpilogue::scratchBytes(spec.epilogue, g.outputElements, spec.storage));
    for (int level = 0; level < 2; ++level) {
      LtGemm gemm(gemmShapeOf(spec, g, fusionOf(spec, g, level, false)));
      const auto results = gemm.heuristics(cublasLtHandle(device), kTacticCandidates, kCublasWorkspaceBytes, alignment);
      if (results.empty()) continue;
      std::vector<Tactic> tactics;
      for (size_t i = 0; i < results.size(); ++i) {
        StoredAlgo stored{results[i].algo, results[i].workspaceSize, alignment, uint32_t(level)};
        Tactic& tactic = tactics.emplace_back();
        tactic.id = base + ".h" + std::to_string(i);
        tactic.workspaceBytes = scratch + results[i].workspaceSize;
        tactic.payload = encodeAlgo(stored);
      }
      return tactics;
    }
  } catch (const Error&) {
    // Whatever stops the heuristic here stops the step too, which reports it naming the layer.
  }
  return {plain};
}

const std::initializer_list<DataType> kFloatTypes = {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16};

SupportVerdict matMulTensors(const Layer& layer, Precision, const LayerSignature& tensors) {
  if (layer.domain == fused::kDomain) {
    const std::string base = layer.attrString(fused::kBase, "");
    if (base != "MatMul" && base != "Gemm")
      return {false, "kiln.FusedMatMul over '" + base + "' has no CUDA kernel"};
    if (!activationNamed(layer.attrString(fused::kActivation, "")))
      return {false, "the activation '" + layer.attrString(fused::kActivation, "") + "' has no CUDA kernel"};
  }
  if (auto v = firstRefusal({ranksWithinLimit(tensors), allOfTypes(tensors, kFloatTypes)}); !v.supported)
    return {false, v.why + " (cuBLASLt takes float32, float16 and bfloat16 here)"};
  const bool gemm = layer.opType == "Gemm" || layer.attrString(fused::kBase, "") == "Gemm";
  if (gemm)
    for (size_t i : {size_t(kA), size_t(kB)}) {
      const Tensor* t = i < tensors.inputs.size() ? tensors.inputs[i] : nullptr;
      if (t && t->shape.hasRank() && t->shape.rank() != 2)
        return {false, "Gemm's input '" + t->name + "' is not 2-D"};
    }
  return {};
}

}  // namespace

void registerMatMulCudaOps(CudaOpRegistry& registry) {
  CudaOp op = stepOp<MatMulStep>(matMulTensors);
  op.tactics = matMulTactics;
  registry.add("MatMul", op);
  registry.add("Gemm", op);
  registry.add(fused::kDomain, fused::kFusedMatMul, op);
}

}  // namespace kiln::cuda
