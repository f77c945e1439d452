#include "cuda_step.h"

#include <kiln/error.h>

#include <algorithm>

#include "../../runtime/precision_convert.h"

namespace kiln::cuda {

namespace {

bool isFloatStorage(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat16 || t == DataType::kBFloat16;
}

// `weight` in `type` (through float32 between the two 16-bit types).
HostTensor convertedWeight(const HostTensor& weight, DataType type) {
  HostTensor wide(DataType::kFloat32, weight.dims());
  convertFloatStorage(weight.dtype(), weight.rawData(), DataType::kFloat32, wide.rawData(), weight.elementCount());
  if (type == DataType::kFloat32) return wide;
  HostTensor narrow(type, weight.dims());
  convertFloatStorage(DataType::kFloat32, wide.rawData(), type, narrow.rawData(), weight.elementCount());
  return narrow;
}

}  // namespace

CudaStep::CudaStep(const Layer& layer, Tactic tactic, const LayerSignature& signature, CudaDevice& device)
    : CudaStep(layer, std::move(tactic), signature, device, DataType::kUndefined) {}

CudaStep::CudaStep(const Layer& layer, Tactic tactic, const LayerSignature& signature, CudaDevice& device,
                   DataType floatWeights, const std::vector<size_t>& ownCopies)
    : layer_(layer), tactic_(std::move(tactic)), device_(device) {
  const LayerWeights weights = signature.weights();
  weights_.resize(weights.size());
  weightTypes_.assign(weights.size(), DataType::kUndefined);
  hostWeights_ = weights;
  for (size_t i = 0; i < weights.size(); ++i) {
    if (!weights[i] || weights[i]->dtype() == DataType::kString) continue;
    if (std::find(ownCopies.begin(), ownCopies.end(), i) != ownCopies.end()) continue;
    const HostTensor& w = *weights[i];
    if (floatWeights != DataType::kUndefined && isFloatStorage(w.dtype()) && w.dtype() != floatWeights) {
      const HostTensor converted = convertedWeight(w, floatWeights);
      weights_[i] = DeviceCopy(device.allocator, converted.rawData(), converted.byteSize());
      weightTypes_[i] = floatWeights;
    } else {
      weights_[i] = DeviceCopy(device.allocator, w.rawData(), w.byteSize());
      weightTypes_[i] = w.dtype();
    }
  }
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
                status == cudaErrorInvalidValue
                    ? std::string(e.what()) + " (the kernel does not take these types or shapes)"
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
