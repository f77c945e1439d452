// Layout ops on the GPU, each one launch of kernels/cuda/layout: Transpose, Slice, Tile, Expand,
// DepthToSpace and SpaceToDepth as strided copies, Concat and Split as block copies, Pad and
// ReverseSequence. Their parameters (perm, starts / ends / axes / steps, repeats, pads, split
// sizes) are resolved per launch from attributes and host values with the ONNX helpers the
// schemas and the CPU use.
#include "../../common/tensor_shape_ops.h"
#include "cuda_data_step.h"

#include <kiln/error.h>

#include <kernels/cuda/layout/concat_split.h>
#include <kernels/cuda/layout/pad.h>
#include <kernels/cuda/layout/reverse_sequence.h>
#include <kernels/cuda/layout/strided_copy.h>

namespace kiln::cuda {
namespace {

namespace k = kernels::cuda;
namespace ts = tensor_shape;

int64_t product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t d = begin; d < end; ++d) n *= dims[d];
  return n;
}

// The 'axis' attribute against `rank` (the schema has range-checked it).
size_t axisAttr(const Layer& layer, size_t rank, int64_t fallback = 0) {
  const int64_t axis = layer.attrInt("axis", fallback);
  return size_t(axis < 0 ? axis + int64_t(rank) : axis);
}

class TransposeStep : public DataStep {
 public:
  using DataStep::DataStep;
  void enqueue(const StepArgs& args, Stream& stream) const override {
    const TensorView &in = args.inputs[0], &out = args.outputs[0];
    const auto perm = ts::transposePermutation(layer_, int64_t(in.dims.size()));
    check(k::transpose(input(args, 0), out.data, in.dims, perm, elementType(in), streamOf(stream)));
  }
};

class ConcatStep : public DataStep {
 public:
  using DataStep::DataStep;
  void enqueue(const StepArgs& args, Stream& stream) const override {
    const TensorView& out = args.outputs[0];
    const size_t axis = axisAttr(layer_, out.dims.size());
    std::vector<const void*> parts;
    std::vector<int64_t> sizes;
    for (size_t i = 0; i < layer_.inputs.size(); ++i) {
      if (!layer_.hasInput(i)) continue;
      parts.push_back(input(args, i));
      sizes.push_back(args.inputs[i].dims.at(axis));
    }
    check(k::concat(parts, sizes, out.data, product(out.dims, 0, axis), product(out.dims, axis + 1, out.dims.size()),
                    elementType(out), streamOf(stream)));
  }
};

// Split sizes from the 'split' attribute (before opset 13), input 1, or equal parts (num_outputs).
class SplitStep : public DataStep {
 public:
  using DataStep::DataStep;
  void enqueue(const StepArgs& args, Stream& stream) const override {
    const TensorView& in = args.inputs[0];
    const size_t axis = axisAttr(layer_, in.dims.size());
    const HostValues values(*this, args);
    const auto sizes = ts::splitSizesFor(layer_, in.dims.at(axis), values.valueOf());
    if (!sizes) throw Error(ErrorCode::kInternal, layer_.describe() + ": the split sizes are not known at launch");
    std::vector<void*> parts;
    for (size_t i = 0; i < layer_.outputs.size(); ++i) parts.push_back(layer_.hasOutput(i) ? args.outputs[i].data : nullptr);
    check(k::split(input(args, 0), parts, *sizes, product(in.dims, 0, axis), product(in.dims, axis + 1, in.dims.size()),
                   elementType(in), streamOf(stream)));
  }
};

// starts, ends, axes and steps clamped as ONNX says (resolveSlice), then one strided copy.
class SliceStep : public DataStep {
 public:
  using DataStep::DataStep;
  void enqueue(const StepArgs& args, Stream& stream) const override {
    const TensorView &in = args.inputs[0], &out = args.outputs[0];
    const HostValues values(*this, args);
    std::vector<int64_t> starts, steps;
    for (const ts::SliceAxis& a : ts::resolveSlice(layer_, in.dims, ts::sliceInputs(layer_, values.valueOf()))) {
      starts.push_back(a.start);
      steps.push_back(a.step);
    }
    check(k::slice(input(args, 0), out.data, in.dims, starts, steps, out.dims, elementType(in), streamOf(stream)));
  }
};

class TileStep : public DataStep {
 public:
  using DataStep::DataStep;
  void enqueue(const StepArgs& args, Stream& stream) const override {
    const TensorView &in = args.inputs[0], &out = args.outputs[0];
    const std::vector<int64_t> repeats = HostValues(*this, args).at(1).toInt64Vector();
    check(k::tile(input(args, 0), out.data, in.dims, repeats, elementType(in), streamOf(stream)));
  }
};

// The output dims are the broadcast of the input's and the shape input's.
class ExpandStep : public DataStep {
 public:
  using DataStep::DataStep;
  void enqueue(const StepArgs& args, Stream& stream) const override {
    const TensorView &in = args.inputs[0], &out = args.outputs[0];
    check(k::expand(input(args, 0), out.data, in.dims, out.dims, elementType(in), streamOf(stream)));
  }
};

k::PadMode cudaPadMode(kernels::PadMode mode) {
  switch (mode) {
    case kernels::PadMode::kReflect: return k::PadMode::kReflect;
    case kernels::PadMode::kEdge: return k::PadMode::kEdge;
    case kernels::PadMode::kWrap: return k::PadMode::kWrap;
    case kernels::PadMode::kConstant: break;
  }
  return k::PadMode::kConstant;
}

