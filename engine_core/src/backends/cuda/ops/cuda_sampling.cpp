// Sampling at computed positions on the GPU (kernels/cuda/sampling): GridSample (2-D), RoiAlign
// and MaxUnpool. The attributes are read by the helpers the schemas and the CPU kernels use
// (gridSampleAttributes, roiAlignAttributes, readWindowAttributes / maxUnpoolOutputSize), so both
// backends resolve modes, opset defaults and the unpooled shape alike.
#include "../../../ops/conv_pool_window.h"
#include "../../../ops/signal_misc.h"
#include "../../common/conv_geometry.h"
#include "cuda_data_step.h"

#include <kiln/error.h>

#include <kernels/cuda/sampling/sampling.h>

namespace kiln::cuda {
namespace {

namespace k = kernels::cuda;

class GridSampleStep : public DataStep {
 public:
  GridSampleStep(const Layer& layer, const Tactic& tactic, const LayerSignature& signature, CudaDevice& device)
      : DataStep(layer, tactic, signature, device) {
    const kernels::GridSampleConfig config = gridSampleAttributes(layer);
    shape_.mode = config.mode == kernels::GridSampleMode::kNearest   ? k::GridSampleMode::kNearest
                  : config.mode == kernels::GridSampleMode::kBicubic ? k::GridSampleMode::kCubic
                                                                     : k::GridSampleMode::kLinear;
    shape_.padding = config.padding == kernels::GridSamplePadding::kBorder       ? k::GridSamplePadding::kBorder
                     : config.padding == kernels::GridSamplePadding::kReflection ? k::GridSamplePadding::kReflection
                                                                                 : k::GridSamplePadding::kZeros;
    shape_.alignCorners = config.alignCorners;
  }

  void enqueue(const StepArgs& args, Stream& stream) const override {
    const TensorView &x = args.inputs[0], &grid = args.inputs[1];
    if (x.dims.size() != 4 || grid.dims.size() != 4 || grid.dims[3] != 2 || grid.dims[0] != x.dims[0])
      throw Error(ErrorCode::kInvalidArgument, layer_.describe() + ": X must be [N, C, H, W] and grid [N, H_out, W_out, 2], got " +
                                                   dimsToString(x.dims) + " and " + dimsToString(grid.dims));
    k::GridSampleShape shape = shape_;
    shape.batch = x.dims[0];
    shape.channels = x.dims[1];
    shape.inHeight = x.dims[2];
    shape.inWidth = x.dims[3];
    shape.outHeight = grid.dims[1];
    shape.outWidth = grid.dims[2];
    check(k::gridSample2d(input(args, 0), elementType(x), input(args, 1), elementType(inputType(args, 1)), shape,
                          args.outputs[0].data, streamOf(stream)));
  }

 private:
  k::GridSampleShape shape_;
};

class RoiAlignStep : public DataStep {
 public:
  RoiAlignStep(const Layer& layer, const Tactic& tactic, const LayerSignature& signature, CudaDevice& device)
      : DataStep(layer, tactic, signature, device), params_(roiAlignAttributes(layer)) {}

  void enqueue(const StepArgs& args, Stream& stream) const override {
    const TensorView &x = args.inputs[0], &rois = args.inputs[1], &indices = args.inputs[2];
    if (x.dims.size() != 4 || rois.dims.size() != 2 || rois.dims[1] != 4 || indices.elementCount() != rois.dims[0])
      throw Error(ErrorCode::kInvalidArgument, layer_.describe() + ": X must be [N, C, H, W], rois [R, 4] and " +
                                                   "batch_indices [R], got " + dimsToString(x.dims) + ", " +
                                                   dimsToString(rois.dims) + " and " + dimsToString(indices.dims));
    k::RoiAlignShape shape;
    shape.batch = x.dims[0];
    shape.channels = x.dims[1];
    shape.height = x.dims[2];
    shape.width = x.dims[3];
    shape.rois = rois.dims[0];
    shape.outputHeight = params_.outputH;
    shape.outputWidth = params_.outputW;
    shape.samplingRatio = params_.samplingRatio;
    shape.spatialScale = params_.spatialScale;
    shape.halfPixel = params_.halfPixel;
    shape.maxMode = params_.maxMode;
    check(k::roiAlign(input(args, 0), elementType(x), input(args, 1), elementType(inputType(args, 1)), input(args, 2),
                      elementType(inputType(args, 2)), shape, args.outputs[0].data, streamOf(stream)));
  }

