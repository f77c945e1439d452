// Conv, ConvTranspose and kiln.FusedConv on cuDNN (cudnn_conv.h): 1-D to 3-D, groups (depthwise
// included), strides, dilations, pads from auto_pad or attributes, in fp32 (FMA math, no TF32),
// tf32, fp16 and bf16 (fp32 accumulation). NCHW. fp16 / bf16 2-D convolutions that cuDNN's
// graph takes run there instead (cuda_graph_conv.cpp, channels-last, epilogue fused), and
// pointwise ones also as cuBLASLt products (cuda_gemm_conv.cpp); the builder times them all.
//
// cuDNN pads both sides alike. A Conv whose pads differ pads the difference into the workspace
// first (kernels/cuda/layout pad) and convolves that with the common part. A ConvTranspose is
// cuDNN's backward data of the forward convolution from its output to its input: where its pads
// and output size fit one (the begin padding on both sides gives back the input's size) cuDNN
// writes the output directly; otherwise, per axis, the whole uncropped result goes to the
// workspace and the output is cut from it (zeros where output_padding reaches past it).
// The epilogue (bias per channel, activation, residual) runs as elementwise kernels after the
// convolution (cuda_epilogue.h); cuDNN's runtime-fused graphs will take it later.
// cuDNN's heuristic picks the algorithm, once per shape and execution context, within 256 MiB of
// workspace; the layer has one tactic per precision.
#include "../../../ops/fused.h"
#include "../cuda_epilogue.h"
#include "../cuda_ops.h"
#include "../cuda_step.h"
#include "../cudnn_conv.h"
#include "../workspace_math.h"
#include "conv_plan.h"
#include "conv_pool.h"
#include "depthwise_conv.h"
#include "gemm_conv.h"
#include "small_channel_conv.h"
#include "graph_conv.h"

#include <kernels/cuda/layout/pad.h>

#include <kiln/error.h>

#include <algorithm>

namespace kiln::cuda {
namespace {

namespace k = kernels::cuda;

constexpr uint64_t kCudnnWorkspaceLimit = uint64_t(256) << 20;

std::string dimsText(const std::vector<int64_t>& dims) { return dimsToString(dims); }

struct ShapeEntry {
  std::vector<int64_t> x, w;
  ConvPlan plan;
  std::unique_ptr<CudnnConvolution> convolution;
  CudnnConvolution::Algorithm algorithm;
  ElementwiseEpilogue::Work work;  // the pointers are set at each launch
};

class ConvState : public StepState {
 public:
  std::vector<std::unique_ptr<ShapeEntry>> shapes;
};

DataType outputDeclared(const LayerSignature& signature) {
  return signature.outputs.empty() || !signature.outputs[0] ? DataType::kFloat32 : signature.outputs[0]->dtype;
}

std::string tacticId(const Layer& layer, Precision precision) {
  const bool transpose =
      (layer.domain == fused::kDomain ? layer.attrString(fused::kBase, "") : layer.opType) == "ConvTranspose";
  return std::string(transpose ? "cudnn.convtranspose." : "cudnn.conv.") + precisionTag(precision);
}

// Workspace: epilogue scratch, the padded input or uncropped result, then cuDNN's.
struct WorkspaceLayout {
  uint64_t scratch = 0, buffer = 0;
  uint64_t cudnnOffset() const { return scratch + buffer; }
};

WorkspaceLayout layoutOf(const ConvPlan& plan, const FusedEpilogue& epilogue, DataType storage) {
  return {alignUp(ElementwiseEpilogue::scratchBytes(epilogue, elementCount(plan.outputDims), storage)),
          alignUp(plan.bufferBytes)};
}

// Workspace bytes at these dims, cuDNN's part asked of its heuristic.
uint64_t workspaceAt(const Layer& layer, const ConvSpec& spec, const FusedEpilogue& epilogue,
                     const std::vector<int64_t>& x, const std::vector<int64_t>& w, int device) {
  const ConvPlan plan = convPlanOf(layer, spec, x, w);
  if (plan.empty) return 0;
  const WorkspaceLayout layout = layoutOf(plan, epilogue, spec.storage);
  CudnnConvolution convolution(plan.problem);
  return layout.cudnnOffset() +
         convolution.choose(cudnnHandleForThread(device), kCudnnWorkspaceLimit, layer.describe()).workspaceBytes;
}

class ConvStep : public CudaStep {
 public:
  ConvStep(const Layer& layer, const Tactic& tactic, const LayerSignature& signature, CudaDevice& device)
      : CudaStep(layer, tactic, signature, device,
                 storageOf(outputDeclared(signature), tacticPrecision(layer, tactic))),
        spec_(convSpecOf(layer, tacticPrecision(layer, tactic), outputDeclared(signature))),
        epilogue_(layer, spec_.storage, device),
        name_(layer.describe()) {}

