// Pooling on the GPU (kernels/cuda/pool): MaxPool (with its Indices output), AveragePool and LpPool
// over 1-, 2- and 3-D windows, and the global pools. The window comes from the attributes through
// the helpers the schema and the CPU kernels use (readWindowAttributes, makeSpatialWindow), so
// auto_pad, ceil_mode and asymmetric pads resolve the same way on both backends. 2-D pools also
// take channels-last activations (as the plan's formats say), so chains of channels-last
// convolutions keep their layout through them.
#include "../../../ops/conv_pool_window.h"
#include "cuda_data_step.h"
#include "pool_window.h"

#include <kernels/cuda/pool/pool.h>

namespace kiln::cuda {

namespace k = kernels::cuda;

// The window over logical input dims [N, C, spatial...] (whatever the layout in memory).
kernels::cuda::PoolWindow poolWindow(const Layer& layer, const std::vector<int64_t>& dims) {
  const std::vector<int64_t> spatial(dims.begin() + 2, dims.end());
  const kernels::SpatialWindow w = makeSpatialWindow(layer, readWindowAttributes(layer, spatial.size()), spatial);
  k::PoolWindow p;
  for (int a = 0; a < k::kPoolSpatialRank; ++a) {
    p.in[a] = w.in[a];
    p.out[a] = w.out[a];
    p.kernel[a] = w.kernel[a];
    p.stride[a] = w.stride[a];
    p.dilation[a] = w.dilation[a];
    p.padBegin[a] = w.padBegin[a];
    p.padEnd[a] = w.padEnd[a];
  }
  return p;
}

namespace {

// A pool's input layout (a windowed pool writes its output in the same one; a global pool's
// [N, C, 1, 1] output is the same bytes in both).
k::PoolLayout layoutOf(const Tactic& tactic) {
  return tactic.inputFormat(0) == TensorFormat::kNHWC ? k::PoolLayout::kChannelsLast : k::PoolLayout::kChannelsFirst;
}

// Channels-last for 4-D float tensors, and for MaxPool without its Indices output.
std::vector<size_t> poolChannelsLastInputs(const Layer& layer, const std::string&) {
  if (layer.opType == "MaxPool" && layer.hasOutput(1)) return {};
  return {0};
}

class WindowPoolStep : public DataStep {
 public:
  using DataStep::DataStep;
  void enqueue(const StepArgs& args, Stream& stream) const override {
    const TensorView &x = args.inputs[0], &y = args.outputs[0];
    const k::PoolWindow window = poolWindow(layer_, x.dims);
    const int64_t batch = x.dims.at(0), channels = x.dims.at(1);
    const auto layout = layoutOf(tactic_);
    const cudaStream_t s = streamOf(stream);
    if (layer_.opType == "MaxPool") {
      int64_t* indices = layer_.hasOutput(1) ? static_cast<int64_t*>(args.outputs[1].data) : nullptr;
      return check(k::maxPool(input(args, 0), y.data, indices, layer_.attrInt("storage_order", 0) == 1, batch, channels,
                              window, layout, elementType(x), s));
    }
    if (layer_.opType == "AveragePool")
      return check(k::averagePool(input(args, 0), y.data, batch, channels, window,
                                  layer_.attrInt("count_include_pad", 0) != 0, layout, elementType(x), s));
    check(k::lpPool(input(args, 0), y.data, batch, channels, window, float(layer_.attrInt("p", 2)), layout,
                    elementType(x), s));
  }
};

int64_t spatialOf(const TensorView& x) {
  int64_t spatial = 1;
  for (size_t d = 2; d < x.dims.size(); ++d) spatial *= x.dims[d];
  return spatial;
}

// One value per (batch, channel) over every spatial position.
class GlobalPoolStep : public DataStep {
 public:
  GlobalPoolStep(const Layer& layer, const Tactic& tactic, const LayerSignature& signature, CudaDevice& device)
      : DataStep(layer, tactic, signature, device),
        kind_(layer.opType == "GlobalMaxPool"   ? k::GlobalPoolKind::kMax
              : layer.opType == "GlobalLpPool" ? k::GlobalPoolKind::kLp
                                               : k::GlobalPoolKind::kAverage) {}

  // Few images: their positions spread over more blocks, the partial results in the workspace.
  uint64_t workspaceBytes(std::span<const TensorView> inputs, std::span<const TensorView>) const override {
    if (inputs.empty() || inputs[0].dims.size() < 2) return 0;
    return k::globalPoolWorkspaceBytes(inputs[0].dims[0], inputs[0].dims[1], spatialOf(inputs[0]), layoutOf(tactic_),
                                       elementType(inputs[0]));
  }

  void enqueue(const StepArgs& args, Stream& stream) const override {
    const TensorView &x = args.inputs[0], &y = args.outputs[0];
    check(k::globalPool(kind_, input(args, 0), y.data, x.dims.at(0), x.dims.at(1), spatialOf(x),
                        float(layer_.attrInt("p", 2)), layoutOf(tactic_), elementType(x), streamOf(stream),
                        args.workspace, args.workspaceBytes));
  }

 private:
  k::GlobalPoolKind kind_;
};

// Windows of 1 to 3 spatial axes: inputs of rank 3 to 5.
SupportVerdict windowPoolTensors(const Layer& layer, Precision, const LayerSignature& tensors) {
  if (auto v = ranksWithinLimit(tensors); !v.supported) return v;
  const Tensor* x = tensors.inputs.empty() ? nullptr : tensors.inputs[0];
  if (x && x->shape.hasRank() && (x->shape.rank() < 3 || x->shape.rank() > 5))
    return {false, layer.opType + " over " + std::to_string(int64_t(x->shape.rank()) - 2) +
                       " spatial axes has no CUDA kernel (1 to 3)"};
  if (layer.opType == "MaxPool" && x && (x->dtype == DataType::kInt8 || x->dtype == DataType::kUInt8)) return {};
  return floatData(layer, tensors);
}

SupportVerdict globalPoolTensors(const Layer& layer, Precision, const LayerSignature& tensors) {
  return firstRefusal({ranksWithinLimit(tensors), floatData(layer, tensors)});
}

}  // namespace

void registerPoolCudaOps(CudaOpRegistry& registry) {
  for (const char* name : {"MaxPool", "AveragePool", "LpPool"}) {
    CudaOp op = stepOp<WindowPoolStep>(windowPoolTensors);
    op.channelsLastInputs = poolChannelsLastInputs;
    op.channelsLastInAndOut = true;
    registry.add(name, op);
  }
  for (const char* name : {"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"}) {
    CudaOp op = stepOp<GlobalPoolStep>(globalPoolTensors);
    op.channelsLastInputs = poolChannelsLastInputs;
    registry.add(name, op);
  }
}

}  // namespace kiln::cuda
