// Normalisations on the GPU (kernels/cuda/norm): BatchNormalization (inference), Layer-, Instance-
// and GroupNormalization, LpNormalization, MeanVarianceNormalization and LRN, with the CPU's
// attribute defaults and views of X ([N, C, spatial], [outer, inner] at LayerNormalization's axis).
// The kernels take their per-channel parameters as float32 arrays of the normalised shape: weights
// are uploaded as float32 once; a parameter that is an activation, of another float type or of a
// broadcasting shape is converted (and broadcast, numpy rules, right-aligned, as the CPU's
// broadcastParameter) into the step's workspace on the stream. Statistics accumulate in float32
// (float64 data in double).
#include "cuda_data_step.h"

#include <kiln/error.h>

#include <kernels/cuda/elementwise/cast.h>
#include <kernels/cuda/layout/strided_copy.h>
#include <kernels/cuda/norm/norm.h>

#include <numeric>

namespace kiln::cuda {
namespace {

namespace k = kernels::cuda;

int64_t product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  return std::accumulate(dims.begin() + int64_t(begin), dims.begin() + int64_t(end), int64_t(1), std::multiplies<>());
}

uint64_t aligned(uint64_t bytes) { return (bytes + 255) / 256 * 256; }

// X as [N, C, spatial], as the CPU's channelView.
struct ChannelView {
  int64_t batch, channels, spatial;
};
ChannelView channelView(const std::vector<int64_t>& x) {
  return {x.at(0), x.size() > 1 ? x[1] : 1, x.size() > 2 ? product(x, 2, x.size()) : 1};
}

// Bump allocation of the step's workspace, the same walk in workspaceBytes() and enqueue().
struct Scratch {
  char* base = nullptr;  // null while only counting
  uint64_t used = 0;
  void* take(uint64_t bytes) {
    void* p = base ? base + used : nullptr;
    used += aligned(bytes);
    return p;
  }
};

class NormStep : public DataStep {
 public:
  NormStep(const Layer& layer, const Tactic& tactic, const LayerSignature& signature, CudaDevice& device)
      : DataStep(layer, tactic, signature, device, DataType::kFloat32) {}

  uint64_t workspaceBytes(std::span<const TensorView> inputs, std::span<const TensorView> outputs) const override {
    Scratch scratch;
    run(inputs, outputs, scratch, nullptr, nullptr);
    return scratch.used;
  }

  void enqueue(const StepArgs& args, Stream& stream) const override {
    Scratch scratch{static_cast<char*>(args.workspace)};
    run(args.inputs, args.outputs, scratch, &args, streamOf(stream));
  }

 private:
  // Counts the workspace (args null) or launches the layer.
  void run(std::span<const TensorView> in, std::span<const TensorView> out, Scratch& scratch, const StepArgs* args,
           cudaStream_t s) const {
    const std::vector<int64_t>& dims = in[0].dims;
    const k::ElementType type = elementType(in[0]);
    const void* x = args ? input(*args, 0) : nullptr;
    void* y = out[0].data;
    const std::string& op = layer_.opType;
    const float epsilon = layer_.attrFloat("epsilon", 1e-5f);
    if (op == "BatchNormalization" || op == "InstanceNormalization" || op == "GroupNormalization") {
      const ChannelView v = channelView(dims);
      if (op == "BatchNormalization") {
        const float* p[4];
        for (size_t i = 0; i < 4; ++i) p[i] = parameter(in, i + 1, {v.channels}, false, scratch, args, s);
        if (args)
          check(k::launchBatchNormalization(x, p[0], p[1], p[2], p[3], v.batch, v.channels, v.spatial, epsilon, y,
                                            type, s));
        return;
      }
      const bool group = op == "GroupNormalization";
      const int64_t groups = group ? layer_.attrInt("num_groups") : v.channels;
      const float* scale = parameter(in, 1, {v.channels}, group, scratch, args, s);
      const float* bias = parameter(in, 2, {v.channels}, group, scratch, args, s);
      if (!args) return;
      if (group)
        return check(k::launchGroupNormalization(x, scale, bias, v.batch, v.channels, v.spatial, groups, epsilon, y,
                                                 type, s));
      return check(k::launchInstanceNormalization(x, scale, bias, v.batch, v.channels, v.spatial, epsilon, y, type, s));
    }
    if (op == "LayerNormalization") return layerNorm(in, out, scratch, args, s);
    if (!args) return;
    if (op == "LpNormalization") {
      const size_t axis = size_t(normalizedAxis(layer_.attrInt("axis", -1), dims.size()));
      return check(k::launchLpNormalization(x, product(dims, 0, axis), dims[axis], product(dims, axis + 1, dims.size()),
                                            layer_.attrInt("p", 2), y, type, s));
    }
    if (op == "MeanVarianceNormalization") {
      std::vector<bool> reduced(dims.size(), false);
      for (int64_t axis : layer_.attrInts("axes", {0, 2, 3})) reduced[size_t(normalizedAxis(axis, dims.size()))] = true;
      return check(k::launchMeanVarianceNormalization(x, dims, reduced, y, type, s));
    }
    const ChannelView v = channelView(dims);  // LRN
    check(k::launchLocalResponseNormalization(x, v.batch, v.channels, v.spatial, layer_.attrInt("size"),
                                              layer_.attrFloat("alpha", 1e-4f), layer_.attrFloat("beta", 0.75f),
                                              layer_.attrFloat("bias", 1.0f), y, type, s));
  }

