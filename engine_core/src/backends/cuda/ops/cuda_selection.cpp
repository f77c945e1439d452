// The ops whose output size follows from the values they read, on the GPU (kernels/cuda/selection):
// NonZero, Compress, Unique and NonMaxSuppression. The count is computed on the device and copied
// to the host, where the step synchronises its stream (the documented cost of a data-dependent
// layer: the engine is not graph-capturable), asks the output allocator for the outputs, then
// launches the write. Where shape inference already knew the size (Compress with a condition the
// shape phase read) the step neither synchronises nor asks.
#include "../../common/tensor_shape_ops.h"
#include "cuda_data_step.h"

#include <kiln/error.h>

#include <kernels/cuda/elementwise/cast.h>
#include <kernels/cuda/indexing/gather.h>
#include <kernels/cuda/selection/selection.h>

namespace kiln::cuda {
namespace {

namespace k = kernels::cuda;

// The workspace of a selection step: the device count, scratch for casting scalars, the kernels'
// workspace, then copies of any inputs bound in host memory (a condition the shape phase read).
class SelectionStep : public DataStep {
 public:
  using DataStep::DataStep;

  uint64_t workspaceBytes(std::span<const TensorView> inputs, std::span<const TensorView> outputs) const override {
    uint64_t bytes = 2 * kWorkspaceAlignment + workspaceAligned(kernelBytes(inputs, outputs));
    for (size_t i = 0; i < inputs.size(); ++i)
      if (stagedInput(inputs, i)) bytes += workspaceAligned(inputs[i].byteSize());
    return bytes;
  }

 protected:
  virtual uint64_t kernelBytes(std::span<const TensorView> inputs, std::span<const TensorView> outputs) const = 0;

  struct Scratch {
    int64_t* count;
    void* castScratch;
    void* kernel;
    std::vector<const void*> inputs;  // each input in device memory (nullptr where absent)
  };

  Scratch scratch(const StepArgs& args, cudaStream_t stream) const {
    char* base = static_cast<char*>(args.workspace);
    Scratch s{reinterpret_cast<int64_t*>(base), base + kWorkspaceAlignment, base + 2 * kWorkspaceAlignment, {}};
    char* staging = base + 2 * kWorkspaceAlignment + workspaceAligned(kernelBytes(args.inputs, args.outputs));
    for (size_t i = 0; i < args.inputs.size(); ++i) {
      if (!layer_.hasInput(i)) {
        s.inputs.push_back(nullptr);
      } else if (stagedInput(args.inputs, i) && !weight(i)) {
        const TensorView& view = args.inputs[i];
        check(cudaMemcpyAsync(staging, view.data, view.byteSize(), cudaMemcpyHostToDevice, stream),
              "copying a host input to the device");
        s.inputs.push_back(staging);
        staging += workspaceAligned(view.byteSize());
      } else {
        s.inputs.push_back(input(args, i));
      }
    }
    return s;
  }

  // The count the kernels left at `count`, on the host: waits for the stream.
  int64_t countOnHost(const int64_t* count, cudaStream_t stream) const {
    int64_t n = 0;
    check(cudaMemcpyAsync(&n, count, sizeof n, cudaMemcpyDeviceToHost, stream), "copying its output size to the host");
    check(cudaStreamSynchronize(stream), "waiting for its output size");
    return n;
  }

  // Output i's memory for these dims: asked from the allocator where its size depends on data.
  void* sizeOutput(const StepArgs& args, size_t i, const std::vector<int64_t>& dims) const {
    TensorView& out = args.outputs[i];
    if (out.shapeKnown) {
      if (out.dims != dims)
        throw Error(ErrorCode::kInternal, layer_.describe() + ": output " + std::to_string(i) + " came out " +
                                              dimsToString(dims) + " but shape inference said " + dimsToString(out.dims));
      return out.data;
    }
    if (!args.outputAllocator)
      throw Error(ErrorCode::kInternal, layer_.describe() + ": output " + std::to_string(i) +
                                            " depends on data but the step got no output allocator");
    out.data = args.outputAllocator->allocate(i, out.dtype, dims);
    out.dims = dims;
    out.shapeKnown = true;
    return out.data;
  }

 private:
  bool stagedInput(std::span<const TensorView> inputs, size_t i) const {
    return layer_.hasInput(i) && i < inputs.size() && inputs[i].space == MemorySpace::kHost && !weight(i) &&
           !inputs[i].object;
  }
};

// NonZero: [rank, count] int64 coordinates (a scalar counts as rank 1).
class NonZeroStep : public SelectionStep {
 public:
  using SelectionStep::SelectionStep;
  void enqueue(const StepArgs& args, Stream& stream) const override {
    const cudaStream_t s = streamOf(stream);
    const Scratch w = scratch(args, s);
    const TensorView& x = args.inputs[0];
    const std::vector<int64_t> dims = x.dims.empty() ? std::vector<int64_t>{1} : x.dims;
    const k::ElementType type = elementType(inputType(args, 0));
    check(k::nonZeroCount(w.inputs[0], type, x.elementCount(), w.kernel, w.count, s), "counting the non-zero elements");
    const int64_t count = countOnHost(w.count, s);
    auto* out = static_cast<int64_t*>(sizeOutput(args, 0, {int64_t(dims.size()), count}));
    check(k::nonZeroWrite(w.inputs[0], type, dims, count, w.kernel, out, s), "writing the coordinates");
  }

