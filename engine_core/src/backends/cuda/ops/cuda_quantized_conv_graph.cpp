// kiln.QuantizedConv in int8 or fp8 as one cuDNN graph (quantized_conv_graph.h).
//
// cuDNN's 8-bit convolutions take NHWC tensors with the channels a multiple of 16 (16-byte vectors):
// the filter is re-laid out once to KRSC with its input channels padded by zero weights, and an input
// that is not already such an 8-bit tensor is quantized on entry into the workspace (the 1x1 case of
// the im2col gather, kernels/cuda/quant/quantized_gemm.h), which pads the channels too. A residual or
// output the plan keeps linear goes through the workspace as NHWC, so the step is right whatever
// formats the plan gives it. int8 sums are the CPU's exact integers; the dequantization
// (sums * x_scale * w_scale[c] + bias) and epilogue run in fp32 as the CPU's do. An 8-bit output is
// the result times 1 / y_scale rounded by cuDNN, where the CPU divides: a value at a rounding tie can
// land one step away.
//
// The kiln.int8conv / kiln.fp8conv tactics (quantized_conv_kernel.h) run the same step with Kiln's own
// implicit-GEMM kernel in place of the cuDNN plan: no cuDNN workspace, any fused activation, and an
// 8-bit output divided by y_scale as the CPU does.
#include "quantized_conv_graph.h"

#include "../../../builder/conversion_layers.h"
#include "../../../ops/fused.h"
#include "../../../ops/quantized.h"
#include "../../common/conv_geometry.h"
#include "../cuda_step.h"
#include "../cudnn_conv.h"
#include "../cudnn_conv_graph.h"
#include "../workspace_math.h"
#include "quantized_conv_kernel.h"
#include "quantized_gemm_plan.h"

#include <kernels/cuda/layout/reformat.h>
#include <kernels/cuda/quant/quantized_gemm.h>
#include <kiln/error.h>
#include <kiln/shape.h>

