#include "cuda_data_step.h"

#include <kiln/error.h>

#include <kernels/cuda/elementwise/cast.h>
#include <kernels/cuda/layout/strided_copy.h>

namespace kiln::cuda {

namespace k = kernels::cuda;

DataStep::HostValues::HostValues(const DataStep& step, const StepArgs& args)
    : step_(step), values_(step.layer_.inputs.size()), onDevice_(step.layer_.inputs.size(), false) {
  for (size_t i = 0; i < values_.size(); ++i) {
    if (!step.layer_.hasInput(i) || i >= args.inputs.size()) continue;
    if (const HostTensor* w = step.weight(i)) {
      values_[i] = *w;
      continue;
    }
    const TensorView& view = args.inputs[i];
    if (view.space == MemorySpace::kHost && !view.object)
      values_[i] = HostTensor::view(view.dtype, view.dims, nullptr, view.data);
    else
      onDevice_[i] = true;
  }
}

const HostTensor* DataStep::HostValues::operator()(size_t i) const {
  if (i >= values_.size()) return nullptr;
  if (onDevice_[i])
    throw Error(ErrorCode::kInternal,
                step_.layer_.describe() + ": the values of input " + std::to_string(i) + " ('" + step_.layer_.inputs[i] +
                    "') are needed on the host to launch it, but they are in device memory; the plan should keep "
                    "them on the host: rebuild it");
  return values_[i] ? &*values_[i] : nullptr;
}

const HostTensor& DataStep::HostValues::at(size_t i) const {
  if (const HostTensor* value = (*this)(i)) return *value;
  throw Error(ErrorCode::kInvalidModel, step_.layer_.describe() + ": input " + std::to_string(i) + " is required");
}

k::ElementType DataStep::elementType(DataType type) const {
  TensorView view;
  view.dtype = type;
  return CudaStep::elementType(view);
}

const void* DataStep::inType(const void* data, DataType from, DataType to, int64_t count, void* scratch,
                             cudaStream_t stream) const {
  if (from == to) return data;
  if (count * 8 > int64_t(kCastScratchBytes) || !scratch)
    throw Error(ErrorCode::kInternal, layer_.describe() + ": no workspace to convert a parameter to " +
                                          std::string(toString(to)));
  check(k::launchCast(data, elementType(from), scratch, elementType(to), count, stream),
        "converting a parameter to the tensor's storage type");
  return scratch;
}

const void* DataStep::smallInput(const StepArgs& args, size_t i, int64_t count, DataType to, Stream& stream,
                                 void* scratch) const {
  const TensorView& view = args.inputs[i];
  const void* data = input(args, i);
  const DataType from = weightType(i) != DataType::kUndefined ? weightType(i) : view.dtype;
  char* copy = static_cast<char*>(scratch) + kCastScratchBytes;
  if (!weight(i) && view.space == MemorySpace::kHost) {
    stream.copy(copy, view.data, uint64_t(count) * byteSize(from));
    data = copy;
  }
  return inType(data, from, to, count, scratch, nativeStream(stream));
}

void DataStep::fill(void* dst, int64_t count, const void* value, DataType type, cudaStream_t stream) const {
  if (count == 0) return;
  check(k::copyStrided(value, dst, {count}, {0}, elementType(type), stream), "filling its output");
}

void DataStep::copyInput(const StepArgs& args, size_t output, Stream& stream) const {
  const TensorView& out = args.outputs[output];
  const void* in = input(args, 0);
  if (out.data != in) stream.copy(out.data, in, out.byteSize());
}

SupportVerdict movableTensors(const Layer&, Precision, const LayerSignature& tensors) {
  if (auto v = ranksWithinLimit(tensors); !v.supported) return v;
  for (const auto* list : {&tensors.inputs, &tensors.outputs})
    for (const Tensor* t : *list)
      if (t && !elementTypeOf(t->dtype))
        return {false, "the CUDA kernels do not move " + std::string(toString(t->dtype)) + " tensor '" + t->name + "'"};
  return {};
}

SupportVerdict constantInput(const Layer& layer, const LayerSignature& tensors, size_t i, const char* what) {
  if (!layer.hasInput(i) || i >= tensors.inputs.size() || !tensors.inputs[i] || tensors.inputs[i]->isConstant())
    return {};
  return {false, std::string(what) + " ('" + layer.inputs[i] + "') is computed at run time; the CUDA kernel takes it "
                                                               "only as a constant"};
}

SupportVerdict indexInput(const Layer& layer, const LayerSignature& tensors, size_t i, const char* what) {
  if (!layer.hasInput(i) || i >= tensors.inputs.size() || !tensors.inputs[i]) return {};
  const DataType type = tensors.inputs[i]->dtype;
  if (type == DataType::kInt32 || type == DataType::kInt64) return {};
  return {false, std::string(what) + " ('" + layer.inputs[i] + "') are " + std::string(toString(type)) +
                     "; the CUDA kernels read int32 or int64 indices"};
}

SupportVerdict floatData(const Layer& layer, const LayerSignature& tensors) {
  const Tensor* x = tensors.inputs.empty() ? nullptr : tensors.inputs[0];
  if (!x) return {};
  const DataType t = x->dtype;
  if (t == DataType::kFloat32 || t == DataType::kFloat16 || t == DataType::kBFloat16 || t == DataType::kFloat64)
    return {};
  return {false, layer.opType + " on " + std::string(toString(t)) + " has no CUDA kernel (float types only)"};
}

}  // namespace kiln::cuda
