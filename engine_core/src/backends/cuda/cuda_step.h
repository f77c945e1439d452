#pragma once
// The common part of the CUDA backend's steps: the tactic, weights uploaded once at instantiate(),
// the bound data of each input (the uploaded copy for weights), and errors that name the layer.
#include "cuda_device.h"

#include <kernels/cuda/common/element_type.h>

#include <optional>
#include <span>
#include <vector>

namespace kiln::cuda {

class CudaStep : public Step {
 public:
  CudaStep(const Layer& layer, Tactic tactic, const LayerSignature& signature, CudaDevice& device);
  // The same with float weights (float32, float16, bfloat16) uploaded in `floatWeights`: library
  // calls take weights in the activations' storage type, and the plan may store a weight wider
  // (shared with an fp32 layer) or narrower than this layer computes.
  // `ownCopies`: constant inputs the step re-lays out on the host and uploads itself (a filter in
  // KRSC, quantized weights in the product's order), never read through input(): not uploaded
  // here, so the device holds one copy of each weight.
  CudaStep(const Layer& layer, Tactic tactic, const LayerSignature& signature, CudaDevice& device,
           DataType floatWeights, const std::vector<size_t>& ownCopies = {});
  const Tactic& tactic() const override { return tactic_; }
  uint64_t workspaceBytes(std::span<const TensorView>, std::span<const TensorView>) const override { return 0; }

 protected:
  // Input i on the device: the uploaded weight when it is constant, else the bound view's memory.
  const void* input(const StepArgs& args, size_t i) const;
  // The type input i's uploaded weight has (after any conversion), or kUndefined for activations.
  DataType weightType(size_t i) const { return i < weightTypes_.size() ? weightTypes_[i] : DataType::kUndefined; }
  // The host value of constant input i (parameters such as Clip's bounds), or nullptr.
  const HostTensor* weight(size_t i) const;
  // Throws kiln::Error naming the layer unless status is cudaSuccess.
  void check(cudaError_t status, const char* what = "launching its kernel") const;
  kernels::cuda::ElementType elementType(const TensorView& view) const;
  static cudaStream_t streamOf(Stream& stream) { return nativeStream(stream); }

  const Layer& layer_;
  Tactic tactic_;
  CudaDevice& device_;

 private:
  std::vector<DeviceCopy> weights_;
  std::vector<DataType> weightTypes_;
  std::vector<const HostTensor*> hostWeights_;
};

// Whether a launch's inputs have the dims a cached per-shape plan was made for (library steps
// plan once per input shape and keep the plans).
inline bool sameDims(const LayerShapes& key, std::span<const TensorView> inputs) {
  if (key.size() != inputs.size()) return false;
  for (size_t i = 0; i < key.size(); ++i)
    if (key[i] != inputs[i].dims) return false;
  return true;
}

// The type the model declares for output 0 (float32 when it has none).
inline DataType outputDeclared(const LayerSignature& signature) {
  return signature.outputs.empty() || !signature.outputs[0] ? DataType::kFloat32 : signature.outputs[0]->dtype;
}

}  // namespace kiln::cuda
