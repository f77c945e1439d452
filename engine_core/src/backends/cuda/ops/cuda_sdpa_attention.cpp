// kiln.Attention on cuDNN's single SDPA operation (cuda_sdpa_attention.h). Q, K, V and the output
// are bound where they are stored: sdpa_plan.h gives cuDNN 4-D views of them through the strides
// the flash kernel reads (attention_plan.h), so interleaved heads and a packed QKV product need no
// copies; a packed layer's K and V start one and two parts into the packed tensor. The plan's
// workspace is the execution plan's; graphs and plans are made once per thread (cudnn_graph.h).
#include "cuda_sdpa_attention.h"

#include "../cuda_precision.h"
#include "../cuda_step.h"
#include "../cudnn_conv.h"
#include "../cudnn_sdpa_graph.h"
#include "attention_plan.h"
#include "sdpa_plan.h"

#include <kiln/error.h>
#include <kiln/shape.h>

#include <algorithm>

namespace kiln::cuda {
namespace {

const std::string kSdpaTactic = "cudnn.sdpa.";
constexpr size_t kEngineCandidates = 4;  // re-resolving a config at run time; tactics list LayerInputs::candidateBudget

// The plan of the layer at these input dims, with cuDNN's views of its tensors.
struct SdpaProblem {
  AttentionPlan plan;
  SdpaGraphProblem graph;
  std::string refusal;  // set: cuDNN cannot take the layer at these dims
};

SdpaProblem problemOf(const Layer& layer, DataType storage, const LayerShapes& dims, int64_t alignment) {
  SdpaProblem p;
  const bool mask = attentionHasMask(layer) && dims.size() > kAttentionMask;
  p.plan = attentionPlanOf(layer, storage, dims[kAttentionQ], dims[kAttentionK], dims[kAttentionV],
                           mask ? &dims[kAttentionMask] : nullptr);
  SdpaLayout layout = sdpaLayoutOf(p.plan, dims, storage);
  p.refusal = std::move(layout.refusal);
  for (size_t t = 0; t < 4; ++t) {
    p.graph.dims[t] = std::move(layout.dims[t]);
    p.graph.strides[t] = std::move(layout.strides[t]);
  }
  p.graph.type = storage;
  p.graph.alignment = alignment;
  return p;
}

// The alignment cuDNN may assume of every pointer bound: the pointers' (a power of two up to 16)
// and, for a packed layer, that of K's and V's offsets into the packed tensor.
int64_t alignmentWithParts(int64_t pointersAlignment, const AttentionPlan& plan, DataType storage) {
  const uint64_t bits = uint64_t(pointersAlignment) | uint64_t(plan.partStride) * byteSize(storage);
  return int64_t(bits & (~bits + 1));
}

struct Resolved {
  SdpaProblem problem;
  std::shared_ptr<CudnnExecutionPlan> plan;
};

// The plan for `wanted` at these dims: its own config where cuDNN takes it here, else the
// heuristics' first that it takes. Throws naming the layer when none.
Resolved resolve(const Layer& layer, DataType storage, const LayerShapes& dims, const EngineChoice& wanted,
                 int64_t alignment, int device) {
  Resolved r{problemOf(layer, storage, dims, alignment), nullptr};
  const std::string what = layer.describe();
  const std::string rebuild = "; build this layer with another tactic (cuda.attention.*)";
  if (!r.problem.refusal.empty())
    throw Error(ErrorCode::kUnsupported, what + ": cuDNN's SDPA cannot take " + r.problem.refusal + rebuild);
  cudnnHandle_t handle = cudnnHandleForThread(device);
  auto graph = cachedSdpaGraph(handle, r.problem.graph, what);
  if (graph) {
    r.plan = cachedSdpaPlan(handle, *graph, r.problem.graph, wanted);
    for (const EngineChoice& choice : r.plan ? std::vector<EngineChoice>{} : graph->rankedEngines(kEngineCandidates))
      if ((r.plan = cachedSdpaPlan(handle, *graph, r.problem.graph, choice))) break;
  }
  if (!r.plan)
    throw Error(ErrorCode::kUnsupported,
                what + ": cuDNN has no engine for the " + r.problem.graph.describe() + rebuild);
  return r;
}

struct ShapeEntry {
  LayerShapes inputDims;
  int64_t alignment = 0;
  Resolved resolved;
};

class SdpaState : public StepState {
 public:
  std::vector<std::unique_ptr<ShapeEntry>> shapes;
};

class SdpaAttentionStep : public CudaStep {
 public:
  SdpaAttentionStep(const Layer& layer, const Tactic& tactic, const LayerSignature& signature, CudaDevice& device)
      : CudaStep(layer, tactic, signature, device,
                 storageOf(outputDeclared(signature), tacticPrecision(layer, tactic))),
        storage_(storageOf(outputDeclared(signature), tacticPrecision(layer, tactic))),
        choice_(EngineChoice::deserialize(tactic.payload, layer.describe())),
        scale_(layer.attrFloat("scale", 1.0f)),
        name_(layer.describe()) {
    if (storage_ != DataType::kFloat16 && storage_ != DataType::kBFloat16)
      throw Error(ErrorCode::kUnsupported, name_ + ": the tactic '" + tactic.id +
                                               "' computes in float16 or bfloat16, not " +
                                               std::string(toString(storage_)) + "; rebuild the plan");
    if (attentionHasMask(layer))
      throw Error(ErrorCode::kUnsupported,
                  name_ + ": the tactic '" + tactic.id +
                      "' adds no mask (cuDNN 9.19's SDPA operation has none); rebuild the plan");
  }

