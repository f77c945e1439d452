// kiln.FusedConvPool on the GPU (conv_pool.h). The split form is what the CUDA backend falls back on
// where the small-channel kernel refuses (float32, an output row wider than one segment): the
// layer's FusedConv runs as its own cuDNN step with its output in this step's workspace, and the
// MaxPool kernel reads it from there, so the fused layer runs wherever the two apart would.
#include "../../../ops/fused.h"
#include "../../common/conv_geometry.h"
#include "../cuda_runtime_support.h"
#include "../cuda_step.h"
#include "conv_plan.h"
#include "conv_pool.h"
#include "pool_window.h"
#include "small_channel_conv.h"

#include <kiln/error.h>

namespace kiln::cuda {
namespace {

namespace k = kernels::cuda;

const std::string kSplitPrefix = "cuda.convpool.split.";

constexpr uint64_t kAlignment = 256;

uint64_t aligned(uint64_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

// The convolution's output dims [N, K, P, Q] for X and W.
std::vector<int64_t> convDims(const Layer& conv, const std::vector<int64_t>& x, const std::vector<int64_t>& w) {
  const kernels::ConvShape shape = forwardConvShape(fused::baseLayer(conv), x, w);
  return {x.at(0), w.at(0), shape.window.out[1], shape.window.out[2]};
}

class ConvPoolSplitStep : public Step {
 public:
  ConvPoolSplitStep(const Layer& layer, const Tactic& tactic, const LayerSignature& signature, CudaDevice& device,
                    const CudaOp& fusedConv)
      : tactic_(tactic),
        conv_(fused::convOfConvPool(layer)),
        pool_(fused::poolOfConvPool(layer)),
        name_(layer.describe()) {
    convOut_.name = conv_.outputs.at(0);
    convOut_.dtype = outputDeclared(signature);
    LayerSignature convSignature = signature;
    convSignature.outputs = {&convOut_};
    Tactic convTactic = tactic;
    convTactic.id = "cudnn.conv." + tactic.id.substr(kSplitPrefix.size());
    conv_.outputs.resize(1);
    convStep_ = fusedConv.instantiate(conv_, convTactic, convSignature, device);
  }

  const Tactic& tactic() const override { return tactic_; }
  std::unique_ptr<StepState> createState() const override { return convStep_->createState(); }

  uint64_t workspaceBytes(std::span<const TensorView> inputs, std::span<const TensorView> outputs) const override {
    if (inputs.size() < 2 || inputs[kConvX].dims.empty() || inputs[kConvW].dims.empty() || outputs.empty()) return 0;
    const TensorView convView = convViewOf(inputs, outputs[0], nullptr);
    return aligned(viewBytes(convView)) + convStep_->workspaceBytes(inputs, std::span(&convView, 1));
  }

  void enqueue(const StepArgs& args, Stream& stream) const override {
    const TensorView& out = args.outputs[0];
    if (elementCount(out.dims) == 0) return;
    char* workspace = static_cast<char*>(args.workspace);
    TensorView convView = convViewOf(args.inputs, out, workspace);
    const uint64_t convBytes = aligned(viewBytes(convView));
    if (args.workspaceBytes < convBytes)
      throw Error(ErrorCode::kInternal, name_ + ": its workspace of " + std::to_string(args.workspaceBytes) +
                                            " bytes does not hold the convolution's " + std::to_string(convBytes));
    StepArgs convArgs = args;
    convArgs.outputs = std::span(&convView, 1);
    convArgs.workspace = workspace + convBytes;
    convArgs.workspaceBytes = args.workspaceBytes - convBytes;
    convStep_->enqueue(convArgs, stream);
    const k::ElementType type = out.dtype == DataType::kFloat16    ? k::ElementType::kFloat16
                                : out.dtype == DataType::kBFloat16 ? k::ElementType::kBFloat16
                                                                   : k::ElementType::kFloat32;
    const cudaError_t status =
        k::maxPool(convView.data, out.data, nullptr, false, convView.dims[0], convView.dims[1],
                   poolWindow(pool_, convView.dims), k::PoolLayout::kChannelsFirst, type, nativeStream(stream));
    if (status != cudaSuccess)
      throw Error(ErrorCode::kRuntimeError,
                  name_ + ": launching its pool kernel failed: " + std::string(cudaGetErrorString(status)));
  }

 private:
  TensorView convViewOf(std::span<const TensorView> inputs, const TensorView& out, void* data) const {
    TensorView view = out;
    view.dims = convDims(conv_, inputs[kConvX].dims, inputs[kConvW].dims);
    view.format = TensorFormat::kLinear;
    view.data = data;
    view.isConstant = false;
    return view;
  }
  static uint64_t viewBytes(const TensorView& v) { return uint64_t(elementCount(v.dims)) * kiln::byteSize(v.dtype); }

  Tactic tactic_;
  Layer conv_, pool_;
  Tensor convOut_;
  std::unique_ptr<Step> convStep_;
  std::string name_;
};

}  // namespace

CudaOp convPoolOp(const CudaOp& fusedConv) {
  CudaOp op = fusedConv;
  op.supports = [fusedConv](const Layer& layer, Precision precision, const LayerSignature& tensors) -> SupportVerdict {
    if (layer.attrString(fused::kBase, "") != "Conv") return {false, "kiln.FusedConvPool's base must be Conv"};
    return fusedConv.supports(fused::convOfConvPool(layer), precision, tensors);
  };
  op.tactics = [fusedConv](const Layer& layer, Precision precision, const LayerInputs& inputs, CudaDevice& device) {
    std::vector<Tactic> tactics = smallChannelConvTactics(layer, precision, inputs);
    Tactic& split = tactics.emplace_back();
    split.id = kSplitPrefix + precisionTag(precision);
    // The cuDNN step's workspace at these dims and the convolution's output.
    for (const Tactic& t : fusedConv.tactics(fused::convOfConvPool(layer), precision, inputs, device))
      if (t.id.rfind("cudnn.conv.", 0) == 0) split.workspaceBytes = t.workspaceBytes;
    if (inputs.dims.size() > kConvW && inputs.dims[kConvX].size() == 4 && inputs.dims[kConvW].size() == 4) {
      const DataType storage = storageOf(inputs.types.empty() ? DataType::kFloat32 : inputs.types[0], precision);
      split.workspaceBytes += aligned(
          uint64_t(elementCount(convDims(fused::convOfConvPool(layer), inputs.dims[kConvX], inputs.dims[kConvW]))) *
          kiln::byteSize(storage));
    }
    return tactics;
  };
  op.instantiate = [fusedConv](const Layer& layer, const Tactic& tactic, const LayerSignature& signature,
                               CudaDevice& device) -> std::unique_ptr<Step> {
    if (isSmallChannelConvTactic(tactic.id)) return makeSmallChannelConvStep(layer, tactic, signature, device);
    return std::make_unique<ConvPoolSplitStep>(layer, tactic, signature, device, fusedConv);
  };
  // The small-channel tactic reads X either way and writes the pooled map either way.
  op.channelsLastInputs = [](const Layer&, const std::string& tactic) -> std::vector<size_t> {
    if (isSmallChannelConvTactic(tactic)) return {kConvX};
    return {};
  };
  op.supportsLayer = {};
  return op;
}

}  // namespace kiln::cuda
