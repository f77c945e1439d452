// kiln.Attention on the GPU (semantics: ops/fused.cpp and the CPU kernel, kernels/cpu/attention):
//   y = softmax(q · kᵀ · scale + mask) · v
// as two strided-batched cuBLASLt products around the softmax kernel, in fp32 (exact), tf32, fp16
// and bf16. The scores are fp32 in the workspace whatever the storage type (the first product
// writes fp32 from fp16 / bf16 operands), so the mask is added and the softmax taken in fp32; for
// fp16 / bf16 the probabilities are narrowed for the second product. A row masked entirely to
// -inf gives zeros, as on the CPU (the softmax kernel gives NaN there; those rows are zeroed).
// Batch-heads go through in chunks of whole trailing batch dims, so the scores of at most
// 256 MiB are in the workspace at once.
#include "../../../ops/fused.h"
#include "../cublaslt_matmul.h"
#include "../cuda_ops.h"
#include "../cuda_step.h"

#include <kernels/cuda/elementwise/binary.h>
#include <kernels/cuda/elementwise/cast.h>
#include <kernels/cuda/elementwise/unary.h>
#include <kernels/cuda/softmax/softmax.h>

#include <kiln/error.h>

#include <algorithm>

namespace kiln::cuda {
namespace {

namespace k = kernels::cuda;

constexpr uint64_t kCublasWorkspaceBytes = uint64_t(32) << 20;
constexpr uint64_t kScoresBudget = uint64_t(256) << 20;
constexpr uint64_t kAlignment = 256;

uint64_t alignUp(uint64_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

enum Input : size_t { kQ = 0, kK = 1, kV = 2, kMask = 3 };

int64_t product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end; ++i) n *= dims[i];
  return n;
}

std::string dimsText(const std::vector<int64_t>& dims) { return dimsToString(dims); }

// One set of input dims: the products per chunk, the chunks, and the workspace they use.
struct AttentionPlan {
  int64_t lq = 0, lk = 0, d = 0, dv = 0;
  bool kTransposed = false;  // K given as [..., D, Lk]
  int64_t chunk = 1;  // batch-heads per chunk: the product of the trailing batch dims from `split`
  size_t split = 0;
  std::vector<int64_t> scoreDims;     // one chunk's scores: [trailing batch dims..., Lq, Lk]
  std::vector<int64_t> maskDims;      // the mask as it broadcasts against scoreDims
  std::vector<int64_t> maskOffsets;   // per chunk, elements into the mask
  int64_t chunks = 1;
  bool hasMask = false, narrowProbabilities = false, empty = false;
  int64_t maskElements = 0;
  // Workspace: scores (fp32), probabilities (storage type, when narrower), NaN flags (with a
  // mask), the mask widened to fp32 (when stored narrower), then cuBLASLt's.
  uint64_t scoresAt = 0, probabilitiesAt = 0, flagsAt = 0, maskAt = 0, cublasAt = 0;
  uint64_t offsetBits = 0;  // every chunk's operand offsets in bytes, OR-ed (pointer alignment)
};

AttentionPlan planOf(const Layer& layer, DataType storage, const std::vector<int64_t>& q,
                     const std::vector<int64_t>& kDims, const std::vector<int64_t>& v, const std::vector<int64_t>* mask,
                     uint64_t scoresBudget = kScoresBudget) {
  const bool kTransposed = layer.attrInt("k_transposed", 0) != 0;
  const size_t rank = q.size();
  if (rank < 2 || kDims.size() != rank || v.size() != rank)
    throw Error(ErrorCode::kInvalidArgument, layer.describe() + ": Q, K and V must have one rank, 2 or more; got " +
                                                 dimsText(q) + ", " + dimsText(kDims) + ", " + dimsText(v));
  for (size_t i = 0; i + 2 < rank; ++i)
    if (kDims[i] != q[i] || v[i] != q[i])
      throw Error(ErrorCode::kInvalidArgument, layer.describe() + ": Q, K and V must have the same batch dims; got " +
                                                   dimsText(q) + ", " + dimsText(kDims) + ", " + dimsText(v));
  AttentionPlan p;
  p.kTransposed = kTransposed;
  p.lq = q[rank - 2];
  p.d = q[rank - 1];
  p.lk = kTransposed ? kDims[rank - 1] : kDims[rank - 2];
  p.dv = v[rank - 1];
  if ((kTransposed ? kDims[rank - 2] : kDims[rank - 1]) != p.d || v[rank - 2] != p.lk)
    throw Error(ErrorCode::kInvalidArgument, layer.describe() + ": Q " + dimsText(q) + ", K " + dimsText(kDims) +
                                                 " and V " + dimsText(v) + " do not agree on the head and key dims");
  const int64_t batch = product(q, 0, rank - 2);
  p.empty = batch * p.lq * p.dv == 0;
  p.narrowProbabilities = storage != DataType::kFloat32;
  p.hasMask = mask != nullptr;
  // Chunks of whole trailing batch dims, as many as fit the budget (at least one batch-head).
  const uint64_t perHead = uint64_t(p.lq) * uint64_t(p.lk) *
                           (4 + (p.narrowProbabilities ? byteSize(storage) : 0) + (p.hasMask ? 1 : 0));
  p.split = rank - 2;
  while (p.split > 0 && uint64_t(product(q, p.split - 1, rank - 2)) * perHead <= scoresBudget) --p.split;
  p.chunk = product(q, p.split, rank - 2);
  p.chunks = product(q, 0, p.split);
  p.scoreDims.assign(q.begin() + std::ptrdiff_t(p.split), q.end() - 2);
  p.scoreDims.push_back(p.lq);
  p.scoreDims.push_back(p.lk);
  p.maskOffsets.assign(size_t(p.chunks), 0);
  if (mask) {
    if (mask->size() > rank)
      throw Error(ErrorCode::kInvalidArgument, layer.describe() + ": the mask " + dimsText(*mask) +
                                                   " has more dims than the scores");
    // The mask right-aligned against the scores [batch..., Lq, Lk], with its strides (0 where it
    // broadcasts); the chunks' offsets come from the leading dims, the rest broadcasts per chunk.
    std::vector<int64_t> full(rank, 1), strides(rank, 0);
    std::copy(mask->begin(), mask->end(), full.begin() + std::ptrdiff_t(rank - mask->size()));
    std::vector<int64_t> scores(q.begin(), q.end() - 2);
    scores.push_back(p.lq);
    scores.push_back(p.lk);
    int64_t stride = 1;
    for (size_t i = rank; i-- > 0;) {
      if (full[i] != 1 && full[i] != scores[i])
        throw Error(ErrorCode::kInvalidArgument, layer.describe() + ": the mask " + dimsText(*mask) +
                                                     " does not broadcast to the scores " + dimsText(scores));
      strides[i] = full[i] == 1 ? 0 : stride;
      stride *= full[i];
    }
    p.maskElements = stride;
    p.maskDims.assign(full.begin() + std::ptrdiff_t(p.split), full.end());
    for (int64_t c = 0; c < p.chunks; ++c) {
      int64_t rest = c, offset = 0;
      for (size_t i = p.split; i-- > 0;) {
        offset += (rest % q[i]) * strides[i];
        rest /= q[i];
      }
      p.maskOffsets[size_t(c)] = offset;
    }
  }
  const uint64_t scoreElements = uint64_t(p.chunk) * uint64_t(p.lq) * uint64_t(p.lk);
  p.scoresAt = 0;
  p.probabilitiesAt = alignUp(scoreElements * 4);
  p.flagsAt = p.probabilitiesAt + (p.narrowProbabilities ? alignUp(scoreElements * byteSize(storage)) : 0);
  p.maskAt = p.flagsAt + (p.hasMask ? alignUp(scoreElements) : 0);
  p.cublasAt = p.maskAt + (p.hasMask && storage != DataType::kFloat32 ? alignUp(uint64_t(p.maskElements) * 4) : 0);
  const uint64_t bytes = byteSize(storage);
  for (int64_t c = 0; c < p.chunks; ++c)
    for (int64_t matrix : {p.lq * p.d, p.lk * p.d, p.lk * p.dv, p.lq * p.dv})
      p.offsetBits |= uint64_t(c * p.chunk * matrix) * bytes;
  return p;
}

cublasComputeType_t computeTypeOf(DataType storage, Precision precision) {
  return storage == DataType::kFloat32 && precision == Precision::kTF32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                                        : CUBLAS_COMPUTE_32F;
}

// A chunk's scores = q · kᵀ (scaled at launch), written in fp32 whatever `type` q and k have.
GemmShape scoresShape(const AttentionPlan& p, cudaDataType_t type, cublasComputeType_t compute) {
  GemmShape g;
  g.m = p.lq;
  g.n = p.lk;
  g.k = p.d;
  g.transB = !p.kTransposed;  // K is [Lk, D] (n × k): used transposed; [D, Lk] (k_transposed) as is
  g.batch = p.chunk;
  g.strideA = p.lq * p.d;
  g.strideB = p.lk * p.d;
  g.strideC = g.strideD = p.lq * p.lk;
  g.abType = type;
  g.cdType = CUDA_R_32F;
  g.compute = compute;
  return g;
}

// A chunk's y = probabilities · v.
GemmShape valuesShape(const AttentionPlan& p, cudaDataType_t type, cublasComputeType_t compute) {
  GemmShape g;
  g.m = p.lq;
  g.n = p.dv;
  g.k = p.lk;
  g.batch = p.chunk;
  g.strideA = p.lq * p.lk;
  g.strideB = p.lk * p.dv;
  g.strideC = g.strideD = p.lq * p.dv;
  g.abType = g.cdType = type;
  g.compute = compute;
  return g;
}

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

bool sameDims(const LayerShapes& key, std::span<const TensorView> inputs) {
  if (key.size() != inputs.size()) return false;
  for (size_t i = 0; i < key.size(); ++i)
    if (key[i] != inputs[i].dims) return false;
  return true;
}

DataType outputDeclared(const LayerSignature& signature) {
  return signature.outputs.empty() || !signature.outputs[0] ? DataType::kFloat32 : signature.outputs[0]->dtype;
}

class AttentionStep : public CudaStep {
 public:
  AttentionStep(const Layer& layer, const Tactic& tactic, const LayerSignature& signature, CudaDevice& device)
      : CudaStep(layer, tactic, signature, device, storageOf(outputDeclared(signature), tacticPrecision(layer, tactic))),
        precision_(tacticPrecision(layer, tactic)),
        storage_(storageOf(outputDeclared(signature), precision_)),
        scale_(layer.attrFloat("scale", 1.0f)),
        hasMask_(layer.attrInt("has_mask", 0) != 0 && layer.inputs.size() > kMask && !layer.inputs[kMask].empty()),
        name_(layer.describe()) {
    const auto type = cublasTypeOf(storage_);
    if (!type)
      throw Error(ErrorCode::kUnsupported, name_ + ": attention takes float32, float16 or bfloat16, not " +
                                               std::string(toString(storage_)));
    type_ = *type;
    zero_ = deviceScalar(device.allocator, 0.0f, DataType::kFloat32);
  }

