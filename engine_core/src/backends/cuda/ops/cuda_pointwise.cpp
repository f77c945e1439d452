// kiln.Pointwise (passes/fuse_pointwise.cpp) on the GPU, two tactics:
// - nvrtc.pointwise.<precision> (listed first): the body as one kernel generated from it
//   (pointwise_codegen.cpp) and compiled with NVRTC for this GPU while the builder lists tactics;
//   the cubin travels in the plan as the tactic's payload (pointwise_nvrtc_step.cpp). It reads and
//   writes channels-last 4-D tensors too. Bodies the generator refuses (integer math, ops it lacks)
//   get no such tactic (the build report lists it as "unavailable: <why>");
//   `kiln build --tactic-sources -nvrtc` switches it off.
// - cuda.kiln.pointwise.<precision>: the body's elementwise layers one by one with the CUDA steps
//   those ops have on their own (kernels/cuda/elementwise), intermediates in this step's workspace
//   (first fit; a buffer is free again once its last reader has run), linear layout only.
// Either way the body is typed once with the layer's storage types (the tactic names the
// precision: float32 tensors and constants are stored in its type, as the builder stores them
// around unfused layers).
#include "../../../ops/elementwise.h"
#include "../../../ops/fused.h"
#include "../../../runtime/precision_convert.h"
#include "../cuda_ops.h"
#include "../cuda_step.h"
#include "pointwise_nvrtc_step.h"

#include <kiln/error.h>

#include <algorithm>
#include <map>

namespace kiln::cuda {
namespace {

uint64_t aligned(uint64_t bytes) { return (bytes + 255) / 256 * 256; }

// The body typed for the layer's declared input types (and shapes where known; with `precision`,
// stored as that precision stores its float32 tensors and constants).
std::unique_ptr<Network> typedBody(const Layer& layer, const std::vector<DataType>& types,
                                   const std::vector<const Shape*>& shapes, std::optional<Precision> precision) {
  auto body = std::make_unique<Network>(layer.attrGraph("body"));
  if (body->inputs().size() != layer.inputs.size() || body->outputs().size() != 1)
    throw Error(ErrorCode::kInvalidArgument, layer.describe() + ": its body needs one input per layer input and one output");
  for (size_t i = 0; i < layer.inputs.size(); ++i) {
    Tensor& declared = body->tensor(body->inputs()[i]);
    if (i < types.size() && types[i] != DataType::kUndefined) declared.dtype = types[i];
    if (i < shapes.size() && shapes[i]) declared.shape = *shapes[i];
  }
  body->inferShapes();
  if (!precision) return body;
  for (const std::string& name : body->tensorNames()) {
    Tensor& t = body->tensor(name);
    const DataType stored = storageOf(t.dtype, *precision);
    if (stored == t.dtype) continue;
    if (t.constant) t.constant = narrowInPlace(t.constant->clone(), stored);
    t.dtype = stored;
  }
  return body;
}

std::unique_ptr<Network> typedBody(const Layer& layer, const LayerSignature& signature,
                                   std::optional<Precision> precision) {
  std::vector<DataType> types;
  std::vector<const Shape*> shapes;
  for (size_t i = 0; i < layer.inputs.size(); ++i) {
    const Tensor* outer = i < signature.inputs.size() ? signature.inputs[i] : nullptr;
    types.push_back(outer ? outer->dtype : DataType::kUndefined);
    shapes.push_back(outer ? &outer->shape : nullptr);
  }
  return typedBody(layer, types, shapes, precision);
}

// Numpy broadcast of `dims` (the output dims of an elementwise layer).
std::vector<int64_t> broadcastDims(const Layer& layer, const std::vector<std::vector<int64_t>>& dims) {
  size_t rank = 0;
  for (const auto& d : dims) rank = std::max(rank, d.size());
  std::vector<int64_t> out(rank, 1);
  for (const auto& d : dims)
    for (size_t a = 0; a < d.size(); ++a) {
      int64_t& o = out[rank - d.size() + a];
      if (d[a] == o || d[a] == 1) continue;
      if (o != 1)
        throw Error(ErrorCode::kInvalidArgument, layer.describe() + ": its inputs' dims do not broadcast (in a kiln.Pointwise body)");
      o = d[a];
    }
  return out;
}

class PointwiseStep : public CudaStep {
 public:
  PointwiseStep(const Layer& layer, const Tactic& tactic, const LayerSignature& signature, CudaDevice& device)
      : CudaStep(layer, tactic, signature, device),
        body_(typedBody(layer, signature, tacticPrecision(layer, tactic))) {
    const std::vector<Layer>& layers = body_->layers();
    if (layers.empty() || layers.back().outputs.at(0) != body_->outputs()[0])
      throw Error(ErrorCode::kInvalidArgument, layer.describe() + ": its body's last layer must write its output");
    for (size_t i = 0; i < layer.inputs.size(); ++i) producedBy_[body_->inputs()[i]] = {kOuterInput, i};
    for (size_t j = 0; j < layers.size(); ++j) {
      const Layer& l = layers[j];
      const CudaOp* op = CudaOpRegistry::instance().find(l.domain, l.opType);
      if (!op)
        throw Error(ErrorCode::kInvalidArgument, layer.describe() + ": its body's " + l.describe() + " has no CUDA kernel");
      const Tactic own{defaultTacticId(l)};
      steps_.push_back(op->instantiate(l, own, layerSignature(*body_, l), device));
      producedBy_[l.outputs.at(0)] = {kBodyLayer, j};
    }
  }

