// The alias ops on the GPU: Identity, Reshape, Flatten, Squeeze, Unsqueeze and Dropout (inference)
// keep their input's elements in order. The memory planner usually gives the output the input's
// buffer, and then there is nothing to do; otherwise one device-to-device copy on the stream.
#include "cuda_data_step.h"

#include <kiln/error.h>

#include <kernels/cuda/layout/generators.h>

#include <cstring>

namespace kiln::cuda {
namespace {

namespace k = kernels::cuda;

class AliasStep : public DataStep {
 public:
  using DataStep::DataStep;
  void enqueue(const StepArgs& args, Stream& stream) const override { copyInput(args, 0, stream); }
};

// Dropout in inference: output 0 is the input, the optional mask is all true (ones before opset 10).
class DropoutStep : public DataStep {
 public:
  DropoutStep(const Layer& layer, const Tactic& tactic, const LayerSignature& signature, CudaDevice& device)
      : DataStep(layer, tactic, signature, device) {
    const HostTensor* mode = layer.opsetVersion >= 12 ? weight(2) : nullptr;
    training_ = mode && mode->elementCount() > 0 && mode->toInt64Vector()[0] != 0;
    if (layer.hasOutput(1)) {
      const DataType type = signature.outputs.at(1)->dtype;
      HostTensor one(type, {});
      const uint64_t bits = k::oneBits(*elementTypeOf(type));
      std::memcpy(one.rawData(), &bits, byteSize(type));  // the low bytes (little-endian)
      one_ = DeviceValue(device, one);
    }
  }

  uint64_t workspaceBytes(std::span<const TensorView>, std::span<const TensorView>) const override {
    return layer_.hasOutput(1) ? kCastScratchBytes : 0;
  }

  void enqueue(const StepArgs& args, Stream& stream) const override {
    if (training_) {  // the builder saw no constant ratio; it is a host value now
      const HostValues values(*this, args);
      const double ratio = values(1) ? values.at(1).toDoubleVector().at(0) : 0.5;
      if (ratio > 0)
        throw Error(ErrorCode::kUnsupported, layer_.describe() + ": training_mode is true with ratio " +
                                                 std::to_string(ratio) +
                                                 ", which drops values at random; Kiln runs inference only, so set "
                                                 "training_mode false or ratio 0");
    }
    copyInput(args, 0, stream);
    if (!layer_.hasOutput(1)) return;
    const TensorView& mask = args.outputs[1];
    const cudaStream_t s = streamOf(stream);
    fill(mask.data, mask.elementCount(), inType(one_.get(), one_.dtype, mask.dtype, 1, args.workspace, s), mask.dtype, s);
  }

 private:
  bool training_ = false;
  DeviceValue one_;
};

// Training mode only where a constant says so and the ratio may be non-zero; a training_mode
// computed at run time cannot be checked before launch.
SupportVerdict dropoutTensors(const Layer& layer, Precision precision, const LayerSignature& tensors) {
  if (auto v = movableTensors(layer, precision, tensors); !v.supported) return v;
  if (layer.opsetVersion < 12 || !layer.hasInput(2)) return {};
  if (auto v = constantInput(layer, tensors, 2, "training_mode"); !v.supported) return v;
  const HostTensor& mode = *tensors.inputs[2]->constant;
  if (mode.elementCount() == 0 || mode.toInt64Vector()[0] == 0) return {};
  const Tensor* ratio = layer.hasInput(1) ? tensors.inputs[1] : nullptr;
  if (ratio && !ratio->isConstant()) return {};  // checked at launch
  const double value = ratio ? ratio->constant->toDoubleVector().at(0) : 0.5;
  if (value > 0)
    return {false, "training_mode is true with ratio " + std::to_string(value) +
                       ", which drops values at random; Kiln runs inference only"};
  return {};
}

}  // namespace

void registerViewsCudaOps(CudaOpRegistry& registry) {
  for (const char* name : {"Identity", "Reshape", "Flatten", "Squeeze", "Unsqueeze"})
    registry.add(name, stepOp<AliasStep>(movableTensors));
  registry.add("Dropout", stepOp<DropoutStep>(dropoutTensors));
}

}  // namespace kiln::cuda
