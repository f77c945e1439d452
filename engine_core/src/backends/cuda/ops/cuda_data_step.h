#pragma once
// What the CUDA data-movement families (views, layout, generators, indexing, resize, pool, quant)
// share on top of CudaStep: the host values of the inputs that shape inference reads (Reshape's
// shape, Slice's starts, Resize's scales, ...), small constants handed to kernels in the storage
// type a tensor has at run time, fills, and the supports-checks for tensors moved by size.
#include "../../../ops/tensor_shape_common.h"
#include "../cuda_ops.h"
#include "../cuda_step.h"

#include <optional>
#include <vector>

namespace kiln::cuda {

class DataStep : public CudaStep {
 public:
  using CudaStep::CudaStep;

 protected:
  // The values of a launch's inputs as the ONNX helpers (tensor_shape::ValueOf) read them: weights
  // and host views. The builder keeps every input that shape inference reads on the host; asking
  // for one that is in device memory throws naming the layer instead of reading it.
  class HostValues {
   public:
    HostValues(const DataStep& step, const StepArgs& args);
    // nullptr where the layer has no input i.
    const HostTensor* operator()(size_t i) const;
    // Input i, which the layer must have.
    const HostTensor& at(size_t i) const;
    tensor_shape::ValueOf valueOf() const {
      return [this](size_t i) { return (*this)(i); };
    }

   private:
    const DataStep& step_;
    std::vector<std::optional<HostTensor>> values_;
    std::vector<bool> onDevice_;
  };

  using CudaStep::elementType;
  kernels::cuda::ElementType elementType(DataType type) const;
  // The type input i has on the device: its uploaded weight's, else the bound view's.
  DataType inputType(const StepArgs& args, size_t i) const {
    return weightType(i) != DataType::kUndefined ? weightType(i) : args.inputs[i].dtype;
  }

  // Scratch for inType(): one cast value of up to 8 elements.
  static constexpr uint64_t kCastScratchBytes = 64;

  // `count` (at most 8) elements of `from` at device address `data`, in `to`: data itself when the
  // types agree, else cast into `scratch` (kCastScratchBytes of workspace) on the stream.
  const void* inType(const void* data, DataType from, DataType to, int64_t count, void* scratch,
                     cudaStream_t stream) const;
  // Input i's `count` (at most 8) elements on the device in `to`, whether the input is a weight, a
  // host value (copied in on the stream, as the builder's Copy layers do) or device data.
  // `scratch` is 2 * kCastScratchBytes of workspace.
  const void* smallInput(const StepArgs& args, size_t i, int64_t count, DataType to, Stream& stream,
                         void* scratch) const;
  // dst[0, count) = the one element of `type` at device address `value`.
  void fill(void* dst, int64_t count, const void* value, DataType type, cudaStream_t stream) const;
  // out = input 0 unless the memory planner made them share a buffer (alias ops).
  void copyInput(const StepArgs& args, size_t output, Stream& stream) const;
};

// Regions that steps carve from their workspace start on 256-byte boundaries.
constexpr uint64_t kWorkspaceAlignment = 256;
inline uint64_t workspaceAligned(uint64_t bytes) {
  return (bytes + kWorkspaceAlignment - 1) / kWorkspaceAlignment * kWorkspaceAlignment;
}

// A small host value (an attribute's tensor, a literal one) uploaded once at instantiate, with the
// type it was uploaded in; DataStep::inType hands it to kernels in another storage type.
struct DeviceValue {
  DeviceCopy memory;
  DataType dtype = DataType::kUndefined;
  int64_t count = 0;

  DeviceValue() = default;
  DeviceValue(CudaDevice& device, const HostTensor& value)
      : memory(device.allocator, value.rawData(), value.byteSize()), dtype(value.dtype()), count(value.elementCount()) {}
  const void* get() const { return memory.get(); }
};

// Every present tensor is a tensor of at most 8 dims whose elements the kernels can move by size
// (any numeric type, bool, fp8; not strings, sequences or optionals).
SupportVerdict movableTensors(const Layer& layer, Precision precision, const LayerSignature& tensors);
// Input i, where the layer has it, is a weight (not computed at run time); `what` names it.
SupportVerdict constantInput(const Layer& layer, const LayerSignature& tensors, size_t i, const char* what);
// Input i, where the layer has it, is int32 or int64 (the index types the kernels read).
SupportVerdict indexInput(const Layer& layer, const LayerSignature& tensors, size_t i, const char* what);
// Input 0 (and so the output) is a float type with a CUDA kernel (float32, float16, bfloat16, float64).
SupportVerdict floatData(const Layer& layer, const LayerSignature& tensors);

}  // namespace kiln::cuda