 private:
  uint64_t kernelBytes(std::span<const TensorView> inputs, std::span<const TensorView>) const override {
    return k::nonZeroWorkspaceBytes(inputs[0].elementCount());
  }
};

// Compress: the slices along 'axis' (or elements) whose condition is true, gathered.
class CompressStep : public SelectionStep {
 public:
  using SelectionStep::SelectionStep;
  void enqueue(const StepArgs& args, Stream& stream) const override {
    const cudaStream_t s = streamOf(stream);
    const Scratch w = scratch(args, s);
    const TensorView& data = args.inputs[0];
    const SelectionAxis along = selectionAxisOf(layer_, data.dims);
    const int64_t n = selectable(args.inputs);
    auto* selected = reinterpret_cast<int64_t*>(static_cast<char*>(w.kernel) + workspaceAligned(k::selectTrueWorkspaceBytes(n)));
    check(k::selectTrue(static_cast<const bool*>(w.inputs[1]), n, w.kernel, selected, w.count, s),
          "selecting by the condition");
    std::vector<int64_t> dims = along.dims;
    const TensorView& out = args.outputs[0];
    dims[along.axis] = out.shapeKnown ? out.dims.at(along.axis) : countOnHost(w.count, s);
    void* y = sizeOutput(args, 0, dims);
    if (elementCount(dims) == 0) return;
    check(k::gather(w.inputs[0], along.dims, selected, dims[along.axis], k::ElementType::kInt64, int(along.axis), y,
                    elementType(inputType(args, 0)), nullptr, s),
          "gathering the selected slices");
  }

 private:
  // The condition's entries that fall inside the axis.
  int64_t selectable(std::span<const TensorView> inputs) const {
    const SelectionAxis along = selectionAxisOf(layer_, inputs[0].dims);
    return std::min(along.dims[along.axis], inputs[1].elementCount());
  }
  uint64_t kernelBytes(std::span<const TensorView> inputs, std::span<const TensorView>) const override {
    const int64_t n = selectable(inputs);
    return workspaceAligned(k::selectTrueWorkspaceBytes(n)) + uint64_t(n) * sizeof(int64_t);
  }
};

// Unique: Y (the distinct slices), indices (first occurrences), inverse_indices and counts.
class UniqueStep : public SelectionStep {
 public:
  using SelectionStep::SelectionStep;
  void enqueue(const StepArgs& args, Stream& stream) const override {
    const cudaStream_t s = streamOf(stream);
    const Scratch w = scratch(args, s);
    const SelectionAxis along = selectionAxisOf(layer_, args.inputs[0].dims);
    const k::UniqueShape shape = shapeOf(along);
    const k::ElementType type = elementType(inputType(args, 0));
    check(k::uniqueGroup(w.inputs[0], type, shape, layer_.attrInt("sorted", 1) != 0, w.kernel, w.count, s),
          "grouping equal slices");
    const int64_t groups = countOnHost(w.count, s);
    std::vector<int64_t> yDims = along.dims;
    yDims[along.axis] = groups;
    void* y = sizeOutput(args, 0, yDims);
    auto optional = [&](size_t i, int64_t length) {
      return layer_.hasOutput(i) ? static_cast<int64_t*>(sizeOutput(args, i, {length})) : nullptr;
    };
    int64_t* first = optional(1, groups);
    int64_t* inverse = optional(2, shape.slices);
    int64_t* counts = optional(3, groups);
    check(k::uniqueWrite(w.inputs[0], type, shape, groups, w.kernel, first, inverse, counts, y, s),
          "writing the distinct slices");
  }