namespace kiln::cuda {
namespace {

namespace k = kernels::cuda;

constexpr const char* kInt8Prefix = "cudnn.int8conv.";
constexpr const char* kFp8Prefix = "cudnn.fp8conv.";
constexpr size_t kX = 0, kResidual = 3;
constexpr size_t kEngineCandidates = 4;  // re-resolving a config at run time
constexpr int64_t kChannelVector = 16;   // int8 channels in cuDNN's 16-byte NHWC vectors

int64_t paddedChannels(int64_t c) { return (c + kChannelVector - 1) / kChannelVector * kChannelVector; }

DataType operandType(const QuantizedGemmPlan& plan) { return plan.fp8 ? DataType::kFloat8E4M3 : DataType::kInt8; }

// Whether the layer writes its operand type again (an output scale with a zero point of that type,
// as ChainInt8Activations gives it); a uint8 output keeps the cuBLASLt form.
bool writesQuantized(const Layer& layer, const QuantizedGemmPlan& plan, const LayerWeights& weights) {
  if (!layer.hasInput(quantized::kOutputScaleInput)) return false;
  const HostTensor* zero =
      quantized::kOutputZeroPointInput < weights.size() ? weights[quantized::kOutputZeroPointInput] : nullptr;
  return zero && zero->dtype() == operandType(plan);
}

// Why the graph (or with `kiln`, Kiln's kernel) cannot take this layer, or nullopt.
std::optional<std::string> refusal(const Layer& layer, const QuantizedGemmPlan& plan, bool quantizedOutput, bool kiln) {
  if (!plan.conv) return "not a convolution";
  if (plan.activation.unsignedQ || plan.activation.zero != 0 || !plan.correction.empty())
    return "its activation has a zero point";
  if (layer.hasInput(quantized::kOutputScaleInput) && (!quantizedOutput || plan.outputZero != 0))
    return "its output is not symmetric in its operand type";
  if (plan.channels % kChannelVector != 0) return "its output channels are not a multiple of 16";
  // cuDNN's graph reads its residual in the float storage of the convolution's output; Kiln's kernel
  // and cuBLASLt's epilogue dequantize an int8 one.
  if (!kiln && plan.int8Residual) return "cuDNN's graph takes a float residual, not an int8 one";
  if (!kiln && plan.epilogue.activation != kernels::Activation::kNone &&
      !ConvGraphProblem::graphHasActivation(plan.epilogue))
    return "cuDNN has no pointwise op for its activation";
  return std::nullopt;
}

// The graph for X of these logical dims.
ConvGraphProblem problemOf(const Layer& layer, const QuantizedGemmPlan& plan, const std::vector<int64_t>& x,
                           DataType storage, bool quantizedOutput, bool residual, int64_t alignment) {
  const int64_t taps = plan.kernelH * plan.kernelW, c = plan.depth / taps;
  if (x.size() != 4 || x[1] != c)
    throw Error(ErrorCode::kInvalidArgument, layer.describe() + ": X " + dimsToString(x) + " does not have the " +
                                                 std::to_string(c) + " channels of its weights");
  const std::vector<int64_t> w{plan.channels, c, plan.kernelH, plan.kernelW};
  const kernels::ConvShape shape = forwardConvShape(fused::baseLayer(layer), x, w);
  ConvGraphProblem p = convGraphGeometry(shape, x, plan.channels, paddedChannels(c));
  p.type = storage;
  p.quantized = plan.fp8 ? QuantizedOperands::kFp8 : QuantizedOperands::kInt8;
  p.quantizedOutput = quantizedOutput;
  p.bias = !plan.bias.empty();
  p.residual = residual;
  p.epilogue = plan.epilogue;
  p.alignment = alignment;
  return p;
}

struct Resolved {
  ConvGraphProblem problem;
  std::shared_ptr<CudnnExecutionPlan> plan;  // null: Kiln's kernel
};

// The plan at these dims: the tactic's own config where cuDNN takes it here, else the heuristics'
// first that it takes. Throws naming the layer when none.
Resolved resolve(const Layer& layer, const ConvGraphProblem& problem, const EngineChoice& wanted, int device) {
  cudnnHandle_t handle = cudnnHandleForThread(device);
  Resolved r{problem, nullptr};
  if (auto graph = cachedConvGraph(handle, problem, layer.describe())) {
    if (wanted.engine >= 0) r.plan = cachedConvPlan(handle, *graph, problem, wanted);
    for (const EngineChoice& choice : r.plan ? std::vector<EngineChoice>{} : graph->rankedEngines(kEngineCandidates))
      if ((r.plan = cachedConvPlan(handle, *graph, problem, choice))) break;
  }
  if (!r.plan)
    throw Error(ErrorCode::kUnsupported, layer.describe() + ": cuDNN has no engine for the " + problem.describe() +
                                             "; build it with the cuBLASLt int8 tactic (--tactic-sources -cudnn)");
  return r;
}

struct Formats {
  bool x = false, residual = false, y = false;  // channels-last as bound
};

// Workspace: the quantized input, the re-laid-out residual and output, then cuDNN's.
struct WorkspaceLayout {
  uint64_t x = 0, residual = 0, y = 0, cudnn = 0;
  uint64_t residualAt() const { return x; }
  uint64_t yAt() const { return x + residual; }
  uint64_t cudnnAt() const { return yAt() + y; }
  uint64_t total() const { return cudnnAt() + cudnn; }
};

// Whether X of this type and layout is already the graph's 8-bit NHWC operand.
bool xIsOperand(DataType xType, bool xLast, const ConvGraphProblem& p, const std::vector<int64_t>& x) {
  const DataType operand = p.quantized == QuantizedOperands::kFp8 ? DataType::kFloat8E4M3 : DataType::kInt8;
  return xType == operand && xLast && p.x[1] == x[1];
}

WorkspaceLayout layoutOf(const Resolved& r, const std::vector<int64_t>& x, DataType xType, const Formats& formats) {
  const ConvGraphProblem& p = r.problem;
  WorkspaceLayout l;
  if (!xIsOperand(xType, formats.x, p, x)) l.x = alignUp(uint64_t(elementCount(p.x)));
  if (p.residual && !formats.residual) l.residual = alignUp(uint64_t(elementCount(p.y)) * byteSize(p.type));
  if (!formats.y) l.y = alignUp(uint64_t(elementCount(p.y)) * (p.quantizedOutput ? 1 : byteSize(p.type)));
  l.cudnn = r.plan ? alignUp(r.plan->workspaceBytes()) : 0;
  return l;
}

// The plan's W' rows (im2col order (kh, kw, c), see quantized_gemm_plan.h) as KRSC int8 with the
// input channels padded by zero weights (int8 0 and e4m3 0 are both the byte 0).
std::vector<uint8_t> channelsLastFilter(const QuantizedGemmPlan& plan) {
  const int64_t taps = plan.kernelH * plan.kernelW, c = plan.depth / taps, padded = paddedChannels(c);
  std::vector<uint8_t> out(size_t(plan.channels * taps * padded), 0);
  for (int64_t n = 0; n < plan.channels; ++n)
    for (int64_t t = 0; t < taps; ++t)
      for (int64_t i = 0; i < c; ++i)
        out[size_t((n * taps + t) * padded + i)] = plan.weights[size_t(n * plan.paddedDepth + t * c + i)];
  return out;
}

struct ShapeEntry {
  std::vector<int64_t> x;
  DataType xType = DataType::kUndefined;
  int64_t alignment = 0;
  Resolved resolved;
  WorkspaceLayout layout;
};

class QuantizedGraphConvState : public StepState {
 public:
  std::vector<std::unique_ptr<ShapeEntry>> shapes;
};

DataType declaredX(const LayerSignature& signature) {
  return signature.inputs.empty() || !signature.inputs[kX] ? DataType::kFloat32 : signature.inputs[kX]->dtype;
}

class QuantizedGraphConvStep : public CudaStep {
 public:
  QuantizedGraphConvStep(const Layer& layer, const Tactic& tactic, const LayerSignature& signature, CudaDevice& device)
      : CudaStep(layer, tactic, signature, device, DataType::kUndefined, quantizedPlannedInputs()),
        plan_(planQuantizedGemm(layer, signature.weights(), declaredX(signature))),
        kilnTile_(kilnConvTileOf(tactic.id)),
        choice_(kilnTile_ ? EngineChoice{} : EngineChoice::deserialize(tactic.payload, layer.describe())),
        formats_{tactic.inputFormat(kX) == TensorFormat::kNHWC, tactic.inputFormat(kResidual) == TensorFormat::kNHWC,
                 tactic.outputFormat == TensorFormat::kNHWC},
        storage_(activationStorageOf(layer, Precision::kINT8)),
        quantizedOutput_(writesQuantized(layer, plan_, signature.weights())),
        hasResidual_(layer.hasInput(kResidual)),
        name_(layer.describe()) {
    if (isKilnConvTactic(tactic.id) && !kilnTile_)
      throw Error(ErrorCode::kInvalidArgument, name_ + ": the plan's tactic " + tactic.id +
                                                   " names no tile of Kiln's 8-bit convolution; rebuild the plan");
    if (auto why = refusal(layer, plan_, quantizedOutput_, kilnTile_.has_value()))
      throw Error(ErrorCode::kInvalidArgument,
                  name_ + ": the plan's 8-bit convolution tactic cannot run it (" + *why + "); rebuild the plan");
    const std::vector<uint8_t> filter = channelsLastFilter(plan_);
    filter_ = DeviceCopy(device.allocator, filter.data(), filter.size());
    scales_ = DeviceCopy(device.allocator, plan_.multipliers.data(), plan_.multipliers.size() * sizeof(float));
    if (!plan_.bias.empty()) bias_ = DeviceCopy(device.allocator, plan_.bias.data(), plan_.bias.size() * sizeof(float));
    if (quantizedOutput_ && !kilnTile_) {  // the graph multiplies by it
      const float reciprocal = 1.0f / plan_.outputScale;
      outputScale_ = DeviceCopy(device.allocator, &reciprocal, sizeof(float));
    }
  }

