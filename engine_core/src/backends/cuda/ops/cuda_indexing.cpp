// The indexed ops on the GPU (kernels/cuda/indexing): Gather, GatherElements, GatherND, ScatterND
// and ScatterElements (and its old name Scatter) with their reductions. Indices are device data or
// weights, int32 or int64. The scatters get a workspace so that duplicate indices under reduction
// 'none' resolve as on the CPU (the last update wins).
//
// An index out of range fails the CPU kernel; a GPU kernel cannot fail, so it reads or writes
// nothing there (a gathered element becomes zero) and the launch carries on.
#include "../../common/tensor_shape_ops.h"
#include "cuda_data_step.h"

#include <kernels/cuda/indexing/gather.h>
#include <kernels/cuda/indexing/scatter.h>

namespace kiln::cuda {
namespace {

namespace k = kernels::cuda;

int axisAttr(const Layer& layer, size_t rank) {
  const int64_t axis = layer.attrInt("axis", 0);
  return int(axis < 0 ? axis + int64_t(rank) : axis);
}

class GatherStep : public DataStep {
 public:
  using DataStep::DataStep;
  void enqueue(const StepArgs& args, Stream& stream) const override {
    const TensorView &data = args.inputs[0], &indices = args.inputs[1], &out = args.outputs[0];
    check(k::gather(input(args, 0), data.dims, input(args, 1), indices.elementCount(), elementType(indices),
                    axisAttr(layer_, data.dims.size()), out.data, elementType(data), nullptr, streamOf(stream)));
  }
};

class GatherElementsStep : public DataStep {
 public:
  using DataStep::DataStep;
  void enqueue(const StepArgs& args, Stream& stream) const override {
    const TensorView &data = args.inputs[0], &indices = args.inputs[1], &out = args.outputs[0];
    check(k::gatherElements(input(args, 0), data.dims, input(args, 1), indices.dims, elementType(indices),
                            axisAttr(layer_, data.dims.size()), out.data, elementType(data), nullptr, streamOf(stream)));
  }
};

class GatherNDStep : public DataStep {
 public:
  using DataStep::DataStep;
  void enqueue(const StepArgs& args, Stream& stream) const override {
    const TensorView &data = args.inputs[0], &indices = args.inputs[1], &out = args.outputs[0];
    check(k::gatherND(input(args, 0), data.dims, input(args, 1), indices.dims, elementType(indices),
                      int(layer_.attrInt("batch_dims", 0)), out.data, elementType(data), nullptr, streamOf(stream)));
  }
};

k::ScatterReduction cudaReduction(kernels::ScatterReduction reduction) {
  switch (reduction) {
    case kernels::ScatterReduction::kAdd: return k::ScatterReduction::kAdd;
    case kernels::ScatterReduction::kMul: return k::ScatterReduction::kMul;
    case kernels::ScatterReduction::kMax: return k::ScatterReduction::kMax;
    case kernels::ScatterReduction::kMin: return k::ScatterReduction::kMin;
    case kernels::ScatterReduction::kNone: break;
  }
  return k::ScatterReduction::kNone;
}

// dst = data (copied on the stream) with updates written or combined at the indexed places.
class ScatterStep : public DataStep {
 public:
  ScatterStep(const Layer& layer, const Tactic& tactic, const LayerSignature& signature, CudaDevice& device)
      : DataStep(layer, tactic, signature, device),
        reduction_(cudaReduction(scatterReductionOf(layer))),
        elements_(layer.opType != "ScatterND") {}

  uint64_t workspaceBytes(std::span<const TensorView> inputs, std::span<const TensorView>) const override {
    const auto& data = inputs[0].dims;
    const auto& indices = inputs[1].dims;
    return elements_ ? k::scatterElementsWorkspaceBytes(data, indices, reduction_)
                     : k::scatterNDWorkspaceBytes(data, indices, reduction_);
  }

  void enqueue(const StepArgs& args, Stream& stream) const override {
    const TensorView &data = args.inputs[0], &indices = args.inputs[1], &out = args.outputs[0];
    const cudaStream_t s = streamOf(stream);
    if (elements_)
      check(k::scatterElements(input(args, 0), data.dims, input(args, 1), indices.dims, elementType(indices),
                               axisAttr(layer_, data.dims.size()), input(args, 2), out.data, reduction_,
                               elementType(data), args.workspace, size_t(args.workspaceBytes), nullptr, s));
    else
      check(k::scatterND(input(args, 0), data.dims, input(args, 1), indices.dims, elementType(indices), input(args, 2),
                         out.data, reduction_, elementType(data), args.workspace, size_t(args.workspaceBytes), nullptr,
                         s));
  }

 private:
  k::ScatterReduction reduction_;
  bool elements_;  // ScatterElements / Scatter, else ScatterND
};

SupportVerdict gatherTensors(const Layer& layer, Precision precision, const LayerSignature& tensors) {
  return firstRefusal({movableTensors(layer, precision, tensors), indexInput(layer, tensors, 1, "indices")});
}

// The reductions combine numbers: not bool or fp8.
SupportVerdict scatterTensors(const Layer& layer, Precision precision, const LayerSignature& tensors) {
  if (auto v = gatherTensors(layer, precision, tensors); !v.supported) return v;
  const Tensor* data = tensors.inputs.empty() ? nullptr : tensors.inputs[0];
  if (!data || scatterReductionOf(layer) == kernels::ScatterReduction::kNone) return {};
  if (data->dtype == DataType::kBool || data->dtype == DataType::kFloat8E4M3 || data->dtype == DataType::kFloat8E5M2)
    return {false, "reduction '" + layer.attrString("reduction", "none") + "' on " +
                       std::string(toString(data->dtype)) + " data has no CUDA kernel"};
  return {};
}

}  // namespace

void registerIndexingCudaOps(CudaOpRegistry& registry) {
  registry.add("Gather", stepOp<GatherStep>(gatherTensors));
  registry.add("GatherElements", stepOp<GatherElementsStep>(gatherTensors));
  registry.add("GatherND", stepOp<GatherNDStep>(gatherTensors));
  for (const char* name : {"ScatterND", "ScatterElements", "Scatter"})
    registry.add(name, stepOp<ScatterStep>(scatterTensors));
}

}  // namespace kiln::cuda
