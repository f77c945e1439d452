// Tensors made from a few numbers, on the GPU: Range, EyeLike, ConstantOfShape, OneHot and Trilu
// (kernels/cuda/layout/generators.h). Their scalars (Range's start and delta, Trilu's k) are host
// values or weights; their output dims come from the shape phase.
#include "cuda_data_step.h"

#include <kiln/error.h>

#include <kernels/cuda/layout/generators.h>

namespace kiln::cuda {
namespace {

namespace k = kernels::cuda;

int64_t product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t d = begin; d < end; ++d) n *= dims[d];
  return n;
}

// Floats are computed in double and rounded as the CPU does; integers wrap as their type does.
class RangeStep : public DataStep {
 public:
  using DataStep::DataStep;
  void enqueue(const StepArgs& args, Stream& stream) const override {
    const TensorView& out = args.outputs[0];
    const HostValues values(*this, args);
    const HostTensor &start = values.at(0), &delta = values.at(2);
    if (isFloatingPoint(out.dtype))
      check(k::rangeFloat(out.data, out.elementCount(), start.toDoubleVector().at(0), delta.toDoubleVector().at(0),
                          elementType(out), streamOf(stream)));
    else
      check(k::rangeInteger(out.data, out.elementCount(), start.toInt64Vector().at(0), delta.toInt64Vector().at(0),
                            elementType(out), streamOf(stream)));
  }
};

class EyeLikeStep : public DataStep {
 public:
  using DataStep::DataStep;
  void enqueue(const StepArgs& args, Stream& stream) const override {
    const TensorView& out = args.outputs[0];
    check(k::eyeLike(out.data, out.dims.at(0), out.dims.at(1), layer_.attrInt("k", 0), elementType(out),
                     streamOf(stream)));
  }
};

// The 'value' attribute (float32 zero without it) in every element.
class ConstantOfShapeStep : public DataStep {
 public:
  ConstantOfShapeStep(const Layer& layer, const Tactic& tactic, const LayerSignature& signature, CudaDevice& device)
      : DataStep(layer, tactic, signature, device) {
    if (layer.hasAttr("value")) value_ = DeviceValue(device, layer.attrTensor("value"));
  }

  uint64_t workspaceBytes(std::span<const TensorView>, std::span<const TensorView>) const override {
    return kCastScratchBytes;
  }

  void enqueue(const StepArgs& args, Stream& stream) const override {
    const TensorView& out = args.outputs[0];
    const cudaStream_t s = streamOf(stream);
    if (out.elementCount() == 0) return;
    if (!value_.get()) return check(cudaMemsetAsync(out.data, 0, out.byteSize(), s), "zeroing its output");
    fill(out.data, out.elementCount(), inType(value_.get(), value_.dtype, out.dtype, 1, args.workspace, s), out.dtype, s);
  }

 private:
  DeviceValue value_;
};

// values [off, on] arrive as a weight, a host value (copied in on the stream, as the builder's Copy
// layers do) or device data, and reach the kernel in the output's storage type.
class OneHotStep : public DataStep {
 public:
  using DataStep::DataStep;

  uint64_t workspaceBytes(std::span<const TensorView>, std::span<const TensorView>) const override {
    return 2 * kCastScratchBytes;
  }

  void enqueue(const StepArgs& args, Stream& stream) const override {
    const TensorView &indices = args.inputs[0], &out = args.outputs[0];
    const cudaStream_t s = streamOf(stream);
    const size_t rank = out.dims.size();
    const int64_t given = layer_.attrInt("axis", -1);
    const size_t axis = size_t(given < 0 ? given + int64_t(rank) : given);
    const void* offOn = smallInput(args, 2, 2, out.dtype, stream, args.workspace);
    check(k::oneHot(input(args, 0), elementType(indices), out.data, product(out.dims, 0, axis),
                    out.dims.at(axis), product(out.dims, axis + 1, rank), offOn, elementType(out), s));
  }
};

// Trilu over the last two axes; k (default 0) is a host value or a weight.
class TriluStep : public DataStep {
 public:
  using DataStep::DataStep;
  void enqueue(const StepArgs& args, Stream& stream) const override {
    const TensorView &in = args.inputs[0], &out = args.outputs[0];
    if (out.elementCount() == 0) return;
    const HostValues values(*this, args);
    const int64_t diagonal = values(1) ? values.at(1).toInt64Vector().at(0) : 0;
    const size_t rank = in.dims.size();
    const int64_t rows = in.dims.at(rank - 2), cols = in.dims.at(rank - 1);
    check(k::trilu(input(args, 0), out.data, in.elementCount() / (rows * cols), rows, cols, diagonal,
                   layer_.attrInt("upper", 1) != 0, elementType(in), streamOf(stream)));
  }
};

const std::initializer_list<DataType> kRangeTypes = {
    DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16, DataType::kFloat64, DataType::kInt8,
    DataType::kInt16,   DataType::kInt32,   DataType::kInt64,    DataType::kUInt8,   DataType::kUInt16,
    DataType::kUInt32,  DataType::kUInt64};

SupportVerdict rangeTensors(const Layer& layer, Precision precision, const LayerSignature& tensors) {
  return firstRefusal({movableTensors(layer, precision, tensors), allOfTypes(tensors, kRangeTypes)});
}

SupportVerdict oneHotTensors(const Layer& layer, Precision precision, const LayerSignature& tensors) {
  return firstRefusal({movableTensors(layer, precision, tensors), indexInput(layer, tensors, 0, "indices")});
}

}  // namespace

void registerGeneratorsCudaOps(CudaOpRegistry& registry) {
  registry.add("Range", stepOp<RangeStep>(rangeTensors));
  registry.add("EyeLike", stepOp<EyeLikeStep>(movableTensors));
  registry.add("ConstantOfShape", stepOp<ConstantOfShapeStep>(movableTensors));
  registry.add("OneHot", stepOp<OneHotStep>(oneHotTensors));
  registry.add("Trilu", stepOp<TriluStep>(movableTensors));
}

}  // namespace kiln::cuda
