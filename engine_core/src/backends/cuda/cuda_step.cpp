#include "cuda_step.h"

#include <kiln/error.h>

namespace kiln::cuda {

CudaStep::CudaStep(const Layer& layer, Tactic tactic, const LayerSignature& signature, CudaDevice& device)
    : layer_(layer), tactic_(std::move(tactic)), device_(device) {
  const LayerWeights weights = signature.weights();
  weights_.resize(weights.size());
  hostWeights_ = weights;
  for (size_t i = 0; i < weights.size(); ++i)
    if (weights[i] && weights[i]->dtype() != DataType::kString)
      weights_[i] = DeviceCopy(device.allocator, weights[i]->rawData(), weights[i]->byteSize());
}

const void* CudaStep::input(const StepArgs& args, size_t i) const {
  if (i < weights_.size() && weights_[i]) return weights_[i].get();
  return i < args.inputs.size() ? args.inputs[i].data : nullptr;
}

const HostTensor* CudaStep::weight(size_t i) const { return i < hostWeights_.size() ? hostWeights_[i] : nullptr; }

void CudaStep::check(cudaError_t status, const char* what) const {
  if (status == cudaSuccess) return;
  try {
    cuda::check(status, layer_.describe() + ": " + what);
  } catch (const Error& e) {
    throw Error(status == cudaErrorInvalidValue ? ErrorCode::kUnsupported : e.code(),
                status == cudaErrorInvalidValue ? std::string(e.what()) + " (the kernel does not take these types or shapes)"
                                                : e.what());
  }
}

kernels::cuda::ElementType CudaStep::elementType(const TensorView& view) const {
  const auto type = elementTypeOf(view.dtype);
  if (!type)
    throw Error(ErrorCode::kUnsupported, layer_.describe() + ": the CUDA backend has no kernels for " +
                                             std::string(toString(view.dtype)) + " tensors");
  return *type;
}

}  // namespace kiln::cuda
