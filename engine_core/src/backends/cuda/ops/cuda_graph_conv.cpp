// Conv / kiln.FusedConv as one cuDNN graph in float16 / bfloat16, or float32 where TF32 is allowed,
// channels-last (graph_conv.h).
//
// cuDNN's fused engines take NHWC tensors with channels a multiple of 8 (16-byte vectors): the
// filter is re-laid out once to KRSC with its input channels padded by zeros to that multiple, and
// an input with fewer channels (an RGB stem) is re-laid out with the same zero padding in the
// workspace. Output channels off that multiple (a squeeze-and-excitation reduction to 6 or 20
// channels) get zero filters and bias up to it: the graph writes the wider result into the
// workspace and the layer's channels are copied out (else only cuDNN's legacy API, 10x slower there). An input,
// residual or output the plan keeps linear goes through the workspace as NHWC too, so the step is right whatever
// formats the plan gives it; the engine's channels-last chains (CudaBackend::tensorFormats) make those copies rare.
// Whatever part of the epilogue a config cannot fuse runs after it as Kiln's elementwise kernels on the NHWC result.
#include "graph_conv.h"

#include "../../../ops/fused.h"
#include "../../../runtime/precision_convert.h"
#include "../../common/conv_geometry.h"
#include "../cuda_epilogue.h"
#include "../cuda_step.h"
#include "../cudnn_conv.h"
#include "../cudnn_conv_graph.h"
#include "../workspace_math.h"
#include "conv_plan.h"

#include <kernels/cuda/layout/pad.h>
#include <kernels/cuda/layout/reformat.h>

#include <kiln/error.h>

#include <algorithm>

