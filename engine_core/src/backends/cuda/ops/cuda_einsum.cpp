// Einsum on the GPU: the equation parsed as the schema and the CPU do (kernels/cpu/gemm/einsum.h),
// planned into strides per label (kernels/cuda/einsum) and evaluated as one direct contraction.
// Meant for the small contractions of models and tests: the work is output elements times summed
// elements (MatMul-sized products belong to cuBLASLt).
#include "cuda_data_step.h"

#include <kiln/error.h>

#include <kernels/cuda/einsum/einsum.h>

#include <algorithm>
#include <set>

namespace kiln::cuda {
namespace {

namespace k = kernels::cuda;

class EinsumStep : public DataStep {
 public:
  using DataStep::DataStep;
  void enqueue(const StepArgs& args, Stream& stream) const override {
    std::vector<std::vector<int64_t>> dims;
    std::vector<int64_t> ranks;
    std::vector<const void*> operands;
    for (size_t i = 0; i < layer_.inputs.size(); ++i) {
      dims.push_back(args.inputs[i].dims);
      ranks.push_back(int64_t(dims.back().size()));
      operands.push_back(input(args, i));
    }
    kernels::EinsumEquation equation;
    k::EinsumContraction contraction;
    std::string why = kernels::parseEinsumEquation(layer_.attrString("equation"), ranks, equation);
    if (why.empty()) why = k::planEinsum(equation, dims, contraction);
    if (!why.empty()) throw Error(ErrorCode::kInvalidArgument, layer_.describe() + ": " + why);
    if (contraction.outputCount != args.outputs[0].elementCount())
      throw Error(ErrorCode::kInternal, layer_.describe() + ": its output has " +
                                            std::to_string(args.outputs[0].elementCount()) +
                                            " elements, the equation " + std::to_string(contraction.outputCount));
    check(k::einsum(operands.data(), args.outputs[0].data, contraction, elementType(args.outputs[0]),
                    streamOf(stream)));
  }
};

SupportVerdict einsumTensors(const Layer& layer, Precision, const LayerSignature& tensors) {
  if (auto v = ranksWithinLimit(tensors); !v.supported) return v;
  if (auto v = allOfTypes(tensors, {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16, DataType::kFloat64,
                                    DataType::kInt32, DataType::kInt64, DataType::kUInt32, DataType::kUInt64});
      !v.supported)
    return v;
  if (layer.inputs.size() > size_t(k::kEinsumMaxOperands))
    return {false, "Einsum of " + std::to_string(layer.inputs.size()) + " operands has no CUDA kernel (at most " +
                       std::to_string(k::kEinsumMaxOperands) + ")"};
  // With the ranks known, the labels the kernel keeps and sums must fit it.
  std::vector<int64_t> ranks;
  for (const Tensor* t : tensors.inputs) {
    if (!t || !t->shape.hasRank()) return {};
    ranks.push_back(int64_t(t->shape.rank()));
  }
  kernels::EinsumEquation equation;
  if (!kernels::parseEinsumEquation(layer.attrString("equation"), ranks, equation).empty()) return {};
  std::set<int> summed;
  for (const auto& labels : equation.inputLabels)
    for (int label : labels)
      if (std::find(equation.outputLabels.begin(), equation.outputLabels.end(), label) == equation.outputLabels.end())
        summed.insert(label);
  if (equation.outputLabels.size() > size_t(k::kEinsumMaxLabels) || summed.size() > size_t(k::kEinsumMaxLabels))
    return {false, "Einsum '" + layer.attrString("equation") + "' has more labels than the CUDA kernel takes (" +
                       std::to_string(k::kEinsumMaxLabels) + " kept and " + std::to_string(k::kEinsumMaxLabels) +
                       " summed)"};
  return {};
}

}  // namespace

void registerEinsumCudaOps(CudaOpRegistry& registry) { registry.add("Einsum", stepOp<EinsumStep>(einsumTensors)); }

}  // namespace kiln::cuda
