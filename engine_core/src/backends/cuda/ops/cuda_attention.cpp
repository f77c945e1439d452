// kiln.Attention on the GPU (semantics: ops/fused.cpp and the CPU kernel, kernels/cpu/attention):
//   y = softmax(q · kᵀ · scale + mask) · v
// as two strided-batched cuBLASLt products around the softmax kernel, in fp32 (exact), tf32, fp16
// and bf16. The scores are fp32 in the workspace whatever the storage type (the first product
// writes fp32 from fp16 / bf16 operands), so the mask is added and the softmax taken in fp32; for
// fp16 / bf16 the probabilities are narrowed for the second product. A row masked entirely to
// -inf gives zeros, as on the CPU (the softmax kernel gives NaN there; those rows are zeroed).
// Batch-heads go through in chunks of whole trailing batch dims, so the scores of at most
// 256 MiB are in the workspace at once. fp16 / bf16 layers are also offered the fused tactics of
// cuda_flash_attention.cpp (Kiln's kernel) and cuda_sdpa_attention.cpp (cuDNN's SDPA operation),
// no scores in memory; the builder times them all against this one.
#include "../../../ops/fused.h"
#include "../cublaslt_matmul.h"
#include "../cuda_ops.h"
#include "../cuda_step.h"
#include "attention_plan.h"
#include "cuda_flash_attention.h"
#include "cuda_sdpa_attention.h"

#include <kernels/cuda/elementwise/binary.h>
#include <kernels/cuda/elementwise/cast.h>
#include <kernels/cuda/elementwise/unary.h>
#include <kernels/cuda/layout/strided_copy.h>
#include <kernels/cuda/softmax/softmax.h>

#include <kiln/error.h>

#include <algorithm>

namespace kiln::cuda {
namespace {

namespace k = kernels::cuda;


// The two products of a chunk.
struct Variant {
  uint32_t alignment = 0;
  std::unique_ptr<LtGemm> scores, values;
  cublasLtMatmulAlgo_t scoresAlgo{}, valuesAlgo{};
  uint64_t scoresWorkspace = 0, valuesWorkspace = 0;
};

struct ShapeEntry {
  LayerShapes inputDims;
  AttentionPlan plan;
  std::vector<std::unique_ptr<Variant>> variants;  // one per pointer alignment met
};

class AttentionState : public StepState {
 public:
  std::vector<std::unique_ptr<ShapeEntry>> shapes;
};

class AttentionStep : public CudaStep {
 public:
  AttentionStep(const Layer& layer, const Tactic& tactic, const LayerSignature& signature, CudaDevice& device)
      : CudaStep(layer, tactic, signature, device,
                 storageOf(outputDeclared(signature), tacticPrecision(layer, tactic))),
        precision_(tacticPrecision(layer, tactic)),
        storage_(storageOf(outputDeclared(signature), precision_)),
        scale_(layer.attrFloat("scale", 1.0f)),
        hasMask_(attentionHasMask(layer)),
        name_(layer.describe()) {
    const auto type = cublasTypeOf(storage_);
    if (!type)
      throw Error(ErrorCode::kUnsupported,
                  name_ + ": attention takes float32, float16 or bfloat16, not " + std::string(toString(storage_)));
    type_ = *type;
    zero_ = deviceScalar(device.allocator, 0.0f, DataType::kFloat32);
  }

  uint64_t workspaceBytes(std::span<const TensorView> inputs, std::span<const TensorView>) const override {
    if (inputs.size() < 3 || inputs[kAttentionQ].dims.empty() || inputs[kAttentionK].dims.empty() ||
        inputs[kAttentionV].dims.empty())
      return 0;  // dims not known yet: asked again when they are
    const AttentionPlan plan =
        attentionPlanOf(layer_, storage_, inputs[kAttentionQ].dims, inputs[kAttentionK].dims, inputs[kAttentionV].dims,
                        hasMask_ && inputs.size() > kAttentionMask ? &inputs[kAttentionMask].dims : nullptr);
    return plan.empty ? 0 : plan.cublasAt + kCublasWorkspaceBytes;
  }