  uint64_t workspaceBytes(std::span<const TensorView> inputs, std::span<const TensorView>) const override {
    if (inputs.empty() || inputs[kX].dims.size() != 4 || elementCount(inputs[kX].dims) == 0) return 0;
    const Resolved r = resolveAt(problemAt(16, inputs[kX].dims));
    return layoutOf(r, inputs[kX].dims, inputs[kX].dtype, formats_).total();
  }

  std::unique_ptr<StepState> createState() const override { return std::make_unique<QuantizedGraphConvState>(); }

  void enqueue(const StepArgs& args, Stream& stream) const override {
    auto* state = dynamic_cast<QuantizedGraphConvState*>(args.state);
    if (!state) throw Error(ErrorCode::kInternal, name_ + ": enqueued without the state its step made");
    const TensorView& out = args.outputs[0];
    if (elementCount(out.dims) == 0) return;
    const void* residual = hasResidual_ ? input(args, kResidual) : nullptr;
    const ShapeEntry& entry = shapeFor(*state, args, alignmentOf({input(args, kX), out.data, residual}));
    const ConvGraphProblem& p = entry.resolved.problem;
    const WorkspaceLayout& l = entry.layout;
    char* workspace = static_cast<char*>(args.workspace);
    const cudaStream_t s = streamOf(stream);

    const std::vector<int64_t>& xd = args.inputs[kX].dims;
    const void* x = input(args, kX);
    if (l.x) {  // quantized into 8-bit NHWC with the channels padded: the 1x1 im2col gather
      k::Im2col g;
      g.batch = xd[0], g.channels = xd[1], g.inH = g.outH = xd[2], g.inW = g.outW = xd[3];
      g.columns = p.x[1];
      g.channelsLast = formats_.x;
      check(k::quantizedIm2col(x, elementType(args.inputs[kX]), g, plan_.activation, workspace, s),
            "quantizing its input");
      x = workspace;
    }
    if (l.residual) {
      void* copy = workspace + l.residualAt();
      check(k::nchwToNhwc(residual, copy, p.y[0], p.y[1], p.y[2], p.y[3], elementType(args.inputs[kResidual]), s),
            "re-laying out its residual");
      residual = copy;
    }
    void* y = l.y ? workspace + l.yAt() : out.data;
    if (kilnTile_)
      runKernel(p, x, residual, hasResidual_ ? elementType(args.inputs[kResidual]) : k::ElementType::kFloat32, y,
                elementType(out), s);
    else
      runGraph(entry, x, residual, y, workspace + l.cudnnAt(), s);
    if (l.y)
      check(k::nhwcToNchw(y, out.data, p.y[0], p.y[1], p.y[2], p.y[3], elementType(out), s),
            "re-laying out its output");
  }