namespace kiln::cuda {
namespace {

namespace k = kernels::cuda;

constexpr const char* kTacticPrefix = "cudnn.graph.conv.";
constexpr size_t kEngineCandidates = 4;  // re-resolving a config at run time; tactics list LayerInputs::candidateBudget
constexpr size_t kUnfusedEngineCandidates = 2;  // of the convolution alone, beside a fused graph's (at most)
int64_t paddedChannels(int64_t c) { return (c + 7) / 8 * 8; }

FusedEpilogue epilogueOf(const Layer& layer) {
  return layer.domain == fused::kDomain ? readFusedEpilogue(layer) : FusedEpilogue{};
}

// The graph for X and W of these logical dims; throws kUnsupported where the graph does not apply.
ConvGraphProblem problemOf(const Layer& layer, const ConvSpec& spec, const std::vector<int64_t>& x,
                           const std::vector<int64_t>& w, ConvFusion fusion, int64_t alignment) {
  if (x.size() != 4 || w.size() != 4)
    throw Error(ErrorCode::kUnsupported, layer.describe() + ": cuDNN's fused convolutions here are 2-D");
  const kernels::ConvShape shape = forwardConvShape(spec.base, x, w);
  if (shape.group != 1 || x[1] != w[1])
    throw Error(ErrorCode::kUnsupported, layer.describe() + ": grouped convolutions are not fused by cuDNN's graph");
  if (w[0] % 8 != 0 && spec.hasResidual)
    throw Error(ErrorCode::kUnsupported, layer.describe() + ": " + std::to_string(w[0]) +
                                             " output channels (not a multiple of 8) with a residual");
  ConvGraphProblem p = convGraphGeometry(shape, x, paddedChannels(w[0]), paddedChannels(x[1]));
  p.type = spec.storage;
  p.bias = spec.hasBias;
  p.residual = spec.hasResidual;
  p.epilogue = epilogueOf(layer);
  p.fusion = fusion;
  p.alignment = alignment;
  return p;
}

struct Payload {
  ConvFusion fusion = ConvFusion::kFull;
  EngineChoice choice;
};
std::vector<uint8_t> encode(const Payload& p) {
  std::vector<uint8_t> out{uint8_t(p.fusion)};
  const auto rest = p.choice.serialize();
  out.insert(out.end(), rest.begin(), rest.end());
  return out;
}
Payload decode(const std::vector<uint8_t>& bytes, const std::string& what) {
  if (bytes.empty() || bytes[0] > uint8_t(ConvFusion::kConvolutionOnly))
    throw Error(ErrorCode::kInvalidArgument, what + ": the plan's cuDNN graph choice is corrupt; rebuild the plan");
  return {ConvFusion(bytes[0]), EngineChoice::deserialize(std::vector<uint8_t>(bytes.begin() + 1, bytes.end()), what)};
}

// A problem with a plan for it.
struct Resolved {
  ConvGraphProblem problem;
  std::shared_ptr<CudnnExecutionPlan> plan;
};

// The plan for `wanted` at these dims: its own config where cuDNN takes it here, else the
// heuristics' first that it takes, fusing less if it must. Throws naming the layer when none.
Resolved resolve(const Layer& layer, const ConvSpec& spec, const std::vector<int64_t>& x, const std::vector<int64_t>& w,
                 const Payload& wanted, int64_t alignment, int device) {
  cudnnHandle_t handle = cudnnHandleForThread(device);
  const std::string what = layer.describe();
  std::string last;
  for (int f = int(wanted.fusion); f <= int(ConvFusion::kConvolutionOnly); ++f) {
    Resolved r{problemOf(layer, spec, x, w, ConvFusion(f), alignment), nullptr};
    last = r.problem.describe();
    auto graph = cachedConvGraph(handle, r.problem, what);
    if (!graph) continue;
    if (f == int(wanted.fusion) && wanted.choice.engine >= 0)
      r.plan = cachedConvPlan(handle, *graph, r.problem, wanted.choice);
    for (const EngineChoice& choice : r.plan ? std::vector<EngineChoice>{} : graph->rankedEngines(kEngineCandidates))
      if ((r.plan = cachedConvPlan(handle, *graph, r.problem, choice))) break;
    if (r.plan) return r;
  }
  throw Error(ErrorCode::kUnsupported, what + ": cuDNN has no engine for the " + last +
                                           "; build this layer with another tactic (--precision fp32 for it)");
}

// Workspace: epilogue scratch, the re-laid-out input, residual and output (the graph's, with any
// padded channels; then the layer's channels alone where a linear output is re-laid out from them),
// then cuDNN's.
struct WorkspaceLayout {
  uint64_t scratch = 0, x = 0, residual = 0, y = 0, narrowed = 0, cudnn = 0;
  uint64_t xAt() const { return scratch; }
  uint64_t residualAt() const { return xAt() + x; }
  uint64_t yAt() const { return residualAt() + residual; }
  uint64_t narrowedAt() const { return yAt() + y; }
  uint64_t cudnnAt() const { return narrowedAt() + narrowed; }
  uint64_t total() const { return cudnnAt() + cudnn; }
};

struct Formats {
  bool x = false, residual = false, y = false;  // channels-last as bound
};

Formats formatsOf(const Tactic& tactic) {
  return {tactic.inputFormat(kConvX) == TensorFormat::kNHWC, tactic.inputFormat(kConvResidual) == TensorFormat::kNHWC,
          tactic.outputFormat == TensorFormat::kNHWC};
}

// Whether a re-laid-out linear output goes through an NHWC copy of the layer's channels alone.
bool narrowsThenRelayouts(const ConvGraphProblem& p, int64_t outChannels, const Formats& formats) {
  return p.y[1] != outChannels && !formats.y && p.y[2] * p.y[3] > 1;
}

WorkspaceLayout layoutOf(const Resolved& r, const std::vector<int64_t>& x, int64_t outChannels,
                         const Formats& formats) {
  const ConvGraphProblem& p = r.problem;
  const uint64_t element = byteSize(p.type);
  WorkspaceLayout l;
  if (p.leavesActivation())
    l.scratch = alignUp(ElementwiseEpilogue::scratchBytes(p.epilogue, elementCount(p.y), p.type));
  if (!formats.x || p.x[1] != x[1]) l.x = alignUp(uint64_t(elementCount(p.x)) * element);
  if (p.residual && !formats.residual) l.residual = alignUp(uint64_t(elementCount(p.y)) * element);
  if (!formats.y || p.y[1] != outChannels) l.y = alignUp(uint64_t(elementCount(p.y)) * element);
  if (narrowsThenRelayouts(p, outChannels, formats))
    l.narrowed = alignUp(uint64_t(elementCount(p.y) / p.y[1] * outChannels) * element);
  l.cudnn = alignUp(r.plan->workspaceBytes());
  return l;
}

// W [K, C, R, S] as KRSC with C padded by zeros to `channels` and K by zero filters to
// `outChannels`, in `type`.
HostTensor channelsLastFilter(const HostTensor& w, int64_t channels, int64_t outChannels, DataType type) {
  const auto& d = w.dims();
  const int64_t k = d[0], c = d[1], plane = d[2] * d[3];
  std::vector<float> wide(size_t(w.elementCount()));
  convertFloatStorage(w.dtype(), w.rawData(), DataType::kFloat32, wide.data(), w.elementCount());
  std::vector<float> out(size_t(outChannels * plane * channels), 0.0f);
  for (int64_t o = 0; o < k; ++o)
    for (int64_t i = 0; i < c; ++i)
      for (int64_t s = 0; s < plane; ++s)
        out[size_t((o * plane + s) * channels + i)] = wide[size_t((o * c + i) * plane + s)];
  HostTensor result(type, {outChannels, d[2], d[3], channels});
  convertFloatStorage(DataType::kFloat32, out.data(), type, result.rawData(), int64_t(out.size()));
  return result;
}

struct ShapeEntry {
  std::vector<int64_t> x;
  int64_t alignment = 0;
  Resolved resolved;
  WorkspaceLayout layout;
  ElementwiseEpilogue::Work work;
};

class GraphConvState : public StepState {
 public:
  std::vector<std::unique_ptr<ShapeEntry>> shapes;
};

class GraphConvStep : public CudaStep {
 public:
  GraphConvStep(const Layer& layer, const Tactic& tactic, const LayerSignature& signature, CudaDevice& device)
      : CudaStep(layer, tactic, signature, device, storageOf(outputDeclared(signature), tacticPrecision(layer, tactic)),
                 {kConvW}),  // the filter is uploaded re-laid out as KRSC
        spec_(convSpecOf(layer, tacticPrecision(layer, tactic), outputDeclared(signature))),
        epilogue_(layer, spec_.storage, device),
        payload_(decode(tactic.payload, layer.describe())),
        formats_(formatsOf(tactic)),
        name_(layer.describe()) {
    const HostTensor* w = weight(kConvW);
    if (!w || w->dims().size() != 4)
      throw Error(ErrorCode::kInvalidArgument, name_ + ": a cuDNN graph tactic needs a constant 4-D filter");
    outChannels_ = w->dims()[0];
    const int64_t graphChannels = paddedChannels(outChannels_);
    const HostTensor filter = channelsLastFilter(*w, paddedChannels(w->dims()[1]), graphChannels, spec_.storage);
    filter_ = DeviceCopy(device.allocator, filter.rawData(), filter.byteSize());
    if (graphChannels != outChannels_ && spec_.hasBias) {  // the graph reads a bias of its own width
      const HostTensor* bias = weight(kConvBias);
      if (!bias || bias->elementCount() != outChannels_)
        throw Error(ErrorCode::kInvalidArgument, name_ + ": " + std::to_string(outChannels_) +
                                                     " output channels (not a multiple of 8) need a constant bias of "
                                                     "that many values for a cuDNN graph tactic");
      std::vector<float> padded(size_t(graphChannels), 0.0f);
      convertFloatStorage(bias->dtype(), bias->rawData(), DataType::kFloat32, padded.data(), outChannels_);
      paddedBias_ = deviceVector(device.allocator, padded, spec_.storage);
    }
  }