// Pads from the attribute (before opset 11) or input 1 (with input 3's axes from opset 18); the
// constant from input 2 (since opset 11) or the 'value' attribute, in the data's storage type.
class PadStep : public DataStep {
 public:
  PadStep(const Layer& layer, const Tactic& tactic, const LayerSignature& signature, CudaDevice& device)
      : DataStep(layer, tactic, signature, device), mode_(cudaPadMode(padModeOf(layer))) {
    if (layer.opsetVersion < 11)
      value_ = DeviceValue(device, HostTensor::scalar<float>(layer.attrFloat("value", 0.0f)));
  }

  uint64_t workspaceBytes(std::span<const TensorView>, std::span<const TensorView>) const override {
    return kCastScratchBytes;
  }

  void enqueue(const StepArgs& args, Stream& stream) const override {
    const TensorView &in = args.inputs[0], &out = args.outputs[0];
    const cudaStream_t s = streamOf(stream);
    const HostValues values(*this, args);
    const auto pads = ts::padAmounts(layer_, int64_t(in.dims.size()), values.valueOf());
    if (!pads) throw Error(ErrorCode::kInternal, layer_.describe() + ": the pads are not known at launch");
    const std::vector<int64_t> padsBegin(pads->begin(), pads->begin() + ptrdiff_t(in.dims.size()));
    const void* constant = nullptr;  // zero
    if (layer_.opsetVersion < 11)
      constant = inType(value_.get(), value_.dtype, in.dtype, 1, args.workspace, s);
    else if (layer_.hasInput(2) && args.inputs[2].elementCount() > 0)
      constant = inType(input(args, 2), args.inputs[2].dtype, in.dtype, 1, args.workspace, s);
    check(k::pad(input(args, 0), in.dims, out.data, padsBegin, out.dims, mode_, constant, elementType(in), s));
  }

 private:
  k::PadMode mode_;
  DeviceValue value_;
};

class DepthToSpaceStep : public DataStep {
 public:
  using DataStep::DataStep;
  void enqueue(const StepArgs& args, Stream& stream) const override {
    const TensorView &in = args.inputs[0], &out = args.outputs[0];
    const auto mode = layer_.attrString("mode", "DCR") == "CRD" ? k::DepthToSpaceMode::kCRD : k::DepthToSpaceMode::kDCR;
    check(k::depthToSpace(input(args, 0), out.data, in.dims, layer_.attrInt("blocksize"), mode, elementType(in),
                          streamOf(stream)));
  }
};

class SpaceToDepthStep : public DataStep {
 public:
  using DataStep::DataStep;
  void enqueue(const StepArgs& args, Stream& stream) const override {
    const TensorView &in = args.inputs[0], &out = args.outputs[0];
    check(k::spaceToDepth(input(args, 0), out.data, in.dims, layer_.attrInt("blocksize"), elementType(in),
                          streamOf(stream)));
  }
};

// The time axis is 0 or 1 and the batch axis the other (the schema checks); sequence_lens (int64)
// is read on the device.
class ReverseSequenceStep : public DataStep {
 public:
  using DataStep::DataStep;
  void enqueue(const StepArgs& args, Stream& stream) const override {
    const TensorView &in = args.inputs[0], &out = args.outputs[0];
    const bool batchMajor = layer_.attrInt("batch_axis", 1) == 0;
    const int64_t time = in.dims.at(batchMajor ? 1 : 0), batch = in.dims.at(batchMajor ? 0 : 1);
    if (args.inputs[1].elementCount() != batch)
      throw Error(ErrorCode::kInvalidArgument, layer_.describe() + ": sequence_lens has " +
                                                   std::to_string(args.inputs[1].elementCount()) +
                                                   " entries; it needs one per batch (" + std::to_string(batch) + ")");
    check(k::reverseSequence(input(args, 0), out.data, time, batch, product(in.dims, 2, in.dims.size()),
                             static_cast<const int64_t*>(input(args, 1)), batchMajor, elementType(in), streamOf(stream)));
  }
};

SupportVerdict reverseSequenceTensors(const Layer& layer, Precision precision, const LayerSignature& tensors) {
  if (auto v = movableTensors(layer, precision, tensors); !v.supported) return v;
  if (tensors.inputs.size() > 1 && tensors.inputs[1] && tensors.inputs[1]->dtype != DataType::kInt64)
    return {false, "sequence_lens must be int64"};
  return {};
}

}  // namespace

void registerLayoutCudaOps(CudaOpRegistry& registry) {
  registry.add("Transpose", stepOp<TransposeStep>(movableTensors));
  registry.add("Concat", stepOp<ConcatStep>(movableTensors));
  registry.add("Split", stepOp<SplitStep>(movableTensors));
  registry.add("Slice", stepOp<SliceStep>(movableTensors));
  registry.add("Tile", stepOp<TileStep>(movableTensors));
  registry.add("Expand", stepOp<ExpandStep>(movableTensors));
  registry.add("Pad", stepOp<PadStep>(movableTensors));
  registry.add("DepthToSpace", stepOp<DepthToSpaceStep>(movableTensors));
  registry.add("SpaceToDepth", stepOp<SpaceToDepthStep>(movableTensors));
  registry.add("ReverseSequence", stepOp<ReverseSequenceStep>(reverseSequenceTensors));
}

}  // namespace kiln::cuda