 private:
  static k::UniqueShape shapeOf(const SelectionAxis& along) {
    return {along.outer, along.dims[along.axis], along.inner};
  }
  uint64_t kernelBytes(std::span<const TensorView> inputs, std::span<const TensorView>) const override {
    return k::uniqueWorkspaceBytes(shapeOf(selectionAxisOf(layer_, inputs[0].dims)));
  }
};

// NonMaxSuppression: [selected, 3] int64 (batch, class, box).
class NmsStep : public SelectionStep {
 public:
  using SelectionStep::SelectionStep;
  void enqueue(const StepArgs& args, Stream& stream) const override {
    const cudaStream_t s = streamOf(stream);
    const Scratch w = scratch(args, s);
    const k::NmsShape shape = shapeOf(args.inputs);
    // The optional scalars: an empty max_output_boxes_per_class selects nothing, as on the CPU.
    const int64_t* maxPerClass = nullptr;
    if (layer_.hasInput(2) && args.inputs[2].elementCount() > 0)
      maxPerClass = static_cast<const int64_t*>(inType(w.inputs[2], inputType(args, 2), DataType::kInt64, 1, w.castScratch, s));
    auto floatScalar = [&](size_t i, int slot) -> const float* {
      if (!layer_.hasInput(i)) return nullptr;
      return static_cast<const float*>(inType(w.inputs[i], inputType(args, i), DataType::kFloat32, 1,
                                              static_cast<char*>(w.castScratch) + 8 * slot, s));
    };
    // Casts share the scratch by slot: 0 for the count (int64), 1 and 2 for the thresholds.
    const float* iou = floatScalar(3, 1);
    const float* score = floatScalar(4, 2);
    // Boxes and scores in float32 (the kernel's type; a half-precision engine stores them narrower).
    char* wide = static_cast<char*>(w.kernel) + workspaceAligned(k::nmsWorkspaceBytes(shape));
    auto asFloat = [&](size_t i) -> const float* {
      if (inputType(args, i) == DataType::kFloat32) return static_cast<const float*>(w.inputs[i]);
      void* dst = wide;
      wide += workspaceAligned(uint64_t(args.inputs[i].elementCount()) * sizeof(float));
      check(k::launchCast(w.inputs[i], elementType(inputType(args, i)), dst, k::ElementType::kFloat32,
                          args.inputs[i].elementCount(), s),
            "widening its boxes and scores to float32");
      return static_cast<const float*>(dst);
    };
    const float* boxes = asFloat(0);
    const float* scores = asFloat(1);
    check(k::nmsSelect(boxes, scores, shape, maxPerClass, iou, score, w.kernel, w.count, s), "selecting boxes");
    const int64_t selected = countOnHost(w.count, s);
    auto* out = static_cast<int64_t*>(sizeOutput(args, 0, {selected, 3}));
    check(k::nmsWrite(shape, w.kernel, out, s), "writing the selected boxes");
  }

 private:
  k::NmsShape shapeOf(std::span<const TensorView> inputs) const {
    const auto& boxes = inputs[0].dims;
    const auto& scores = inputs[1].dims;
    if (boxes.size() != 3 || boxes[2] != 4 || scores.size() != 3 || scores[0] != boxes[0] || scores[2] != boxes[1])
      throw Error(ErrorCode::kInvalidArgument, layer_.describe() + ": boxes must be [batch, boxes, 4] and scores " +
                                                   "[batch, classes, boxes], got " + dimsToString(boxes) + " and " +
                                                   dimsToString(scores));
    return {boxes[0], scores[1], boxes[1], layer_.attrInt("center_point_box", 0) != 0};
  }
  uint64_t kernelBytes(std::span<const TensorView> inputs, std::span<const TensorView>) const override {
    return workspaceAligned(k::nmsWorkspaceBytes(shapeOf(inputs))) + workspaceAligned(uint64_t(inputs[0].elementCount()) * 4) +
           workspaceAligned(uint64_t(inputs[1].elementCount()) * 4);
  }
};

// Elements the kernels compare: numeric types and bool (not fp8).
SupportVerdict comparableTensors(const Layer& layer, Precision, const LayerSignature& tensors) {
  if (auto v = ranksWithinLimit(tensors); !v.supported) return v;
  const Tensor* x = tensors.inputs.empty() ? nullptr : tensors.inputs[0];
  if (x && (x->dtype == DataType::kFloat8E4M3 || x->dtype == DataType::kFloat8E5M2 || !elementTypeOf(x->dtype)))
    return {false, layer.opType + " on " + std::string(toString(x->dtype)) + " has no CUDA kernel"};
  return {};
}

SupportVerdict compressTensors(const Layer& layer, Precision precision, const LayerSignature& tensors) {
  return movableTensors(layer, precision, tensors);
}

// Boxes and scores of any float type but float64 (the kernel reads float32; narrower ones are widened).
SupportVerdict nmsTensors(const Layer& layer, Precision, const LayerSignature& tensors) {
  for (size_t i = 0; i < 2 && i < tensors.inputs.size(); ++i) {
    const DataType t = tensors.inputs[i] ? tensors.inputs[i]->dtype : DataType::kFloat32;
    if (t != DataType::kFloat32 && t != DataType::kFloat16 && t != DataType::kBFloat16)
      return {false, layer.opType + " on " + std::string(toString(t)) + " boxes or scores has no CUDA kernel"};
  }
  return {};
}

template <class StepType>
CudaOp dataDependentOp(std::function<SupportVerdict(const Layer&, Precision, const LayerSignature&)> supports) {
  CudaOp op = stepOp<StepType>(std::move(supports));
  op.dataDependent = true;
  return op;
}

}  // namespace

void registerSelectionCudaOps(CudaOpRegistry& registry) {
  registry.add("NonZero", dataDependentOp<NonZeroStep>(comparableTensors));
  registry.add("Compress", dataDependentOp<CompressStep>(compressTensors));
  registry.add("Unique", dataDependentOp<UniqueStep>(comparableTensors));
  registry.add("NonMaxSuppression", dataDependentOp<NmsStep>(nmsTensors));
}

}  // namespace kiln::cuda