  uint64_t workspaceBytes(std::span<const TensorView> inputs, std::span<const TensorView>) const override {
    if (inputs.size() < 2 || inputs[kConvX].dims.size() != 4 || elementCount(inputs[kConvX].dims) == 0) return 0;
    const Resolved r = resolve(layer_, spec_, inputs[kConvX].dims, inputs[kConvW].dims, payload_, 16, device_.ordinal);
    return layoutOf(r, inputs[kConvX].dims, outChannels_, formats_).total();
  }

  std::unique_ptr<StepState> createState() const override { return std::make_unique<GraphConvState>(); }

  void enqueue(const StepArgs& args, Stream& stream) const override {
    auto* state = dynamic_cast<GraphConvState*>(args.state);
    if (!state) throw Error(ErrorCode::kInternal, name_ + ": enqueued without the state its step made");
    const TensorView& out = args.outputs[0];
    if (elementCount(out.dims) == 0) return;
    const void* residual = spec_.hasResidual ? input(args, kConvResidual) : nullptr;
    const void* bias = !spec_.hasBias ? nullptr : paddedBias_ ? paddedBias_.get() : input(args, kConvBias);
    const ShapeEntry& entry = shapeFor(*state, args, alignmentOf({input(args, kConvX), out.data, residual, bias}));
    const ConvGraphProblem& p = entry.resolved.problem;
    const WorkspaceLayout& l = entry.layout;
    char* workspace = static_cast<char*>(args.workspace);
    const cudaStream_t s = streamOf(stream);
    const k::ElementType type = elementType(out);
    cudnnHandle_t handle = cudnnHandleOnStream(device_.ordinal, s, name_);

    const std::vector<int64_t>& xd = args.inputs[kConvX].dims;
    const void* x = input(args, kConvX);
    if (l.x) {  // NHWC with the channels padded
      void* copy = workspace + l.xAt();
      if (formats_.x)
        check(k::pad(x, {xd[0], xd[2], xd[3], xd[1]}, copy, {0, 0, 0, 0}, {xd[0], xd[2], xd[3], p.x[1]},
                     k::PadMode::kConstant, nullptr, type, s),
              "padding its input's channels");
      else
        check(k::nchwToNhwc(x, copy, xd[0], xd[1], xd[2], xd[3], type, s, p.x[1]), "re-laying out its input");
      x = copy;
    }
    if (l.residual) {
      void* copy = workspace + l.residualAt();
      check(k::nchwToNhwc(residual, copy, p.y[0], p.y[1], p.y[2], p.y[3], type, s), "re-laying out its residual");
      residual = copy;
    }
    void* y = l.y ? workspace + l.yAt() : out.data;
    std::vector<int64_t> uids{kGraphX, kGraphW, kGraphY};
    std::vector<void*> pointers{const_cast<void*>(x), const_cast<void*>(filter_.get()), y};
    if (p.bias && !p.leavesBias()) {
      uids.push_back(kGraphBias);
      pointers.push_back(const_cast<void*>(bias));
    }
    if (p.residual && !p.leavesResidual()) {
      uids.push_back(kGraphResidual);
      pointers.push_back(const_cast<void*>(residual));
    }
    entry.resolved.plan->execute(handle, uids, pointers, workspace + l.cudnnAt(), name_);
    if (p.leavesBias() || p.leavesResidual() || p.leavesActivation()) {
      ElementwiseEpilogue::Work work = entry.work;
      work.bias = p.leavesBias() ? bias : nullptr;
      const bool before = p.epilogue.residualBeforeActivation;
      work.residualBefore = p.leavesResidual() && before ? residual : nullptr;
      work.residualAfter = p.leavesResidual() && !before ? residual : nullptr;
      epilogue_.apply(y, {p.y[0], p.y[2], p.y[3], p.y[1]}, work, workspace, s);
    }
    if (p.y[1] != outChannels_) {  // the layer's channels of the graph's padded ones
      const size_t element = k::elementBytes(type), pixels = size_t(p.y[0] * p.y[2] * p.y[3]);
      void* narrowed = l.narrowed ? workspace + l.narrowedAt() : out.data;
      check(cudaMemcpy2DAsync(narrowed, size_t(outChannels_) * element, y, size_t(p.y[1]) * element,
                              size_t(outChannels_) * element, pixels, cudaMemcpyDeviceToDevice, s),
            "copying out its channels");
      if (l.narrowed)
        check(k::nhwcToNchw(narrowed, out.data, p.y[0], outChannels_, p.y[2], p.y[3], type, s),
              "re-laying out its output");
    } else if (l.y) {
      check(k::nhwcToNchw(y, out.data, p.y[0], p.y[1], p.y[2], p.y[3], type, s), "re-laying out its output");
    }
  }