  uint64_t workspaceBytes(std::span<const TensorView> inputs, std::span<const TensorView>) const override {
    if (inputs.size() < 3 || inputs[kQ].dims.empty() || inputs[kK].dims.empty() || inputs[kV].dims.empty())
      return 0;  // dims not known yet: asked again when they are
    const AttentionPlan plan = planOf(layer_, storage_, inputs[kQ].dims, inputs[kK].dims, inputs[kV].dims,
                                      hasMask_ && inputs.size() > kMask ? &inputs[kMask].dims : nullptr);
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
    const char *q = static_cast<const char*>(input(args, kQ)), *kp = static_cast<const char*>(input(args, kK)),
               *v = static_cast<const char*>(input(args, kV));
    char* y = static_cast<char*>(out.data);
    if (args.workspaceBytes < p.cublasAt)
      throw Error(ErrorCode::kInternal, name_ + ": its workspace of " + std::to_string(args.workspaceBytes) +
                                            " bytes is smaller than the " + std::to_string(p.cublasAt) +
                                            " its scores need");
    const uint32_t alignment = commonAlignment({address(q), address(kp), address(v), address(y), p.offsetBits});
    Variant& variant = variantFor(entry, alignment, std::min(args.workspaceBytes - p.cublasAt, kCublasWorkspaceBytes));
    char* workspace = static_cast<char*>(args.workspace);
    float* scores = reinterpret_cast<float*>(workspace + p.scoresAt);
    void* probabilities = p.narrowProbabilities ? workspace + p.probabilitiesAt : static_cast<void*>(scores);
    void* flags = workspace + p.flagsAt;
    void* cublasWorkspace = workspace + p.cublasAt;
    const float* mask = nullptr;
    if (p.hasMask) {
      if (storage_ == DataType::kFloat32) {
        mask = static_cast<const float*>(input(args, kMask));
      } else {  // the mask widened to fp32 once, for the fp32 scores
        // A weight's upload is in the storage type; an activation arrives in it too.
        const DataType stored = weightType(kMask) != DataType::kUndefined ? weightType(kMask) : args.inputs[kMask].dtype;
        check(k::launchCast(input(args, kMask), *elementTypeOf(stored), workspace + p.maskAt,
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
        check(k::launchBinary(kernels::BinaryOp::kAdd, scores, p.scoreDims, mask + p.maskOffsets[size_t(c)],
                              p.maskDims, scores, p.scoreDims, k::ElementType::kFloat32, s),
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
  }

 private:
  static inline const std::vector<int64_t> kScalarDims{1};

  static uint64_t address(const void* p) { return uint64_t(reinterpret_cast<uintptr_t>(p)); }

  ShapeEntry& shapeFor(AttentionState& state, const StepArgs& args) const {
    for (auto& entry : state.shapes)
      if (sameDims(entry->inputDims, args.inputs)) return *entry;
    auto entry = std::make_unique<ShapeEntry>();
    for (const TensorView& view : args.inputs) entry->inputDims.push_back(view.dims);
    entry->plan = planOf(layer_, storage_, args.inputs[kQ].dims, args.inputs[kK].dims, args.inputs[kV].dims,
                         hasMask_ ? &args.inputs[kMask].dims : nullptr);
    std::vector<int64_t> expected(args.inputs[kQ].dims.begin(), args.inputs[kQ].dims.end() - 1);
    expected.push_back(entry->plan.dv);
    if (expected != args.outputs[0].dims)
      throw Error(ErrorCode::kInternal, name_ + ": its output is " + dimsText(args.outputs[0].dims) + ", not " +
                                            dimsText(expected));
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
    const cublasComputeType_t compute = computeTypeOf(storage_, precision_);
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
    if (inputs.dims.size() >= 3 && !inputs.dims[kQ].empty() && !inputs.dims[kK].empty() && !inputs.dims[kV].empty()) {
      const bool mask = layer.attrInt("has_mask", 0) != 0 && inputs.dims.size() > kMask;
      const DataType storage = storageOf(inputs.types.empty() ? DataType::kFloat32 : inputs.types[0], precision);
      const AttentionPlan plan = planOf(layer, storage, inputs.dims[kQ], inputs.dims[kK], inputs.dims[kV],
                                        mask ? &inputs.dims[kMask] : nullptr);
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
  op.tactics = attentionTactics;
  registry.add(fused::kDomain, fused::kAttention, op);
}

}  // namespace kiln::cuda