 private:
  kernels::RoiAlignParams params_;
};

class MaxUnpoolStep : public DataStep {
 public:
  using DataStep::DataStep;
  void enqueue(const StepArgs& args, Stream& stream) const override {
    const TensorView &x = args.inputs[0], &indices = args.inputs[1], &y = args.outputs[0];
    if (indices.dims != x.dims)
      throw Error(ErrorCode::kInvalidArgument, layer_.describe() + ": input I has shape " + dimsToString(indices.dims) +
                                                   " but X has " + dimsToString(x.dims) +
                                                   "; they must match (I is MaxPool's Indices output)");
    const WindowAttributes attrs = readWindowAttributes(layer_, x.dims.size() - 2);
    std::vector<int64_t> pooledFrom = {x.dims[0], x.dims[1]};
    for (size_t i = 0; i + 2 < x.dims.size(); ++i) pooledFrom.push_back(maxUnpoolOutputSize(attrs, i, x.dims[i + 2]));
    if (y.dims.size() != pooledFrom.size())
      throw Error(ErrorCode::kInvalidArgument, layer_.describe() + ": output_shape " + dimsToString(y.dims) +
                                                   " must have the rank of X " + dimsToString(x.dims));
    check(k::maxUnpool(input(args, 0), static_cast<const int64_t*>(input(args, 1)), x.elementCount(), pooledFrom.data(),
                       y.dims.data(), int(y.dims.size()), y.data, elementType(x), streamOf(stream)));
  }
};

SupportVerdict gridSampleTensors(const Layer& layer, Precision, const LayerSignature& tensors) {
  const Tensor* x = tensors.inputs.empty() ? nullptr : tensors.inputs[0];
  if (x && x->shape.hasRank() && x->shape.rank() != 4)
    return {false, "GridSample over " + std::to_string(int64_t(x->shape.rank()) - 2) +
                       " spatial axes has no CUDA kernel (2-D only)"};
  return floatData(layer, tensors);
}

SupportVerdict roiAlignTensors(const Layer& layer, Precision, const LayerSignature& tensors) {
  return firstRefusal({floatData(layer, tensors), indexInput(layer, tensors, 2, "batch_indices")});
}

SupportVerdict maxUnpoolTensors(const Layer& layer, Precision precision, const LayerSignature& tensors) {
  const Tensor* x = tensors.inputs.empty() ? nullptr : tensors.inputs[0];
  if (x && x->shape.hasRank() && (x->shape.rank() < 3 || x->shape.rank() > size_t(k::kMaxUnpoolRank)))
    return {false, "MaxUnpool over " + std::to_string(int64_t(x->shape.rank()) - 2) +
                       " spatial axes has no CUDA kernel (1 to 3)"};
  const Tensor* indices = tensors.inputs.size() > 1 ? tensors.inputs[1] : nullptr;
  if (indices && indices->dtype != DataType::kInt64)
    return {false, "MaxUnpool's indices are " + std::string(toString(indices->dtype)) + "; the CUDA kernel reads int64"};
  return movableTensors(layer, precision, tensors);
}

}  // namespace

void registerSamplingCudaOps(CudaOpRegistry& registry) {
  registry.add("GridSample", stepOp<GridSampleStep>(gridSampleTensors));
  registry.add("RoiAlign", stepOp<RoiAlignStep>(roiAlignTensors));
  registry.add("MaxUnpool", stepOp<MaxUnpoolStep>(maxUnpoolTensors));
}

}  // namespace kiln::cuda
