// Softmax, LogSoftmax and Hardmax on the GPU (kernels/cuda/softmax): the line each normalises comes
// from the helpers the schema and the CPU kernels share (softmaxAxisAttr, softmaxFlattens,
// splitAtAxis), so opset < 13's "coerce to 2-D at axis" and opset 13's one axis resolve the same
// way on both backends. Float types; float16/bfloat16 compute in float.
#include "../../../ops/reduction_softmax.h"
#include "cuda_data_step.h"

#include <kernels/cuda/softmax/softmax.h>

namespace kiln::cuda {
namespace {

namespace k = kernels::cuda;

class SoftmaxStep : public CudaStep {
 public:
  SoftmaxStep(const Layer& layer, const Tactic& tactic, const LayerSignature& signature, CudaDevice& device)
      : CudaStep(layer, tactic, signature, device),
        kind_(layer.opType == "LogSoftmax" ? kernels::SoftmaxKind::kLogSoftmax
              : layer.opType == "Hardmax"  ? kernels::SoftmaxKind::kHardmax
                                           : kernels::SoftmaxKind::kSoftmax) {}

  void enqueue(const StepArgs& args, Stream& stream) const override {
    const TensorView &x = args.inputs[0], &y = args.outputs[0];
    const int64_t rank = int64_t(x.dims.size());
    int64_t axis = softmaxAxisAttr(layer_);
    axis = axis < 0 ? axis + rank : axis;
    const AxisSplit s = splitAtAxis(x.dims, axis, softmaxFlattens(layer_));
    check(k::launchSoftmax(kind_, input(args, 0), y.data, s.outer, s.n, s.inner, elementType(x), streamOf(stream)));
  }

 private:
  kernels::SoftmaxKind kind_;
};

SupportVerdict softmaxTensors(const Layer& layer, Precision, const LayerSignature& tensors) {
  return firstRefusal({ranksWithinLimit(tensors), floatData(layer, tensors)});
}

}  // namespace

void registerSoftmaxCudaOps(CudaOpRegistry& registry) {
  for (const char* name : {"Softmax", "LogSoftmax", "Hardmax"}) registry.add(name, stepOp<SoftmaxStep>(softmaxTensors));
}

}  // namespace kiln::cuda
