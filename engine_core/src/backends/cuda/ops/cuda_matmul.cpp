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
// Tactics: "cublaslt.gemm.<precision>." + ltCandidates' names (cublaslt_candidates.h): the
// heuristic's top LayerInputs::candidateBudget (h0..h3 at the default level), split-K copies of
// them for outputs of too few tiles to fill the GPU (h0.k4), and algorithms enumerated by id at
// optimisation levels 4 and 5 (a23.t20.s8.k1), each carrying its algorithm in the payload; a step
// validates it for each shape it meets (cublasLtMatmulAlgoCheck) and asks the heuristic again
// where it no longer fits. Integer matmuls have no CUDA kernel yet.
#include "../../../ops/fused.h"
#include "../cublaslt_candidates.h"
#include "../cublaslt_matmul.h"
#include "../cuda_epilogue.h"
#include "../cuda_ops.h"
#include "../cuda_step.h"
#include "../workspace_math.h"
#include "matmul_plan.h"

#include <kernels/cuda/elementwise/binary.h>

#include <kiln/error.h>

#include <algorithm>

namespace kiln::cuda {
namespace {

namespace k = kernels::cuda;
using kernels::Activation;



std::string dimsText(const std::vector<int64_t>& dims) { return dimsToString(dims); }

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

bool constantInput(const LayerSignature& signature, size_t i) {
  return i < signature.inputs.size() && signature.inputs[i] && signature.inputs[i]->isConstant();
}

std::string tacticBase(Precision precision) { return std::string("cublaslt.gemm.") + precisionTag(precision); }

class MatMulStep : public CudaStep {
 public:
  MatMulStep(const Layer& layer, const Tactic& tactic, const LayerSignature& signature, CudaDevice& device)
      : CudaStep(layer, tactic, signature, device,
                 storageOf(outputDeclared(signature), tacticPrecision(layer, tactic))),
        spec_(matMulSpecOf(layer, tacticPrecision(layer, tactic), outputDeclared(signature),
                           constantInput(signature, kMatMulC))),
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
    const void* a = input(args, kMatMulA);
    const void* b = input(args, kMatMulB);
    const void* c = spec_.hasC ? input(args, kMatMulC) : nullptr;
    const void* residual = spec_.hasResidual ? input(args, kMatMulResidual) : nullptr;
    void* y = out.data;
    const uint32_t alignment = commonAlignment(
        {address(a), address(b), g.c == CRole::kOperand ? address(c) : 0, address(residual), address(y), g.offsetBits});
    const uint64_t scratchBytes = alignUp(epilogue_.scratchBytes(g.outputElements));
    if (args.workspaceBytes < scratchBytes)
      throw Error(ErrorCode::kInternal, name_ + ": its workspace of " + std::to_string(args.workspaceBytes) +
                                            " bytes is smaller than the " + std::to_string(scratchBytes) +
                                            " it asked for");
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
      if (g.c == CRole::kOperand)
        cOperand = c, beta = spec_.beta;
      else if (g.c == CRole::kBroadcast)
        beta = 1;
      else if (v.fusion.residualInC)
        cOperand = residual, beta = 1;
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
  static void* at(void* p, int64_t elements, uint64_t bytes) {
    return static_cast<char*>(p) + elements * int64_t(bytes);
  }

  ShapeEntry& shapeFor(MatMulState& state, const StepArgs& args) const {
    for (auto& entry : state.shapes)
      if (sameDims(entry->inputDims, args.inputs)) return *entry;
    // First launch at these dims: work the products out once.
    auto entry = std::make_unique<ShapeEntry>();
    for (const TensorView& view : args.inputs) entry->inputDims.push_back(view.dims);
    entry->outputDims = args.outputs[0].dims;
    entry->geometry = productGeometryOf(layer_, spec_, entry->inputDims);
    if (entry->geometry.outputElements != args.outputs[0].elementCount())
      throw Error(ErrorCode::kInternal, name_ + ": its products make " +
                                            std::to_string(entry->geometry.outputElements) +
                                            " elements but the output " + dimsText(entry->outputDims) + " has " +
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

// ltCandidates' candidates at the max shapes, each its own tactic.
std::vector<Tactic> matMulTactics(const Layer& layer, Precision precision, const LayerInputs& inputs,
                                  CudaDevice& device) {
  const std::string base = tacticBase(precision);
  Tactic plain;
  plain.id = base;
  plain.workspaceBytes = kCublasWorkspaceBytes;
  for (size_t i = 0; i < layer.inputs.size() && i < inputs.dims.size(); ++i)
    if (layer.hasInput(i) && inputs.dims[i].empty() &&
        !(i < inputs.weights.size() && inputs.weights[i] && inputs.weights[i]->rank() == 0))
      return {plain};  // dims unknown: the step asks the heuristic when it meets them
  try {
    const DataType declared = inputs.types.empty() ? DataType::kFloat32 : inputs.types[0];
    const bool cConstant = inputs.weights.size() > kMatMulC && inputs.weights[kMatMulC] != nullptr;
    const MatMulSpec spec = matMulSpecOf(layer, precision, declared, cConstant);
    const Geometry g = productGeometryOf(layer, spec, inputs.dims);
    if (g.empty || g.k == 0) return {plain};
    const uint32_t alignment = commonAlignment({g.offsetBits});  // arena and weight pointers are 256-aligned
    const uint64_t scratch = alignUp(ElementwiseEpilogue::scratchBytes(spec.epilogue, g.outputElements, spec.storage));
    LtSearch search = LtSearch::forBudget(inputs.candidateBudget);
    search.alignment = alignment;
    search.smCount = device.properties.multiProcessorCount;
    for (int level = 0; level < 2; ++level) {
      LtGemm gemm(gemmShapeOf(spec, g, fusionOf(spec, g, level, false)));
      const auto candidates = ltCandidates(gemm, cublasLtHandle(device), search);
      if (candidates.empty()) continue;
      std::vector<Tactic> tactics;
      for (const LtCandidate& candidate : candidates) {
        Tactic& tactic = tactics.emplace_back();
        tactic.id = base + "." + candidate.name;
        tactic.workspaceBytes = scratch + candidate.workspaceBytes;
        tactic.payload = encodeAlgo(StoredAlgo{candidate.algo, candidate.workspaceBytes, alignment, uint32_t(level)});
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
    if (base != "MatMul" && base != "Gemm") return {false, "kiln.FusedMatMul over '" + base + "' has no CUDA kernel"};
    if (!activationNamed(layer.attrString(fused::kActivation, "")))
      return {false, "the activation '" + layer.attrString(fused::kActivation, "") + "' has no CUDA kernel"};
  }
  if (auto v = firstRefusal({ranksWithinLimit(tensors), allOfTypes(tensors, kFloatTypes)}); !v.supported)
    return {false, v.why + " (cuBLASLt takes float32, float16 and bfloat16 here)"};
  const bool gemm = layer.opType == "Gemm" || layer.attrString(fused::kBase, "") == "Gemm";
  if (gemm)
    for (size_t i : {size_t(kMatMulA), size_t(kMatMulB)}) {
      const Tensor* t = i < tensors.inputs.size() ? tensors.inputs[i] : nullptr;
      if (t && t->shape.hasRank() && t->shape.rank() != 2) return {false, "Gemm's input '" + t->name + "' is not 2-D"};
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