  uint64_t workspaceBytes(std::span<const TensorView> inputs, std::span<const TensorView>) const override {
    LayerShapes dims;
    for (const TensorView& view : inputs) dims.push_back(view.dims);
    if (dims.size() < 3 || dims[kAttentionQ].empty() || dims[kAttentionK].empty() || dims[kAttentionV].empty())
      return 0;  // dims not known yet: asked again when they are
    const AttentionPlan plan = problemOf(layer_, storage_, dims, 16).plan;
    if (plan.empty || plan.lk == 0) return 0;
    const int64_t alignment = alignmentWithParts(16, plan, storage_);
    return resolve(layer_, storage_, dims, choice_, alignment, device_.ordinal).plan->workspaceBytes();
  }

  std::unique_ptr<StepState> createState() const override { return std::make_unique<SdpaState>(); }

  void enqueue(const StepArgs& args, Stream& stream) const override {
    auto* state = dynamic_cast<SdpaState*>(args.state);
    if (!state) throw Error(ErrorCode::kInternal, name_ + ": enqueued without the state its step made");
    const TensorView& out = args.outputs[0];
    const cudaStream_t s = streamOf(stream);
    const char* q = static_cast<const char*>(input(args, kAttentionQ));
    const char* k = static_cast<const char*>(input(args, kAttentionK));
    const char* v = static_cast<const char*>(input(args, kAttentionV));
    const ShapeEntry& entry = shapeFor(*state, args, alignmentOf({q, k, v, out.data}));
    const AttentionPlan& p = entry.resolved.problem.plan;
    if (p.empty) return;
    if (p.lk == 0)  // softmax over no keys: zeros, as the CPU's products give
      return check(cudaMemsetAsync(out.data, 0, uint64_t(out.elementCount()) * byteSize(storage_), s),
                   "zeroing its output");
    const CudnnExecutionPlan& plan = *entry.resolved.plan;
    if (args.workspaceBytes < plan.workspaceBytes())
      throw Error(ErrorCode::kInternal, name_ + ": its workspace of " + std::to_string(args.workspaceBytes) +
                                            " bytes is smaller than the " + std::to_string(plan.workspaceBytes()) +
                                            " cuDNN's plan needs");
    // A packed layer's K and V start one and two parts into the packed tensor.
    const uint64_t partBytes = uint64_t(p.partStride) * byteSize(storage_);
    cudnnHandle_t handle = cudnnHandleOnStream(device_.ordinal, s, name_);
    float scale = scale_;  // by value: cuDNN reads it when it launches
    plan.execute(handle, {kSdpaQ, kSdpaK, kSdpaV, kSdpaO, kSdpaScale},
                 {const_cast<char*>(q), const_cast<char*>(k + partBytes), const_cast<char*>(v + 2 * partBytes),
                  out.data, &scale},
                 args.workspace, name_);
  }