  uint64_t workspaceBytes(std::span<const TensorView> inputs, std::span<const TensorView>) const override {
    if (inputs.size() < 2 || inputs[kConvX].dims.empty() || inputs[kConvW].dims.empty()) return 0;
    return workspaceAt(layer_, spec_, epilogue_.attributes(), inputs[kConvX].dims, inputs[kConvW].dims,
                       device_.ordinal);
  }

  std::unique_ptr<StepState> createState() const override { return std::make_unique<ConvState>(); }

  void enqueue(const StepArgs& args, Stream& stream) const override {
    auto* state = dynamic_cast<ConvState*>(args.state);
    if (!state) throw Error(ErrorCode::kInternal, name_ + ": enqueued without the state its step made");
    ShapeEntry& entry = shapeFor(*state, args);
    const ConvPlan& plan = entry.plan;
    if (plan.empty) return;
    const TensorView& out = args.outputs[0];
    const WorkspaceLayout layout = layoutOf(plan, epilogue_.attributes(), spec_.storage);
    char* workspace = static_cast<char*>(args.workspace);
    void* scratch = workspace;
    void* buffer = workspace + layout.scratch;
    const cudaStream_t s = streamOf(stream);
    const k::ElementType type = elementType(out);
    cudnnHandle_t handle = cudnnHandleOnStream(device_.ordinal, s, name_);
    const void* x = input(args, kConvX);
    if (plan.padInput) {
      check(k::pad(x, args.inputs[kConvX].dims, buffer, plan.padBegin, plan.problem.x, k::PadMode::kConstant, nullptr,
                   type, s),
            "padding its input");
      x = buffer;
    }
    void* y = plan.cropOutput ? buffer : out.data;
    entry.convolution->run(handle, entry.algorithm, x, input(args, kConvW), y, workspace + layout.cudnnOffset(),
                           entry.algorithm.workspaceBytes, name_);
    if (plan.cropOutput)
      check(k::pad(buffer, plan.problem.y, out.data, plan.cropBegin, out.dims, k::PadMode::kConstant, nullptr, type, s),
            "cutting its output from the convolution's result");
    entry.work.bias = spec_.hasBias ? input(args, kConvBias) : nullptr;
    entry.work.residualBefore =
        spec_.hasResidual && epilogue_.attributes().residualBeforeActivation ? input(args, kConvResidual) : nullptr;
    entry.work.residualAfter =
        spec_.hasResidual && !epilogue_.attributes().residualBeforeActivation ? input(args, kConvResidual) : nullptr;
    epilogue_.apply(out.data, out.dims, entry.work, scratch, s);
  }

 private:
  ShapeEntry& shapeFor(ConvState& state, const StepArgs& args) const {
    const std::vector<int64_t>&x = args.inputs[kConvX].dims, &w = args.inputs[kConvW].dims;
    for (auto& entry : state.shapes)
      if (entry->x == x && entry->w == w) return *entry;
    // First launch at these dims: plan, descriptors and cuDNN's algorithm, once.
    auto entry = std::make_unique<ShapeEntry>();
    entry->x = x;
    entry->w = w;
    entry->plan = convPlanOf(layer_, spec_, x, w);
    if (entry->plan.outputDims != args.outputs[0].dims)
      throw Error(ErrorCode::kInternal, name_ + ": its convolution makes " + dimsText(entry->plan.outputDims) +
                                            " but the output is " + dimsText(args.outputs[0].dims));
    entry->work.biasDims = entry->plan.biasDims;
    entry->work.activate = true;
    if (!entry->plan.empty) {
      const WorkspaceLayout layout = layoutOf(entry->plan, epilogue_.attributes(), spec_.storage);
      if (args.workspaceBytes < layout.cudnnOffset())
        throw Error(ErrorCode::kInternal, name_ + ": its workspace of " + std::to_string(args.workspaceBytes) +
                                              " bytes is smaller than the " + std::to_string(layout.cudnnOffset()) +
                                              " its buffers need");
      const uint64_t limit = std::min(args.workspaceBytes - layout.cudnnOffset(), kCudnnWorkspaceLimit);
      entry->convolution = std::make_unique<CudnnConvolution>(entry->plan.problem);
      entry->algorithm = entry->convolution->choose(cudnnHandleForThread(device_.ordinal), limit, name_);
    }
    state.shapes.push_back(std::move(entry));
    return *state.shapes.back();
  }