  std::unique_ptr<StepState> createState() const override { return std::make_unique<AttentionState>(); }

  void enqueue(const StepArgs& args, Stream& stream) const override {
    auto* state = dynamic_cast<AttentionState*>(args.state);
    if (!state) throw Error(ErrorCode::kInternal, name_ + ": enqueued without the state its step made");
    ShapeEntry& entry = shapeFor(*state, args);
    const AttentionPlan& p = entry.plan;
    if (p.empty) return;
    const TensorView& out = args.outputs[0];
    const cudaStream_t s = streamOf(stream);
    const uint64_t bytes = byteSize(storage_);
    if (p.lk == 0)  // softmax over no keys: nothing to sum, as the CPU's products give
      return check(cudaMemsetAsync(out.data, 0, uint64_t(out.elementCount()) * bytes, s), "zeroing its output");
    if (args.workspaceBytes < p.cublasAt)
      throw Error(ErrorCode::kInternal, name_ + ": its workspace of " + std::to_string(args.workspaceBytes) +
                                            " bytes is smaller than the " + std::to_string(p.cublasAt) +
                                            " its scores need");
    char* workspace = static_cast<char*>(args.workspace);
    // Interleaved inputs are re-laid out for the strided-batched products; an interleaved output
    // is computed in the workspace and re-laid out at the end.
    const std::vector<int64_t> swap = rowsAndHeadsPermutation(p.q.size());
    if (p.packed)  // Q, K and V from one copy, back to back at relaidAt
      check(k::transpose(input(args, kAttentionQ), workspace + p.relaidAt[kAttentionQ], args.inputs[kAttentionQ].dims,
                         packedToComputedPermutation(args.inputs[kAttentionQ].dims.size()), elementType(out), s),
            "re-laying out its packed Q, K and V");
    auto computedLayout = [&](size_t i) -> const char* {
      const void* stored = input(args, i);
      if (p.packed) return workspace + p.relaidAt[i];
      if (!p.interleaved[i]) return static_cast<const char*>(stored);
      check(k::transpose(stored, workspace + p.relaidAt[i], args.inputs[i].dims, swap, elementType(out), s),
            "re-laying out its interleaved inputs");
      return workspace + p.relaidAt[i];
    };
    const char *q = computedLayout(kAttentionQ), *kp = computedLayout(kAttentionK), *v = computedLayout(kAttentionV);
    const bool outInterleaved = p.interleaved[fused::kAttentionOutput];
    char* y = outInterleaved ? workspace + p.relaidAt[fused::kAttentionOutput] : static_cast<char*>(out.data);
    const uint32_t alignment = commonAlignment({address(q), address(kp), address(v), address(y), p.offsetBits});
    Variant& variant = variantFor(entry, alignment, std::min(args.workspaceBytes - p.cublasAt, kCublasWorkspaceBytes));
    float* scores = reinterpret_cast<float*>(workspace + p.scoresAt);
    void* probabilities = p.narrowProbabilities ? workspace + p.probabilitiesAt : static_cast<void*>(scores);
    void* flags = workspace + p.flagsAt;
    void* cublasWorkspace = workspace + p.cublasAt;
    const float* mask = nullptr;
    if (p.hasMask) {
      if (storage_ == DataType::kFloat32) {
        mask = static_cast<const float*>(input(args, kAttentionMask));
      } else {  // the mask widened to fp32 once, for the fp32 scores
        // A weight's upload is in the storage type; an activation arrives in it too.
        const DataType stored = weightType(kAttentionMask) != DataType::kUndefined ? weightType(kAttentionMask)
                                                                                   : args.inputs[kAttentionMask].dtype;
        check(k::launchCast(input(args, kAttentionMask), *elementTypeOf(stored), workspace + p.maskAt,
                            k::ElementType::kFloat32, p.maskElements, s),
              "widening its mask");
        mask = reinterpret_cast<const float*>(workspace + p.maskAt);
      }
    }
    const int64_t scoreElements = p.chunk * p.lq * p.lk;
    cublasLtHandle_t handle = cublasLtHandle(device_);
    for (int64_t c = 0; c < p.chunks; ++c) {
      const int64_t head = c * p.chunk;
      if (p.d == 0) {  // q · kᵀ over no dims
        check(cudaMemsetAsync(scores, 0, uint64_t(scoreElements) * 4, s), "zeroing its scores");
      } else {
        variant.scores->run(handle, variant.scoresAlgo, scale_, q + uint64_t(head * p.lq * p.d) * bytes,
                            kp + uint64_t(head * p.lk * p.d) * bytes, 0.0f, scores, scores, nullptr, cublasWorkspace,
                            variant.scoresWorkspace, s, name_);
      }
      if (mask)
        check(k::launchBinary(kernels::BinaryOp::kAdd, scores, p.scoreDims, mask + p.maskOffsets[size_t(c)], p.maskDims,
                              scores, p.scoreDims, k::ElementType::kFloat32, s),
              "adding its mask");
      // In place: each thread reads an element before it writes it, after its line's reductions.
      check(k::launchSoftmax(kernels::SoftmaxKind::kSoftmax, scores, scores, p.chunk * p.lq, p.lk, 1,
                             k::ElementType::kFloat32, s),
            "taking the softmax of its scores");
      if (mask) {  // rows masked entirely to -inf: NaN from the softmax, zeros on the CPU
        check(k::launchIsNaN(scores, flags, scoreElements, k::ElementType::kFloat32, s), "finding masked rows");
        check(k::launchWhere(flags, p.scoreDims, zero_.get(), kScalarDims, scores, p.scoreDims, scores, p.scoreDims,
                             k::ElementType::kFloat32, s),
              "zeroing masked rows");
      }
      if (p.narrowProbabilities)
        check(k::launchCast(scores, k::ElementType::kFloat32, probabilities, elementType(out), scoreElements, s),
              "narrowing its probabilities");
      variant.values->run(handle, variant.valuesAlgo, 1.0f, probabilities, v + uint64_t(head * p.lk * p.dv) * bytes,
                          0.0f, y + uint64_t(head * p.lq * p.dv) * bytes, y + uint64_t(head * p.lq * p.dv) * bytes,
                          nullptr, cublasWorkspace, variant.valuesWorkspace, s, name_);
    }
    if (outInterleaved)
      check(k::transpose(y, out.data, p.out, swap, elementType(out), s), "re-laying out its interleaved output");
  }