 private:
  // Kiln's kernel on the NHWC operands.
  void runKernel(const ConvGraphProblem& p, const void* x, const void* residual, k::ElementType residualType, void* y,
                 k::ElementType yType, cudaStream_t s) const {
    k::Int8ConvProblem kp = kilnConvProblemOf(p);
    kp.x = x, kp.w = filter_.get();
    kp.multipliers = static_cast<const float*>(scales_.get());
    kp.bias = static_cast<const float*>(bias_.get());
    kp.residual = residual, kp.residualType = residualType, kp.residualScale = plan_.residualScale;
    kp.residualBeforeActivation = plan_.epilogue.residualBeforeActivation;
    kp.activation = plan_.epilogue.activation, kp.alpha = plan_.epilogue.alpha, kp.beta = plan_.epilogue.beta;
    kp.outputScale = plan_.outputScale, kp.outputZero = plan_.outputZero;
    if (const char* why = k::int8ConvRefusal(kp))
      throw Error(ErrorCode::kUnsupported, name_ + ": Kiln's 8-bit convolution cannot run its " + p.describe() + " (" +
                                               why + "); rebuild the plan");
    check(k::int8Conv(kp, *kilnTile_, y, yType, s), "running Kiln's 8-bit convolution");
  }

  // The cuDNN plan on the NHWC operands.
  void runGraph(const ShapeEntry& entry, const void* x, const void* residual, void* y, void* cudnnWorkspace,
                cudaStream_t s) const {
    const ConvGraphProblem& p = entry.resolved.problem;
    cudnnHandle_t handle = cudnnHandleOnStream(device_.ordinal, s, name_);
    std::vector<int64_t> uids{kGraphX, kGraphW, kGraphY, kGraphScale};
    std::vector<void*> pointers{const_cast<void*>(x), const_cast<void*>(filter_.get()), y,
                                const_cast<void*>(scales_.get())};
    auto bind = [&](int64_t uid, const void* pointer) {
      uids.push_back(uid);
      pointers.push_back(const_cast<void*>(pointer));
    };
    if (p.bias) bind(kGraphBias, bias_.get());
    if (p.residual) bind(kGraphResidual, residual);
    if (p.quantizedOutput) bind(kGraphOutputScale, outputScale_.get());
    entry.resolved.plan->execute(handle, uids, pointers, cudnnWorkspace, name_);
  }

  // The cuDNN plan for this problem, or (Kiln's kernel) none.
  Resolved resolveAt(const ConvGraphProblem& problem) const {
    if (kilnTile_) return {problem, nullptr};
    return resolve(layer_, problem, choice_, device_.ordinal);
  }

  ConvGraphProblem problemAt(int64_t alignment, const std::vector<int64_t>& x) const {
    return problemOf(layer_, plan_, x, storage_, quantizedOutput_, hasResidual_, alignment);
  }

