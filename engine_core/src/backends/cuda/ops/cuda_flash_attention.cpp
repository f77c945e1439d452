// kiln.Attention as one fused kernel (kernels/cuda/attention/flash_attention.h): the scores stay
// in registers (nothing goes through the workspace but the key splits' partial outputs), and the products run on tensor
// cores with fp32 accumulation and an fp32 softmax: fp16 / bf16 layers in their storage type, TF32 layers (fp32
// storage) on TF32 operands. The dims are checked by the two-product step's plan (attention_plan.h), whose mask strides
// (0 where the mask broadcasts) the kernel reads directly: a [B, 1, 1, Lk] padding mask or a [1, 1, Lq, Lk] causal one
// is never expanded.
#include "cuda_flash_attention.h"

#include "../../../ops/fused.h"
#include "../cuda_precision.h"
#include "../cuda_step.h"
#include "attention_plan.h"

#include <kernels/cuda/attention/flash_attention.h>

#include <kiln/error.h>

#include <utility>

namespace kiln::cuda {
namespace {

namespace k = kernels::cuda;

const std::string kFlashTactic = "cuda.attention.flash.";
const std::string kTallTile = "q128.";   // the 128-row tactic's tag, before the precision
const std::string kShortTile = "q32.";   // the 32-row one's
const std::string kKeySplits = "split.";  // keys split over blocks (few batch-heads: batch 1)

k::FlashQueryTile tileOf(const std::string& tacticId) {
  if (tacticId.find(kTallTile) != std::string::npos) return k::FlashQueryTile::kRows128;
  if (tacticId.find(kShortTile) != std::string::npos) return k::FlashQueryTile::kRows32;
  return k::FlashQueryTile::kRows64;
}

// The kernel's problem for dense Q, K, V and output stored as the plan says: interleaved tensors
// are read and written in place through their strides.
k::FlashAttentionProblem flashProblemOf(const AttentionPlan& plan, const LayerShapes& storedInputs, float scale) {
  k::FlashAttentionProblem p;
  const size_t batchRank = plan.q.size() - 2;
  p.batchRank = int(batchRank);
  p.queryLength = plan.lq;
  p.keyLength = plan.lk;
  p.headDim = plan.d;
  p.valueDim = plan.dv;
  p.keyTransposed = plan.kTransposed;
  p.scale = scale;
  const AttentionStrides all = attentionStridesOf(plan, storedInputs);
  k::FlashStrides* views[4] = {&p.q, &p.k, &p.v, &p.out};
  for (size_t t = 0; t < 4; ++t) {
    const std::vector<int64_t>& strides = all.of[t];
    for (size_t i = 0; i < batchRank; ++i) views[t]->batch[i] = strides[i];
    views[t]->row = strides[batchRank];
    views[t]->column = strides[batchRank + 1];
  }
  for (size_t i = 0; i < batchRank; ++i) p.batchDims[i] = plan.q[i];
  if (plan.hasMask) {
    for (size_t i = 0; i < batchRank; ++i) p.mask.batch[i] = plan.maskStrides[i];
    p.mask.row = plan.maskStrides[batchRank];
    p.mask.column = plan.maskStrides[batchRank + 1];
  }
  return p;
}

bool splitsKeys(const std::string& tacticId) { return tacticId.find(kKeySplits) != std::string::npos; }

struct FlashShape {
  LayerShapes inputDims;
  k::FlashAttentionProblem problem;
  int64_t partStride = 0;  // elements between a packed layer's Q, K and V (0: not packed)
  std::vector<int64_t> storedOut;  // the output's dims as stored
  int64_t keySplits = 1;
  uint64_t workspaceBytes = 0;  // the key splits' partial outputs
  bool empty = false;
};

// The layer's problem at these (stored) input dims, and the key splits a tactic that splits keys
// takes there (flashKeySplits' choice for the device).
FlashShape flashShapeOf(const Layer& layer, DataType storage, const LayerShapes& dims, float scale, bool mask,
                        bool splits, k::FlashQueryTile tile, int multiprocessors) {
  const AttentionPlan plan = attentionPlanOf(layer, storage, dims[kAttentionQ], dims[kAttentionK], dims[kAttentionV],
                                             mask ? &dims[kAttentionMask] : nullptr);
  FlashShape shape;
  shape.inputDims = dims;
  shape.problem = flashProblemOf(plan, dims, scale);
  shape.partStride = plan.partStride;
  shape.storedOut = plan.storedOut;
  shape.empty = plan.empty;
  if (splits && !shape.empty) {
    const k::ElementType type = *elementTypeOf(storage);
    shape.keySplits = k::flashKeySplits(shape.problem, type, tile, multiprocessors);
    shape.workspaceBytes = k::flashAttentionWorkspaceBytes(shape.problem, type, shape.keySplits);
  }
  return shape;
}

class FlashAttentionState : public StepState {
 public:
  std::vector<FlashShape> shapes;
};

class FlashAttentionStep : public CudaStep {
 public:
  FlashAttentionStep(const Layer& layer, const Tactic& tactic, const LayerSignature& signature, CudaDevice& device)
      : CudaStep(layer, tactic, signature, device,
                 storageOf(outputDeclared(signature), tacticPrecision(layer, tactic))),
        storage_(storageOf(outputDeclared(signature), tacticPrecision(layer, tactic))),
        tile_(tileOf(tactic.id)),
        splitsKeys_(splitsKeys(tactic.id)),
        scale_(layer.attrFloat("scale", 1.0f)),
        hasMask_(attentionHasMask(layer)),
        name_(layer.describe()) {
    const bool tf32 = tacticPrecision(layer, tactic) == Precision::kTF32 && storage_ == DataType::kFloat32;
    if (storage_ != DataType::kFloat16 && storage_ != DataType::kBFloat16 && !tf32)
      throw Error(ErrorCode::kUnsupported, name_ + ": the tactic '" + tactic.id +
                                               "' computes in float16, bfloat16 or TF32, not " +
                                               std::string(toString(storage_)) + "; rebuild the plan");
  }