 private:
  static inline const std::vector<int64_t> kScalarDims{1};

  static uint64_t address(const void* p) { return uint64_t(reinterpret_cast<uintptr_t>(p)); }

  ShapeEntry& shapeFor(AttentionState& state, const StepArgs& args) const {
    for (auto& entry : state.shapes)
      if (sameDims(entry->inputDims, args.inputs)) return *entry;
    auto entry = std::make_unique<ShapeEntry>();
    for (const TensorView& view : args.inputs) entry->inputDims.push_back(view.dims);
    entry->plan =
        attentionPlanOf(layer_, storage_, args.inputs[kAttentionQ].dims, args.inputs[kAttentionK].dims,
                        args.inputs[kAttentionV].dims, hasMask_ ? &args.inputs[kAttentionMask].dims : nullptr);
    if (entry->plan.storedOut != args.outputs[0].dims)
      throw Error(ErrorCode::kInternal, name_ + ": its output is " + dimsToString(args.outputs[0].dims) + ", not " +
                                            dimsToString(entry->plan.storedOut));
    state.shapes.push_back(std::move(entry));
    return *state.shapes.back();
  }

  Variant& variantFor(ShapeEntry& entry, uint32_t alignment, uint64_t budget) const {
    for (auto& v : entry.variants)
      if (v->alignment == alignment) return *v;
    auto v = std::make_unique<Variant>();
    v->alignment = alignment;
    cublasLtHandle_t handle = cublasLtHandle(device_);
    auto choose = [&](std::unique_ptr<LtGemm>& gemm, const GemmShape& shape, cublasLtMatmulAlgo_t& algo,
                      uint64_t& workspace) {
      gemm = std::make_unique<LtGemm>(shape);
      const auto results = gemm->heuristics(handle, 1, budget, alignment);
      if (results.empty())
        throw Error(ErrorCode::kUnsupported, name_ + ": cuBLASLt has no algorithm for a " + shape.describe() +
                                                 " product with pointers aligned to " + std::to_string(alignment) +
                                                 " bytes");
      algo = results[0].algo;
      workspace = results[0].workspaceSize;
    };
    const cublasComputeType_t compute = attentionComputeType(storage_, precision_);
    if (entry.plan.d > 0) choose(v->scores, scoresShape(entry.plan, type_, compute), v->scoresAlgo, v->scoresWorkspace);
    choose(v->values, valuesShape(entry.plan, type_, compute), v->valuesAlgo, v->valuesWorkspace);
    entry.variants.push_back(std::move(v));
    return *entry.variants.back();
  }