  uint64_t workspaceBytes(std::span<const TensorView> inputs, std::span<const TensorView> outputs) const override {
    return plan(inputs, outputs).bytes;
  }

  void enqueue(const StepArgs& args, Stream& stream) const override {
    const Plan p = plan(args.inputs, args.outputs);
    char* workspace = static_cast<char*>(args.workspace);
    std::vector<TensorView> results(steps_.size());  // each body layer's output, in the workspace
    for (size_t j = 0; j < steps_.size(); ++j) {
      results[j] = p.views[j].outputs[0];
      results[j].data = j + 1 == steps_.size() ? args.outputs[0].data : workspace + p.offsets[j];
    }
    for (size_t j = 0; j < steps_.size(); ++j) {
      std::vector<TensorView> inputs = p.views[j].inputs;
      for (size_t k = 0; k < inputs.size(); ++k) {
        const Source& from = p.views[j].sources[k];
        if (from.kind == kOuterInput) inputs[k].data = args.inputs[from.index].data;
        if (from.kind == kBodyLayer) inputs[k].data = results[from.index].data;
      }
      TensorView out = results[j];
      StepArgs sub;
      sub.inputs = inputs;
      sub.outputs = std::span<TensorView>(&out, 1);
      sub.workspace = workspace + p.stepWorkspace;
      sub.workspaceBytes = p.bytes - p.stepWorkspace;
      steps_[j]->enqueue(sub, stream);
    }
  }

 private:
  enum SourceKind { kOuterInput, kBodyLayer, kConstant, kAbsent };
  struct Source {
    SourceKind kind = kAbsent;
    size_t index = 0;
  };
  struct LayerViews {
    std::vector<TensorView> inputs, outputs;
    std::vector<Source> sources;
  };
  struct Plan {
    std::vector<LayerViews> views;  // data set for constants only
    std::vector<uint64_t> offsets;  // of each body layer's output in the workspace
    uint64_t stepWorkspace = 0;     // where the body steps' own scratch starts
    uint64_t bytes = 0;
  };

  // Every body tensor's view at these input dims, and where intermediates live: first fit, a
  // buffer free again once its last reader has run.
  Plan plan(std::span<const TensorView> inputs, std::span<const TensorView> outputs) const {
    Plan p;
    const std::vector<Layer>& layers = body_->layers();
    std::vector<size_t> lastUse(layers.size(), 0);
    for (size_t j = 0; j < layers.size(); ++j) {
      LayerViews v;
      std::vector<std::vector<int64_t>> dims;
      for (const std::string& name : layers[j].inputs) {
        TensorView view;
        Source from;
        if (!name.empty()) {
          const Tensor& t = body_->tensor(name);
          if (t.constant) {
            from.kind = kConstant;
            view = {t.constant->dtype(), t.constant->dims()};
            view.data = const_cast<void*>(t.constant->rawData());
            view.isConstant = true;
          } else {
            from = producedBy_.at(name);
            view = from.kind == kOuterInput ? inputs[from.index] : p.views[from.index].outputs[0];
            if (from.kind == kBodyLayer) lastUse[from.index] = j;
          }
          dims.push_back(view.dims);
        }
        v.inputs.push_back(view);
        v.sources.push_back(from);
      }
      if (dims.size() == 2) dims[1] = alignLegacyBroadcast(layers[j], dims[0].size(), dims[1]);
      TensorView out;
      out.dtype = body_->tensor(layers[j].outputs[0]).dtype;
      out.dims = j + 1 == layers.size() ? outputs[0].dims : broadcastDims(layers[j], dims);
      out.space = MemorySpace::kDevice;
      v.outputs.push_back(out);
      p.views.push_back(std::move(v));
    }
    // First fit over the live intermediates (the last layer writes the step's output).
    std::map<uint64_t, uint64_t> live;  // offset -> bytes
    std::vector<std::vector<size_t>> freedAfter(layers.size());
    p.offsets.assign(layers.size(), 0);
    uint64_t top = 0;
    for (size_t j = 0; j + 1 < layers.size(); ++j) {
      const uint64_t bytes = aligned(p.views[j].outputs[0].byteSize());
      uint64_t at = 0;
      for (const auto& [offset, size] : live) {
        if (at + bytes <= offset) break;
        at = std::max(at, offset + size);
      }
      live[at] = bytes;
      p.offsets[j] = at;
      top = std::max(top, at + bytes);
      freedAfter[std::max(lastUse[j], j)].push_back(j);
      for (size_t done : freedAfter[j]) live.erase(p.offsets[done]);
    }
    p.stepWorkspace = top;
    uint64_t scratch = 0;
    for (size_t j = 0; j < layers.size(); ++j)
      scratch = std::max(scratch, steps_[j]->workspaceBytes(p.views[j].inputs, p.views[j].outputs));
    p.bytes = top + scratch;
    return p;
  }