  std::unique_ptr<StepState> createState() const override { return std::make_unique<FlashAttentionState>(); }

  uint64_t workspaceBytes(std::span<const TensorView> inputs, std::span<const TensorView>) const override {
    if (!splitsKeys_ || inputs.size() < 3) return 0;
    LayerShapes dims;
    for (const TensorView& view : inputs) dims.push_back(view.dims);
    try {
      return shapeAt(dims).workspaceBytes;
    } catch (const Error&) {
      return 0;  // the launch reports it
    }
  }

  void enqueue(const StepArgs& args, Stream& stream) const override {
    auto* state = dynamic_cast<FlashAttentionState*>(args.state);
    if (!state) throw Error(ErrorCode::kInternal, name_ + ": enqueued without the state its step made");
    const FlashShape& shape = shapeFor(*state, args);
    if (shape.empty) return;
    const void* mask = nullptr;
    k::ElementType maskType = k::ElementType::kFloat32;
    if (hasMask_) {
      mask = input(args, kAttentionMask);
      // A weight's upload is in the storage type; an activation arrives in it too.
      const DataType stored = weightType(kAttentionMask) != DataType::kUndefined ? weightType(kAttentionMask)
                                                                                 : args.inputs[kAttentionMask].dtype;
      maskType = *elementTypeOf(stored);
    }
    // A packed layer's K and V start one and two parts into the packed tensor.
    const uint64_t partBytes = uint64_t(shape.partStride) * byteSize(storage_);
    const char* keys = static_cast<const char*>(input(args, kAttentionK)) + partBytes;
    const char* values = static_cast<const char*>(input(args, kAttentionV)) + 2 * partBytes;
    const k::FlashLaunch launch{tile_, shape.keySplits, args.workspace};
    if (shape.workspaceBytes > args.workspaceBytes)
      throw Error(ErrorCode::kInternal, name_ + ": its workspace of " + std::to_string(args.workspaceBytes) +
                                            " bytes is smaller than its key splits need");
    check(k::launchFlashAttention(shape.problem, input(args, kAttentionQ), keys, values, mask, maskType,
                                  args.outputs[0].data, elementType(args.outputs[0]), launch, streamOf(stream)),
          "launching its flash-attention kernel");
  }

