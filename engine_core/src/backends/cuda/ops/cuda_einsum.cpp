// Einsum on the GPU: the equation parsed as the schema and the CPU do (kernels/cpu/gemm/einsum.h),
// planned into strides per label (kernels/cuda/einsum) and evaluated as one direct contraction.
// Meant for the small contractions of models and tests: the work is output elements times summed
// elements (MatMul-sized products belong to cuBLASLt).
#include "cuda_data_step.h"

#include <kiln/error.h>

#include <kernels/cuda/einsum/einsum.h>

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
                                            std::to_string(args.outputs[0].elementCount()) + " elements, the equation " +
                                            std::to_string(contraction.outputCount));
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
  return {};
}

}  // namespace

void registerEinsumCudaOps(CudaOpRegistry& registry) { registry.add("Einsum", stepOp<EinsumStep>(einsumTensors)); }

}  // namespace kiln::cuda