  ConvSpec spec_;
  ElementwiseEpilogue epilogue_;
  std::string name_;  // layer.describe(), made once: launches build no strings
};

std::vector<Tactic> convTactics(const Layer& layer, Precision precision, const LayerInputs& inputs,
                                CudaDevice& device) {
  // fp16 / bf16 2-D convolutions run as cuDNN graphs with their epilogue fused, channels-last,
  // timed against the convolution API (NCHW, epilogue as separate kernels), which also takes what
  // the graph does not; a near tie goes to the graph (its neighbours skip re-layouts).
  std::vector<Tactic> tactics = graphConvTactics(layer, precision, inputs, device);
  for (Tactic& depthwise : depthwiseConvTactics(layer, precision, inputs)) tactics.push_back(std::move(depthwise));
  for (Tactic& small : smallChannelConvTactics(layer, precision, inputs)) tactics.push_back(std::move(small));
  for (Tactic& gemm : gemmConvTactics(layer, precision, inputs, device)) tactics.push_back(std::move(gemm));
  Tactic& tactic = tactics.emplace_back();
  tactic.id = tacticId(layer, precision);
  tactic.workspaceBytes = kCudnnWorkspaceLimit;
  if (inputs.dims.size() < 2 || inputs.dims[kConvX].empty() || inputs.dims[kConvW].empty()) return tactics;
  try {
    const ConvSpec spec = convSpecOf(layer, precision, inputs.types.empty() ? DataType::kFloat32 : inputs.types[0]);
    const FusedEpilogue epilogue = layer.domain == fused::kDomain ? readFusedEpilogue(layer) : FusedEpilogue{};
    tactic.workspaceBytes =
        workspaceAt(layer, spec, epilogue, inputs.dims[kConvX], inputs.dims[kConvW], device.ordinal);
  } catch (const Error&) {
    // The step meets the same problem at its first launch and reports it naming the layer.
  }
  return tactics;
}

const std::initializer_list<DataType> kFloatTypes = {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16};

SupportVerdict convTensors(const Layer& layer, Precision, const LayerSignature& tensors) {
  if (layer.domain == fused::kDomain) {
    const std::string base = layer.attrString(fused::kBase, "");
    if (base != "Conv" && base != "ConvTranspose")
      return {false, "kiln.FusedConv over '" + base + "' has no CUDA kernel"};
    if (!activationNamed(layer.attrString(fused::kActivation, "")))
      return {false, "the activation '" + layer.attrString(fused::kActivation, "") + "' has no CUDA kernel"};
  }
  if (auto v = firstRefusal({ranksWithinLimit(tensors), allOfTypes(tensors, kFloatTypes)}); !v.supported)
    return {false, v.why + " (cuDNN takes float32, float16 and bfloat16 here)"};
  const Tensor* x = tensors.inputs.empty() ? nullptr : tensors.inputs[0];
  if (x && x->shape.hasRank() && (x->shape.rank() < 3 || x->shape.rank() > 5))
    return {false, "cuDNN convolutions take 1 to 3 spatial dims; '" + x->name + "' has rank " +
                       std::to_string(x->shape.rank())};
  return {};
}

}  // namespace

void registerConvCudaOps(CudaOpRegistry& registry) {
  CudaOp op = stepOp<ConvStep>(convTensors);
  op.instantiate = [](const Layer& layer, const Tactic& tactic, const LayerSignature& signature,
                      CudaDevice& device) -> std::unique_ptr<Step> {
    if (isGraphConvTactic(tactic.id)) return makeGraphConvStep(layer, tactic, signature, device);
    if (isDepthwiseConvTactic(tactic.id)) return makeDepthwiseConvStep(layer, tactic, signature, device);
    if (isSmallChannelConvTactic(tactic.id)) return makeSmallChannelConvStep(layer, tactic, signature, device);
    if (isGemmConvTactic(tactic.id)) return makeGemmConvStep(layer, tactic, signature, device);
    return std::make_unique<ConvStep>(layer, tactic, signature, device);
  };
  op.tactics = convTactics;
  // A graph, depthwise or cuBLASLt 1x1 tactic reads X and the residual, and writes Y, in either
  // layout; the small-channel one X (it takes no residual).
  op.channelsLastInputs = [](const Layer& layer, const std::string& tactic) -> std::vector<size_t> {
    if (isSmallChannelConvTactic(tactic)) return {kConvX};
    if (!isGraphConvTactic(tactic) && !isDepthwiseConvTactic(tactic) && !isGemmConvTactic(tactic)) return {};
    if (layer.domain == fused::kDomain) return {kConvX, kConvResidual};
    return {kConvX};
  };
  registry.add("Conv", op);
  registry.add("ConvTranspose", op);
  registry.add(fused::kDomain, fused::kFusedConv, op);
  registry.add(fused::kDomain, fused::kFusedConvPool, convPoolOp(op));
}

}  // namespace kiln::cuda
