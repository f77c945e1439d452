// Reductions on the GPU (kernels/cuda/reduce): the ten Reduce* ops, ArgMax/ArgMin, CumSum and
// TopK, on every numeric type. Axes, k and CumSum's axis resolve through the helpers the schemas
// and the CPU kernels use (resolveReduceAxes, splitAtAxis, normalizeAxis); where they are inputs,
// the shape phase reads them, so the plan keeps them on the host and they are read there.
#include "../../../ops/op_schema.h"
#include "../../../ops/reduction_softmax.h"
#include "cuda_data_step.h"

#include <kernels/cuda/reduce/reduce.h>

#include <algorithm>

namespace kiln::cuda {
namespace {

namespace k = kernels::cuda;
using kernels::ReduceKind;

const std::pair<const char*, ReduceKind> kReductions[] = {
    {"ReduceSum", ReduceKind::kSum},       {"ReduceMean", ReduceKind::kMean},
    {"ReduceMax", ReduceKind::kMax},       {"ReduceMin", ReduceKind::kMin},
    {"ReduceProd", ReduceKind::kProd},     {"ReduceL1", ReduceKind::kL1},
    {"ReduceL2", ReduceKind::kL2},         {"ReduceLogSum", ReduceKind::kLogSum},
    {"ReduceLogSumExp", ReduceKind::kLogSumExp}, {"ReduceSumSquare", ReduceKind::kSumSquare}};

ReduceKind reduceKindOf(const std::string& opType) {
  for (const auto& [name, kind] : kReductions)
    if (opType == name) return kind;
  return ReduceKind::kSum;
}

// The reduced flags that turn `dims` into `out` (keepdims or not): with keepdims 0 several sets
// can, and the workspace query must cover each without reading the axes input.
std::vector<std::vector<bool>> axisSetsGiving(const std::vector<int64_t>& dims, const std::vector<int64_t>& out,
                                              bool keepDims) {
  std::vector<std::vector<bool>> sets;
  const size_t rank = dims.size();
  for (uint32_t mask = 0; mask < (uint32_t(1) << rank); ++mask) {
    std::vector<bool> reduced(rank);
    std::vector<int64_t> shape;
    for (size_t d = 0; d < rank; ++d) {
      reduced[d] = (mask >> d) & 1;
      if (!reduced[d]) shape.push_back(dims[d]);
      else if (keepDims) shape.push_back(1);
    }
    if (shape == out) sets.push_back(std::move(reduced));
  }
  return sets;
}

class ReduceStep : public DataStep {
 public:
  ReduceStep(const Layer& layer, const Tactic& tactic, const LayerSignature& signature, CudaDevice& device)
      : DataStep(layer, tactic, signature, device), kind_(reduceKindOf(layer.opType)) {}

  uint64_t workspaceBytes(std::span<const TensorView> inputs, std::span<const TensorView> outputs) const override {
    const TensorView &x = inputs[0], &y = outputs[0];
    if (x.dims == y.dims) return 0;  // nothing reduced that is longer than 1 (or a noop)
    const k::ElementType type = elementType(x);
    uint64_t most = 0;
    for (const std::vector<bool>& reduced : axisSetsGiving(x.dims, y.dims, layer_.attrInt("keepdims", 1) != 0))
      most = std::max<uint64_t>(most, k::reduceWorkspaceBytes(kind_, x.dims, reduced, type));
    return most;
  }

  void enqueue(const StepArgs& args, Stream& stream) const override {
    const TensorView &x = args.inputs[0], &y = args.outputs[0];
    const int64_t rank = int64_t(x.dims.size());
    const ReduceAxes axes = layer_.hasInput(1) ? resolveReduceAxes(layer_, rank, HostValues(*this, args)(1))
                                               : resolveReduceAxes(layer_, rank, nullptr);
    if (axes.noop) return copyInput(args, 0, stream);
    check(k::launchReduce(kind_, input(args, 0), y.data, x.dims, axes.reduced, elementType(x), args.workspace,
                          args.workspaceBytes, streamOf(stream)));
  }