 private:
  const ShapeEntry& shapeFor(GraphConvState& state, const StepArgs& args, int64_t alignment) const {
    const std::vector<int64_t>& x = args.inputs[kConvX].dims;
    for (auto& entry : state.shapes)
      if (entry->x == x && entry->alignment == alignment) return *entry;
    auto entry = std::make_unique<ShapeEntry>();
    entry->x = x;
    entry->alignment = alignment;
    entry->resolved = resolve(layer_, spec_, x, args.inputs[kConvW].dims, payload_, alignment, device_.ordinal);
    const ConvGraphProblem& p = entry->resolved.problem;
    std::vector<int64_t> made = p.y;
    made[1] = outChannels_;
    if (made != args.outputs[0].dims)
      throw Error(ErrorCode::kInternal, name_ + ": its convolution makes " + dimsToString(made) +
                                            " but the output is " + dimsToString(args.outputs[0].dims));
    entry->layout = layoutOf(entry->resolved, x, outChannels_, formats_);
    if (args.workspaceBytes < entry->layout.total())
      throw Error(ErrorCode::kInternal, name_ + ": its workspace of " + std::to_string(args.workspaceBytes) +
                                            " bytes is smaller than the " + std::to_string(entry->layout.total()) +
                                            " it needs");
    entry->work.biasDims = {1, 1, 1, p.y[1]};
    entry->work.activate = p.leavesActivation();
    state.shapes.push_back(std::move(entry));
    return *state.shapes.back();
  }