  void layerNorm(std::span<const TensorView> in, std::span<const TensorView> out, Scratch& scratch,
                 const StepArgs* args, cudaStream_t s) const {
    const std::vector<int64_t>& dims = in[0].dims;
    const size_t axis = size_t(normalizedAxis(layer_.attrInt("axis", -1), dims.size()));
    const std::vector<int64_t> normalized(dims.begin() + int64_t(axis), dims.end());
    const int64_t outer = product(dims, 0, axis), inner = product(normalized, 0, normalized.size());
    const float* scale = parameter(in, 1, normalized, false, scratch, args, s);
    const float* bias = in.size() > 2 && in[2].present() ? parameter(in, 2, normalized, false, scratch, args, s) : nullptr;
    // Mean and InvStdDev come out of the kernel in float32; other storage types get a cast.
    float* statistics[2] = {nullptr, nullptr};
    for (size_t i = 0; i < 2; ++i) {
      if (out.size() <= i + 1 || !out[i + 1].present()) continue;
      statistics[i] = out[i + 1].dtype == DataType::kFloat32
                          ? static_cast<float*>(out[i + 1].data)
                          : static_cast<float*>(scratch.take(uint64_t(outer) * sizeof(float)));
    }
    if (!args) return;
    check(k::launchLayerNormalization(input(*args, 0), nullptr, nullptr, scale, bias, outer, inner,
                                      layer_.attrFloat("epsilon", 1e-5f), out[0].data, statistics[0], statistics[1],
                                      elementType(in[0]), s));
    for (size_t i = 0; i < 2; ++i)
      if (statistics[i] && out[i + 1].dtype != DataType::kFloat32)
        check(k::launchCast(statistics[i], k::ElementType::kFloat32, out[i + 1].data, elementType(out[i + 1]), outer, s),
              "converting its statistics");
  }

  // Parameter input i as float32 values over `target` dims: the bound (or uploaded) memory when it
  // already is that, else converted and broadcast into scratch. `perGroup`: GroupNormalization's
  // opset-18 parameters, one per group, spread over each group's channels.
  const float* parameter(std::span<const TensorView> in, size_t i, std::vector<int64_t> target, bool perGroup,
                         Scratch& scratch, const StepArgs* args, cudaStream_t s) const {
    const TensorView& view = in[i];
    const DataType type = weightType(i) != DataType::kUndefined ? weightType(i) : view.dtype;
    std::vector<int64_t> source = view.dims;
    const int64_t count = product(target, 0, target.size());
    const int64_t have = product(source, 0, source.size());
    if (perGroup && have != count) {
      const int64_t groups = layer_.attrInt("num_groups");
      target = {groups, count / groups};
      source = {have, 1};
    }
    if (have != count && !k::expandView(source, target))
      throw Error(ErrorCode::kInvalidArgument, layer_.describe() + ": input " + std::to_string(i) + " has shape " +
                                                   dimsToString(view.dims) + " that does not broadcast to " +
                                                   dimsToString(target));
    const void* values = args ? input(*args, i) : nullptr;
    if (type != DataType::kFloat32) {
      void* wide = scratch.take(uint64_t(have) * sizeof(float));
      if (args)
        check(k::launchCast(values, elementType(type), wide, k::ElementType::kFloat32, have, s), "converting its parameters");
      values = wide;
    }
    if (have != count) {
      void* spread = scratch.take(uint64_t(count) * sizeof(float));
      if (args) check(k::expand(values, spread, source, target, k::ElementType::kFloat32, s), "broadcasting its parameters");
      values = spread;
    }
    return static_cast<const float*>(values);
  }