 private:
  ReduceKind kind_;
};

// [outer, n, inner] around layer attribute `axis` (default `fallback`) of `dims`.
AxisSplit splitAtAxisAttr(const Layer& layer, const std::vector<int64_t>& dims, int64_t fallback) {
  return splitAtAxis(dims, normalizeAxis(layer, layer.attrInt("axis", fallback), int64_t(dims.size())));
}

class ArgExtremeStep : public DataStep {
 public:
  using DataStep::DataStep;
  void enqueue(const StepArgs& args, Stream& stream) const override {
    const TensorView &x = args.inputs[0], &y = args.outputs[0];
    const AxisSplit s = splitAtAxisAttr(layer_, x.dims, 0);
    check(k::launchArgExtreme(input(args, 0), static_cast<int64_t*>(y.data), s.outer, s.n, s.inner,
                              layer_.opType == "ArgMax", layer_.attrInt("select_last_index", 0) != 0, elementType(x),
                              streamOf(stream)));
  }
};

class CumSumStep : public DataStep {
 public:
  using DataStep::DataStep;
  void enqueue(const StepArgs& args, Stream& stream) const override {
    const TensorView &x = args.inputs[0], &y = args.outputs[0];
    const HostValues values(*this, args);
    const int64_t axis = normalizeAxis(layer_, values.at(1).toInt64Vector().at(0), int64_t(x.dims.size()));
    const AxisSplit s = splitAtAxis(x.dims, axis);
    check(k::launchCumSum(input(args, 0), y.data, s.outer, s.n, s.inner, layer_.attrInt("exclusive", 0) != 0,
                          layer_.attrInt("reverse", 0) != 0, elementType(x), streamOf(stream)));
  }
};

// k is the output's length along the axis (the shape phase took it from the attribute or input).
// 'sorted' = 0 allows any order; sorted is one.
class TopKStep : public DataStep {
 public:
  using DataStep::DataStep;

  uint64_t workspaceBytes(std::span<const TensorView> inputs, std::span<const TensorView> outputs) const override {
    const int64_t axis = normalizeAxis(layer_, layer_.attrInt("axis", -1), int64_t(inputs[0].dims.size()));
    const AxisSplit s = splitAtAxis(inputs[0].dims, axis);
    return k::topKWorkspaceBytes(s.outer, s.n, s.inner, outputs[0].dims.at(size_t(axis)));
  }

  void enqueue(const StepArgs& args, Stream& stream) const override {
    const TensorView &x = args.inputs[0], &values = args.outputs[0];
    const int64_t axis = normalizeAxis(layer_, layer_.attrInt("axis", -1), int64_t(x.dims.size()));
    const AxisSplit s = splitAtAxis(x.dims, axis);
    check(k::launchTopK(input(args, 0), values.data, static_cast<int64_t*>(args.outputs[1].data), s.outer, s.n,
                        s.inner, values.dims.at(size_t(axis)), layer_.attrInt("largest", 1) != 0, elementType(x),
                        args.workspace, args.workspaceBytes, streamOf(stream)));
  }
};

// Input 0 is a numeric type the kernels take (not bool or fp8), of at most 8 dims.
SupportVerdict numericData(const Layer& layer, Precision, const LayerSignature& tensors) {
  if (auto v = ranksWithinLimit(tensors); !v.supported) return v;
  const Tensor* x = tensors.inputs.empty() ? nullptr : tensors.inputs[0];
  if (!x) return {};
  const DataType t = x->dtype;
  if ((isFloatingPoint(t) || isInteger(t)) && t != DataType::kFloat8E4M3 && t != DataType::kFloat8E5M2 &&
      elementTypeOf(t))
    return {};
  return {false, layer.opType + " on " + std::string(toString(t)) + " has no CUDA kernel"};
}

// TopK writes both outputs; a layer without its Indices output has nowhere to put them.
SupportVerdict topKTensors(const Layer& layer, Precision precision, const LayerSignature& tensors) {
  if (!layer.hasOutput(0) || !layer.hasOutput(1))
    return {false, "the CUDA TopK kernel writes both outputs; this layer leaves one out"};
  return numericData(layer, precision, tensors);
}

}  // namespace

void registerReduceCudaOps(CudaOpRegistry& registry) {
  for (const auto& entry : kReductions) registry.add(entry.first, stepOp<ReduceStep>(numericData));
  for (const char* name : {"ArgMax", "ArgMin"}) registry.add(name, stepOp<ArgExtremeStep>(numericData));
  registry.add("CumSum", stepOp<CumSumStep>(numericData));
  registry.add("TopK", stepOp<TopKStep>(topKTensors));
}

}  // namespace kiln::cuda