  Precision precision_;
  DataType storage_;
  cudaDataType_t type_ = CUDA_R_32F;
  float scale_;
  bool hasMask_;
  std::string name_;  // layer.describe(), made once: launches build no strings
  DeviceCopy zero_;   // fp32 0, for masked rows
};

std::vector<Tactic> attentionTactics(const Layer& layer, Precision precision, const LayerInputs& inputs, CudaDevice&) {
  Tactic tactic;
  tactic.id = std::string("cuda.attention.") + precisionTag(precision);
  tactic.workspaceBytes = kCublasWorkspaceBytes;
  try {
    if (inputs.dims.size() >= 3 && !inputs.dims[kAttentionQ].empty() && !inputs.dims[kAttentionK].empty() &&
        !inputs.dims[kAttentionV].empty()) {
      const bool mask = layer.attrInt("has_mask", 0) != 0 && inputs.dims.size() > kAttentionMask;
      const DataType storage = storageOf(inputs.types.empty() ? DataType::kFloat32 : inputs.types[0], precision);
      const AttentionPlan plan =
          attentionPlanOf(layer, storage, inputs.dims[kAttentionQ], inputs.dims[kAttentionK], inputs.dims[kAttentionV],
                          mask ? &inputs.dims[kAttentionMask] : nullptr);
      tactic.workspaceBytes += plan.cublasAt;
    }
  } catch (const Error&) {
    // The step meets the same problem at its first launch and reports it naming the layer.
  }
  return {tactic};
}

SupportVerdict attentionTensors(const Layer&, Precision, const LayerSignature& tensors) {
  if (auto v = firstRefusal({ranksWithinLimit(tensors),
                             allOfTypes(tensors, {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16})});
      !v.supported)
    return v;
  return {};
}

}  // namespace

void registerAttentionCudaOps(CudaOpRegistry& registry) {
  CudaOp op = stepOp<AttentionStep>(attentionTensors);
  op.instantiate = [](const Layer& layer, const Tactic& tactic, const LayerSignature& signature,
                      CudaDevice& device) -> std::unique_ptr<Step> {
    if (isFlashAttentionTactic(tactic)) return makeFlashAttentionStep(layer, tactic, signature, device);
    if (isSdpaAttentionTactic(tactic)) return makeSdpaAttentionStep(layer, tactic, signature, device);
    return std::make_unique<AttentionStep>(layer, tactic, signature, device);
  };
  // The fused tactics first: the best guess where the builder cannot time them.
  op.tactics = [](const Layer& layer, Precision precision, const LayerInputs& inputs, CudaDevice& device) {
    std::vector<Tactic> tactics = flashAttentionTactics(layer, precision, inputs, device);
    for (auto* more : {sdpaAttentionTactics, attentionTactics})
      for (Tactic& t : more(layer, precision, inputs, device)) tactics.push_back(std::move(t));
    return tactics;
  };
  registry.add(fused::kDomain, fused::kAttention, op);
}

}  // namespace kiln::cuda
