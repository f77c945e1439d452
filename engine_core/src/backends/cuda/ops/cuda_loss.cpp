// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss on the GPU: SoftmaxCrossEntropyLoss's
// log-softmax over the classes (kernels/cuda/softmax) goes to its log_prob output, or to the
// workspace when the layer has none, then the NLL kernel (kernels/cuda/loss) computes the loss.
// 'reduction' and ignore_index resolve through the helpers the CPU kernels use. A target that is
// neither a class nor ignore_index fails the CPU kernel; a GPU kernel cannot fail, so its loss
// (and a sum or mean over it) is NaN.
#include "../../../ops/reduction_softmax.h"
#include "../cuda_ops.h"
#include "../cuda_step.h"
#include "../workspace_math.h"

#include <kiln/error.h>

#include <kernels/cuda/elementwise/cast.h>
#include <kernels/cuda/loss/loss.h>
#include <kernels/cuda/softmax/softmax.h>

namespace kiln::cuda {
namespace {

namespace k = kernels::cuda;

// The scores [N, C, d...] as [batch, classes, spatial].
struct LossGeometry {
  int64_t batch = 0, classes = 0, spatial = 1;

  explicit LossGeometry(const std::vector<int64_t>& dims) {
    batch = dims.at(0);
    classes = dims.at(1);
    for (size_t d = 2; d < dims.size(); ++d) spatial *= dims[d];
  }
};

class LossStep : public CudaStep {
 public:
  LossStep(const Layer& layer, const Tactic& tactic, const LayerSignature& signature, CudaDevice& device)
      : CudaStep(layer, tactic, signature, device),
        reduction_(lossReductionOf(layer)),
        ignore_(lossIgnoreIndex(layer)),
        softmax_(layer.opType == "SoftmaxCrossEntropyLoss") {}

  uint64_t workspaceBytes(std::span<const TensorView> inputs, std::span<const TensorView>) const override {
    return layout(inputs).total;
  }

  void enqueue(const StepArgs& args, Stream& stream) const override {
    const TensorView& scores = args.inputs[0];
    const LossGeometry g(scores.dims);
    const Layout at = layout(args.inputs);
    if (args.workspaceBytes < at.total)
      throw Error(ErrorCode::kInternal, layer_.describe() + ": its workspace of " + std::to_string(args.workspaceBytes) +
                                            " bytes is below the " + std::to_string(at.total) + " it asked for");
    char* workspace = static_cast<char*>(args.workspace);
    const cudaStream_t s = streamOf(stream);
    const k::ElementType type = elementType(scores);
    const void* logProb = input(args, 0);
    if (softmax_) {
      void* dst = layer_.hasOutput(1) ? args.outputs[1].data : workspace + at.logProb;
      check(k::launchSoftmax(kernels::SoftmaxKind::kLogSoftmax, logProb, dst, g.batch, g.classes, g.spatial, type, s),
            "launching its log-softmax");
      logProb = dst;
    }
    const void* classWeight = layer_.hasInput(2) ? input(args, 2) : nullptr;
    if (classWeight && weightDataType(args) != scores.dtype) {  // a weight the plan stores in another float type
      check(k::launchCast(classWeight, elementType(weightView(args)), workspace + at.weight, type, g.classes, s),
            "converting its weight to the scores' type");
      classWeight = workspace + at.weight;
    }
    const TensorView& target = args.inputs[1];
    check(k::launchNllLoss(logProb, input(args, 1), elementType(target), classWeight, args.outputs[0].data, g.batch,
                           g.classes, g.spatial, reduction_, ignore_ ? &*ignore_ : nullptr, type,
                           workspace + at.partials, at.total - at.partials, s));
  }

 private:
  // Workspace offsets: SoftmaxCrossEntropyLoss's log-probabilities (without a log_prob output),
  // the weight cast to the scores' type, the NLL kernel's partial sums.
  struct Layout {
    uint64_t logProb = 0, weight = 0, partials = 0, total = 0;
  };

  Layout layout(std::span<const TensorView> inputs) const {
    const TensorView& scores = inputs[0];
    const LossGeometry g(scores.dims);
    const uint64_t element = byteSize(scores.dtype);
    Layout l;
    l.weight = softmax_ && !layer_.hasOutput(1) ? alignUp(uint64_t(scores.elementCount()) * element) : 0;
    l.partials = l.weight + (layer_.hasInput(2) ? alignUp(uint64_t(g.classes) * element) : 0);
    l.total = l.partials + k::nllLossWorkspaceBytes(g.batch, g.spatial, reduction_);
    return l;
  }

  // The weight's type and view on the device: the uploaded copy's type for a constant.
  DataType weightDataType(const StepArgs& args) const {
    return weight(2) ? weightType(2) : args.inputs[2].dtype;
  }
  TensorView weightView(const StepArgs& args) const {
    TensorView view = args.inputs[2];
    view.dtype = weightDataType(args);
    return view;
  }

  kernels::LossReduction reduction_;
  std::optional<int64_t> ignore_;
  bool softmax_;
};

SupportVerdict lossTensors(const Layer& layer, Precision, const LayerSignature& tensors) {
  if (auto v = ranksWithinLimit(tensors); !v.supported) return v;
  const Tensor* scores = tensors.inputs.empty() ? nullptr : tensors.inputs[0];
  if (scores && scores->dtype != DataType::kFloat32 && scores->dtype != DataType::kFloat16 &&
      scores->dtype != DataType::kBFloat16 && scores->dtype != DataType::kFloat64)
    return {false, layer.opType + " on " + std::string(toString(scores->dtype)) + " has no CUDA kernel (float types only)"};
  const Tensor* target = tensors.inputs.size() > 1 ? tensors.inputs[1] : nullptr;
  if (target && target->dtype != DataType::kInt32 && target->dtype != DataType::kInt64)
    return {false, "the CUDA loss kernel reads int32 or int64 targets, not " + std::string(toString(target->dtype))};
  return {};
}

}  // namespace

void registerLossCudaOps(CudaOpRegistry& registry) {
  for (const char* name : {"NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"})
    registry.add(name, stepOp<LossStep>(lossTensors));
}

}  // namespace kiln::cuda