 private:
  const ShapeEntry& shapeFor(SdpaState& state, const StepArgs& args, int64_t pointersAlignment) const {
    for (auto& entry : state.shapes)
      if (sameDims(entry->inputDims, args.inputs) &&
          entry->alignment == alignmentWithParts(pointersAlignment, entry->resolved.problem.plan, storage_))
        return *entry;
    auto entry = std::make_unique<ShapeEntry>();
    for (const TensorView& view : args.inputs) entry->inputDims.push_back(view.dims);
    const AttentionPlan plan = problemOf(layer_, storage_, entry->inputDims, 16).plan;
    if (plan.storedOut != args.outputs[0].dims)
      throw Error(ErrorCode::kInternal, name_ + ": its output is " + dimsToString(args.outputs[0].dims) + ", not " +
                                            dimsToString(plan.storedOut));
    entry->alignment = alignmentWithParts(pointersAlignment, plan, storage_);
    if (plan.empty || plan.lk == 0)
      entry->resolved.problem.plan = plan;
    else
      entry->resolved = resolve(layer_, storage_, entry->inputDims, choice_, entry->alignment, device_.ordinal);
    state.shapes.push_back(std::move(entry));
    return *state.shapes.back();
  }

  DataType storage_;
  EngineChoice choice_;
  float scale_;
  std::string name_;  // layer.describe(), made once: launches build no strings
};

Tactic unavailableTactic(Precision precision, const std::string& why) {
  Tactic t;
  t.id = kSdpaTactic + precisionTag(precision);
  t.unavailable = why;
  return t;
}

}  // namespace

std::vector<Tactic> sdpaAttentionTactics(const Layer& layer, Precision precision, const LayerInputs& inputs,
                                         CudaDevice& device) {
  if (precision != Precision::kFP16 && precision != Precision::kBF16) return {};
  if (inputs.dims.size() < 3 || inputs.dims[kAttentionQ].empty() || inputs.dims[kAttentionK].empty() ||
      inputs.dims[kAttentionV].empty())
    return {};  // dims unknown
  std::string missing;
  if (!cudnnHasSdpaOperation(&missing)) return {unavailableTactic(precision, missing)};
  const DataType storage = storageOf(inputs.types.empty() ? DataType::kFloat32 : inputs.types[0], precision);
  std::vector<Tactic> tactics;
  try {
    SdpaProblem problem = problemOf(layer, storage, inputs.dims, 16);
    if (!problem.refusal.empty()) return {unavailableTactic(precision, problem.refusal)};
    // The parts of a packed layer at offsets that are not 16-byte multiples (H * D off a multiple of 8).
    problem.graph.alignment = alignmentWithParts(16, problem.plan, storage);
    cudnnHandle_t handle = cudnnHandleForThread(device.ordinal);
    auto graph = cachedSdpaGraph(handle, problem.graph, layer.describe());
    if (!graph) return {unavailableTactic(precision, "cuDNN refuses the graph " + problem.graph.describe())};
    const size_t budget = size_t(std::max(1, inputs.candidateBudget));
    for (const EngineChoice& choice : graph->rankedEngines(budget)) {
      auto plan = cachedSdpaPlan(handle, *graph, problem.graph, choice);
      if (!plan) continue;
      Tactic& t = tactics.emplace_back();
      t.id = kSdpaTactic + precisionTag(precision) + ".c" + std::to_string(tactics.size() - 1);
      t.payload = choice.serialize();
      t.workspaceBytes = plan->workspaceBytes();
    }
    if (tactics.empty())
      return {
          unavailableTactic(precision, "cuDNN has no engine config Kiln takes for the " + problem.graph.describe())};
  } catch (const Error& e) {
    return {unavailableTactic(precision, e.what())};  // the two-product step reports a bad layer naming it
  }
  return tactics;
}

bool isSdpaAttentionTactic(const Tactic& tactic) { return tactic.id.rfind(kSdpaTactic, 0) == 0; }

std::unique_ptr<Step> makeSdpaAttentionStep(const Layer& layer, const Tactic& tactic, const LayerSignature& signature,
                                            CudaDevice& device) {
  return std::make_unique<SdpaAttentionStep>(layer, tactic, signature, device);
}

}  // namespace kiln::cuda