  ConvSpec spec_;
  ElementwiseEpilogue epilogue_;
  Payload payload_;
  Formats formats_;
  DeviceCopy filter_;
  int64_t outChannels_ = 0;  // the layer's; the graph's are padded to a multiple of 8
  DeviceCopy paddedBias_;    // the bias padded so, where they differ
  std::string name_;
};

}  // namespace

bool isGraphConvTactic(const std::string& tacticId) { return tacticId.rfind(kTacticPrefix, 0) == 0; }

std::vector<Tactic> graphConvTactics(const Layer& layer, Precision precision, const LayerInputs& inputs,
                                     CudaDevice& device) {
  // fp32 tensors only where TF32 is allowed: cuDNN's fp32 graph engines run on tensor cores in TF32,
  // and exact fp32 convolutions keep the convolution API's FMA algorithms.
  if (precision != Precision::kFP16 && precision != Precision::kBF16 && precision != Precision::kTF32) return {};
  if (inputs.dims.size() <= kConvW || inputs.dims[kConvX].size() != 4 || inputs.dims[kConvW].size() != 4) return {};
  if (inputs.weights.size() <= kConvW || !inputs.weights[kConvW] || elementCount(inputs.dims[kConvX]) == 0) return {};
  std::vector<Tactic> tactics;
  try {
    const ConvSpec spec = convSpecOf(layer, precision, inputs.types.empty() ? DataType::kFloat32 : inputs.types[0]);
    const bool storageTaken = precision == Precision::kTF32
                                  ? spec.storage == DataType::kFloat32
                                  : spec.storage == DataType::kFloat16 || spec.storage == DataType::kBFloat16;
    if (spec.transpose || !storageTaken) return {};
    cudnnHandle_t handle = cudnnHandleForThread(device.ordinal);
    const std::vector<int64_t>&x = inputs.dims[kConvX], &w = inputs.dims[kConvW];
    // Output channels padded to the graph's multiple of 8 need the bias as a constant to pad too.
    if (w[0] % 8 != 0 && spec.hasBias && (inputs.weights.size() <= kConvBias || !inputs.weights[kConvBias])) return {};
    // The most fused graph cuDNN takes, its configs the candidates; then the convolution alone with
    // Kiln's kernels doing the epilogue, since cuDNN's runtime-fusion engines can lose to its
    // precompiled convolutions plus one elementwise pass (only timing tells).
    bool fusedFound = false;
    for (int f = int(ConvFusion::kFull); f <= int(ConvFusion::kConvolutionOnly); ++f) {
      if (fusedFound && ConvFusion(f) != ConvFusion::kConvolutionOnly) continue;
      Resolved r{problemOf(layer, spec, x, w, ConvFusion(f), 16), nullptr};
      auto graph = cachedConvGraph(handle, r.problem, layer.describe());
      if (!graph) continue;
      const size_t before = tactics.size();
      const size_t budget = size_t(std::max(1, inputs.candidateBudget));
      const size_t candidates = fusedFound ? std::min(kUnfusedEngineCandidates, budget) : budget;
      for (const EngineChoice& choice : graph->rankedEngines(candidates)) {
        if (!(r.plan = cachedConvPlan(handle, *graph, r.problem, choice))) continue;
        Tactic& t = tactics.emplace_back();
        t.id = kTacticPrefix + std::string(precisionTag(precision)) + ".c" + std::to_string(tactics.size() - 1);
        t.payload = encode({ConvFusion(f), choice});
        t.takesChannelsLast = true;
        // The workspace covers linear neighbours too (the copies), whatever formats the plan gives.
        t.workspaceBytes = layoutOf(r, x, w[0], Formats{}).total();
      }
      if (fusedFound) break;
      fusedFound = tactics.size() > before;
      // A graph that fuses nothing is the convolution alone already.
      const ConvGraphProblem& found = r.problem;
      if (fusedFound && ConvFusion(f) != ConvFusion::kConvolutionOnly && !found.bias && !found.residual &&
          !ConvGraphProblem::graphHasActivation(found.epilogue))
        break;
    }
  } catch (const Error&) {
    return {};  // the layer keeps the convolution API's tactic
  }
  return tactics;
}

std::unique_ptr<Step> makeGraphConvStep(const Layer& layer, const Tactic& tactic, const LayerSignature& signature,
                                        CudaDevice& device) {
  return std::make_unique<GraphConvStep>(layer, tactic, signature, device);
}

}  // namespace kiln::cuda