 private:
  const FlashShape& shapeFor(FlashAttentionState& state, const StepArgs& args) const {
    for (const FlashShape& shape : state.shapes)
      if (sameDims(shape.inputDims, args.inputs)) return shape;
    const std::vector<int64_t>& q = args.inputs[kAttentionQ].dims;
    LayerShapes dims;
    for (const TensorView& view : args.inputs) dims.push_back(view.dims);
    FlashShape shape = shapeAt(dims);
    if (shape.storedOut != args.outputs[0].dims)
      throw Error(ErrorCode::kInternal, name_ + ": its output is " + dimsToString(args.outputs[0].dims) + ", not " +
                                            dimsToString(shape.storedOut));
    if (!shape.empty && !k::flashAttentionTakes(shape.problem, *elementTypeOf(storage_)))
      throw Error(ErrorCode::kUnsupported,
                  name_ + ": the flash-attention kernel takes head dims up to " +
                      std::to_string(k::kFlashMaxHeadDim) + ", not Q " + dimsToString(q) + " and V " +
                      dimsToString(args.inputs[kAttentionV].dims) + "; rebuild with the tactic 'cuda.attention." +
                      precisionTag(tacticPrecision(layer_, tactic_)) + "'");
    state.shapes.push_back(std::move(shape));
    return state.shapes.back();
  }

  FlashShape shapeAt(const LayerShapes& dims) const {
    return flashShapeOf(layer_, storage_, dims, scale_, hasMask_, splitsKeys_, tile_,
                        device_.properties.multiProcessorCount);
  }

  DataType storage_;
  k::FlashQueryTile tile_;
  bool splitsKeys_;
  float scale_;
  bool hasMask_;
  std::string name_;  // layer.describe(), made once: launches build no strings
};

}  // namespace

std::vector<Tactic> flashAttentionTactics(const Layer& layer, Precision precision, const LayerInputs& inputs,
                                          CudaDevice& device) {
  if (precision != Precision::kFP16 && precision != Precision::kBF16 && precision != Precision::kTF32) return {};
  if (device.properties.major < 8) return {};  // mma.sync m16n8k16 / m16n8k8.tf32 and cp.async: Ampere on
  if (inputs.dims.size() < 3 || inputs.dims[kAttentionQ].empty() || inputs.dims[kAttentionK].empty() ||
      inputs.dims[kAttentionV].empty())
    return {};  // dims unknown: the head dims may be past the kernel's
  const bool mask = attentionHasMask(layer) && inputs.dims.size() > kAttentionMask;
  const DataType storage = storageOf(inputs.types.empty() ? DataType::kFloat32 : inputs.types[0], precision);
  const auto type = elementTypeOf(storage);
  std::vector<Tactic> tactics(3);
  tactics[0].id = kFlashTactic + precisionTag(precision);
  tactics[1].id = kFlashTactic + kTallTile + precisionTag(precision);
  tactics[2].id = kFlashTactic + kShortTile + precisionTag(precision);
  try {
    const int multiprocessors = device.properties.multiProcessorCount;
    const FlashShape shape =
        flashShapeOf(layer, storage, inputs.dims, 1.0f, mask, false, k::FlashQueryTile::kRows64, multiprocessors);
    if (!type || !k::flashAttentionTakes(shape.problem, *type)) return {};
    // Key splits where the blocks would leave the device mostly idle: 64- and 32-row tiles.
    for (const auto& [tile, tag] :
         {std::pair{k::FlashQueryTile::kRows64, std::string()}, std::pair{k::FlashQueryTile::kRows32, kShortTile}}) {
      const int64_t splits = k::flashKeySplits(shape.problem, *type, tile, multiprocessors);
      if (shape.empty || splits == 1) continue;
      Tactic& t = tactics.emplace_back();
      t.id = kFlashTactic + tag + kKeySplits + precisionTag(precision);
      t.workspaceBytes = k::flashAttentionWorkspaceBytes(shape.problem, *type, splits);
    }
  } catch (const Error&) {
    return {};  // the two-product step meets the same problem and reports it naming the layer
  }
  return tactics;
}

bool isFlashAttentionTactic(const Tactic& tactic) { return tactic.id.rfind(kFlashTactic, 0) == 0; }

std::unique_ptr<Step> makeFlashAttentionStep(const Layer& layer, const Tactic& tactic, const LayerSignature& signature,
                                             CudaDevice& device) {
  return std::make_unique<FlashAttentionStep>(layer, tactic, signature, device);
}

}  // namespace kiln::cuda