  const ShapeEntry& shapeFor(QuantizedGraphConvState& state, const StepArgs& args, int64_t alignment) const {
    const std::vector<int64_t>& x = args.inputs[kX].dims;
    const DataType xType = args.inputs[kX].dtype;
    for (auto& entry : state.shapes)
      if (entry->x == x && entry->xType == xType && entry->alignment == alignment) return *entry;
    auto entry = std::make_unique<ShapeEntry>();
    entry->x = x, entry->xType = xType, entry->alignment = alignment;
    entry->resolved = resolveAt(problemAt(alignment, x));
    const ConvGraphProblem& p = entry->resolved.problem;
    if (p.y != args.outputs[0].dims)
      throw Error(ErrorCode::kInternal, name_ + ": its convolution makes " + dimsToString(p.y) + " but the output is " +
                                            dimsToString(args.outputs[0].dims));
    if (hasResidual_ && args.inputs[kResidual].dtype != (plan_.int8Residual ? DataType::kInt8 : storage_))
      throw Error(
          ErrorCode::kInternal,
          name_ + ": its residual is " + std::string(toString(args.inputs[kResidual].dtype)) + ", not " +
              (plan_.int8Residual ? std::string("int8") : "its " + std::string(toString(storage_)) + " storage"));
    entry->layout = layoutOf(entry->resolved, x, xType, formats_);
    if (args.workspaceBytes < entry->layout.total())
      throw Error(ErrorCode::kInternal, name_ + ": its workspace of " + std::to_string(args.workspaceBytes) +
                                            " bytes is smaller than the " + std::to_string(entry->layout.total()) +
                                            " it needs");
    state.shapes.push_back(std::move(entry));
    return *state.shapes.back();
  }

  QuantizedGemmPlan plan_;
  std::optional<k::Int8ConvTile> kilnTile_;  // Kiln's kernel in place of a cuDNN plan
  EngineChoice choice_;
  Formats formats_;
  DataType storage_;
  bool quantizedOutput_, hasResidual_;
  std::string name_;
  DeviceCopy filter_, scales_, bias_, outputScale_;
};

}  // namespace

bool isQuantizedGraphConvTactic(const std::string& tacticId) {
  return tacticId.rfind(kInt8Prefix, 0) == 0 || tacticId.rfind(kFp8Prefix, 0) == 0 || isKilnConvTactic(tacticId);
}

std::vector<Tactic> quantizedGraphConvTactics(const Layer& layer, const LayerInputs& inputs, CudaDevice& device) {
  if (layer.opType != quantized::kQuantizedConv || inputs.dims.empty() || inputs.dims[kX].size() != 4 ||
      elementCount(inputs.dims[kX]) == 0)
    return {};
  std::vector<Tactic> tactics;
  try {
    const DataType xType = inputs.types.empty() ? DataType::kFloat32 : inputs.types[kX];
    const QuantizedGemmPlan plan = planQuantizedGemm(layer, inputs.weights, xType);
    const bool quantizedOutput = writesQuantized(layer, plan, inputs.weights);
    const DataType storage = activationStorageOf(layer, Precision::kINT8);
    const std::string storageName = layer.attrString(quantized::kFloatStorage, "fp32");
    const ConvGraphProblem problem =
        problemOf(layer, plan, inputs.dims[kX], storage, quantizedOutput, layer.hasInput(kResidual), 16);
    auto offer = [&](std::string id, std::vector<uint8_t> payload, const Resolved& r) {
      Tactic& t = tactics.emplace_back();
      t.id = std::move(id);
      t.payload = std::move(payload);
      t.takesChannelsLast = true;
      // The workspace covers linear neighbours too (the copies), whatever formats the plan gives.
      t.workspaceBytes = layoutOf(r, inputs.dims[kX], xType, Formats{}).total();
    };
    if (!refusal(layer, plan, quantizedOutput, false)) {
      try {
        cudnnHandle_t handle = cudnnHandleForThread(device.ordinal);
        if (auto graph = cachedConvGraph(handle, problem, layer.describe())) {
          const size_t budget = size_t(std::max(1, inputs.candidateBudget));
          int configs = 0;
          for (const EngineChoice& choice : graph->rankedEngines(budget))
            if (auto executable = cachedConvPlan(handle, *graph, problem, choice))
              offer((plan.fp8 ? kFp8Prefix : kInt8Prefix) + storageName + ".c" + std::to_string(configs++),
                    choice.serialize(), {problem, executable});
        }
      } catch (const Error&) {  // cuDNN has none: Kiln's kernel and cuBLASLt remain
      }
    }
    // Kiln's own kernel, a tactic per tile.
    if (!refusal(layer, plan, quantizedOutput, true))
      for (const k::Int8ConvTile tile : kilnConvTiles(problem, device.properties.major * 10 + device.properties.minor))
        offer(kilnConvTacticId(plan.fp8, storageName, tile), {}, {problem, nullptr});
  } catch (const Error&) {
    return {};  // the layer keeps the cuBLASLt tactics
  }
  return tactics;
}

std::unique_ptr<Step> makeQuantizedGraphConvStep(const Layer& layer, const Tactic& tactic,
                                                 const LayerSignature& signature, CudaDevice& device) {
  return std::make_unique<QuantizedGraphConvStep>(layer, tactic, signature, device);
}

}  // namespace kiln::cuda