  static int64_t normalizedAxis(int64_t axis, size_t rank) { return axis < 0 ? axis + int64_t(rank) : axis; }
};

bool isFloat(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat16 || t == DataType::kBFloat16 || t == DataType::kFloat64;
}

// X a float type; the parameters any float type (converted to float32 for the kernels).
SupportVerdict normTensors(const Layer& layer, Precision, const LayerSignature& tensors) {
  if (auto v = firstRefusal({ranksWithinLimit(tensors), floatData(layer, tensors)}); !v.supported) return v;
  for (size_t i = 1; i < tensors.inputs.size(); ++i)
    if (tensors.inputs[i] && !isFloat(tensors.inputs[i]->dtype))
      return {false, layer.opType + " with " + std::string(toString(tensors.inputs[i]->dtype)) +
                         " parameters has no CUDA kernel"};
  return {};
}

SupportVerdict batchNormTensors(const Layer& layer, Precision precision, const LayerSignature& tensors) {
  if (layer.opsetVersion >= 14 && layer.attrInt("training_mode", 0) != 0)
    return {false, "BatchNormalization in training mode (batch statistics, running averages) runs on the CPU only"};
  for (size_t i = 1; i < layer.outputs.size(); ++i)
    if (layer.hasOutput(i))
      return {false, "BatchNormalization's statistics outputs (running and saved mean and variance) are computed "
                     "on the CPU only"};
  return normTensors(layer, precision, tensors);
}

SupportVerdict lpNormTensors(const Layer& layer, Precision precision, const LayerSignature& tensors) {
  const int64_t p = layer.attrInt("p", 2);
  if (p != 1 && p != 2) return {false, "LpNormalization with p = " + std::to_string(p) + " (only 1 and 2 exist)"};
  return normTensors(layer, precision, tensors);
}

SupportVerdict lrnTensors(const Layer& layer, Precision precision, const LayerSignature& tensors) {
  if (layer.attrInt("size", 0) < 1) return {false, "LRN needs a size of at least 1"};
  return normTensors(layer, precision, tensors);
}

SupportVerdict layerNormTensors(const Layer& layer, Precision precision, const LayerSignature& tensors) {
  for (size_t i = 1; i < tensors.outputs.size(); ++i)
    if (const Tensor* t = tensors.outputs[i]; t && t->dtype != DataType::kFloat32)
      return {false, "LayerNormalization's " + std::string(i == 1 ? "Mean" : "InvStdDev") + " output in " +
                         std::string(toString(t->dtype)) + " (the CUDA kernel keeps its statistics in float32)"};
  return normTensors(layer, precision, tensors);
}

}  // namespace

void registerNormCudaOps(CudaOpRegistry& registry) {
  registry.add("BatchNormalization", stepOp<NormStep>(batchNormTensors));
  registry.add("LayerNormalization", stepOp<NormStep>(layerNormTensors));
  for (const char* name : {"InstanceNormalization", "GroupNormalization", "MeanVarianceNormalization"})
    registry.add(name, stepOp<NormStep>(normTensors));
  registry.add("LpNormalization", stepOp<NormStep>(lpNormTensors));
  registry.add("LRN", stepOp<NormStep>(lrnTensors));
}

}  // namespace kiln::cuda