  std::unique_ptr<Network> body_;  // the sub-steps' layers live here
  std::vector<std::unique_ptr<Step>> steps_;
  std::map<std::string, Source> producedBy_;
};

// Every body layer has a CUDA step that takes its tensors (typed as declared).
SupportVerdict bodyTensors(const Layer& layer, Precision precision, const LayerSignature& signature) {
  std::unique_ptr<Network> body;
  try {
    body = typedBody(layer, signature, std::nullopt);
  } catch (const Error& e) {
    return {false, e.what()};
  }
  for (const Layer& l : body->layers()) {
    const CudaOp* op = CudaOpRegistry::instance().find(l.domain, l.opType);
    if (!op) return {false, "its body's " + l.opType + " has no CUDA kernel"};
    if (op->supports)
      if (SupportVerdict v = op->supports(l, precision, layerSignature(*body, l)); !v.supported)
        return {false, "its body's " + l.describe() + ": " + v.why};
  }
  return {};
}

SupportVerdict bodyOps(const Layer& layer, Precision) {
  for (const Layer& l : layer.attrGraph("body").layers())
    if (!CudaOpRegistry::instance().find(l.domain, l.opType))
      return {false, "its body's " + l.opType + " has no CUDA kernel"};
  return {};
}

}  // namespace

void registerPointwiseCudaOps(CudaOpRegistry& registry) {
  CudaOp op = stepOp<PointwiseStep>(bodyTensors);
  op.supportsLayer = bodyOps;
  op.instantiate = [](const Layer& layer, const Tactic& tactic, const LayerSignature& signature,
                      CudaDevice& device) -> std::unique_ptr<Step> {
    if (isNvrtcPointwiseTactic(tactic.id))
      return makeNvrtcPointwiseStep(layer, tactic, signature, device,
                                    typedBody(layer, signature, tacticPrecision(layer, tactic)));
    return std::make_unique<PointwiseStep>(layer, tactic, signature, device);
  };
  op.tactics = [](const Layer& layer, Precision precision, const LayerInputs& inputs, CudaDevice& device) {
    std::vector<Tactic> tactics;
    std::string refusal;  // why the body has no NVRTC kernel (the build report lists it)
    try {
      const auto body = typedBody(layer, inputs.types, {}, precision);
      if (auto nvrtc = nvrtcPointwiseTactic(layer, precision, *body, device, &refusal)) tactics.push_back(*nvrtc);
    } catch (const Error& e) {
      refusal = e.what();
    }
    tactics.push_back(Tactic{defaultTacticId(layer) + "." + precisionTag(precision)});
    if (!refusal.empty()) {
      Tactic none{nvrtcPointwiseTacticId(precision)};
      none.unavailable = refusal;
      tactics.push_back(std::move(none));
    }
    return tactics;
  };
  // The generated kernel reads every input, and writes its output, in either layout (each
  // operand's strides over the output's memory order); the layer-by-layer tactic is linear only.
  op.channelsLastInputs = [](const Layer& layer, const std::string& tactic) {
    std::vector<size_t> inputs;
    if (isNvrtcPointwiseTactic(tactic))
      for (size_t i = 0; i < layer.inputs.size(); ++i) inputs.push_back(i);
    return inputs;
  };
  registry.add(fused::kDomain, fused::kPointwise, std::move(op));
}

}  // namespace kiln::cuda
