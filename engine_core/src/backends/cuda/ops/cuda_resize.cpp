// Resize and Upsample on the GPU (kernels/cuda/resize): the attributes read by the rules the CPU
// uses (resizeOptionsOf), the per-axis scales and tf_crop_and_resize region worked out from the
// roi / scales / sizes host values (or Upsample's attribute) by the schema's resizeGeometry.
#include "../../common/tensor_shape_ops.h"
#include "cuda_data_step.h"

#include <kiln/error.h>

#include <kernels/cuda/resize/resize.h>

namespace kiln::cuda {
namespace {

namespace k = kernels::cuda;

k::ResizeOptions cudaOptions(const Layer& layer) {
  const kernels::ResizeOptions cpu = resizeOptionsOf(layer);
  k::ResizeOptions o;
  switch (cpu.mode) {
    case kernels::ResizeMode::kNearest: o.mode = k::ResizeMode::kNearest; break;
    case kernels::ResizeMode::kLinear: o.mode = k::ResizeMode::kLinear; break;
    case kernels::ResizeMode::kCubic: o.mode = k::ResizeMode::kCubic; break;
  }
  switch (cpu.coordinates) {
    case kernels::CoordinateMode::kHalfPixel: o.coordinates = k::ResizeCoordinateMode::kHalfPixel; break;
    case kernels::CoordinateMode::kHalfPixelSymmetric: o.coordinates = k::ResizeCoordinateMode::kHalfPixelSymmetric; break;
    case kernels::CoordinateMode::kPytorchHalfPixel: o.coordinates = k::ResizeCoordinateMode::kPytorchHalfPixel; break;
    case kernels::CoordinateMode::kAlignCorners: o.coordinates = k::ResizeCoordinateMode::kAlignCorners; break;
    case kernels::CoordinateMode::kAsymmetric: o.coordinates = k::ResizeCoordinateMode::kAsymmetric; break;
    case kernels::CoordinateMode::kTfHalfPixelForNn: o.coordinates = k::ResizeCoordinateMode::kTfHalfPixelForNn; break;
    case kernels::CoordinateMode::kTfCropAndResize: o.coordinates = k::ResizeCoordinateMode::kTfCropAndResize; break;
  }
  switch (cpu.nearest) {
    case kernels::NearestMode::kRoundPreferFloor: o.nearest = k::ResizeNearestMode::kRoundPreferFloor; break;
    case kernels::NearestMode::kRoundPreferCeil: o.nearest = k::ResizeNearestMode::kRoundPreferCeil; break;
    case kernels::NearestMode::kFloor: o.nearest = k::ResizeNearestMode::kFloor; break;
    case kernels::NearestMode::kCeil: o.nearest = k::ResizeNearestMode::kCeil; break;
    case kernels::NearestMode::kSimple: o.nearest = k::ResizeNearestMode::kSimple; break;
  }
  o.cubicCoeffA = cpu.cubicCoeffA;
  o.excludeOutside = cpu.excludeOutside;
  o.antialias = cpu.antialias;
  o.extrapolationValue = layer.attrFloat("extrapolation_value", 0.0f);
  return o;
}

class ResizeStep : public DataStep {
 public:
  ResizeStep(const Layer& layer, const Tactic& tactic, const LayerSignature& signature, CudaDevice& device)
      : DataStep(layer, tactic, signature, device), options_(cudaOptions(layer)) {}

  void enqueue(const StepArgs& args, Stream& stream) const override {
    const TensorView &in = args.inputs[0], &out = args.outputs[0];
    if (out.elementCount() == 0) return;
    if (in.elementCount() == 0)
      throw Error(ErrorCode::kInvalidArgument,
                  layer_.describe() + ": cannot resize an empty input of shape " + dimsToString(in.dims));
    const HostValues values(*this, args);
    const auto geometry = tensor_shape::resizeGeometry(layer_, in.dims, values.valueOf());
    if (!geometry) throw Error(ErrorCode::kInternal, layer_.describe() + ": the scales or sizes are not known at launch");
    check(k::resize(input(args, 0), in.dims, out.data, out.dims, geometry->scales, geometry->roiStart,
                    geometry->roiEnd, options_, elementType(in), streamOf(stream)));
  }

 private:
  k::ResizeOptions options_;
};

// Nearest moves any type; linear and cubic interpolate floats.
SupportVerdict resizeTensors(const Layer& layer, Precision precision, const LayerSignature& tensors) {
  if (auto v = movableTensors(layer, precision, tensors); !v.supported) return v;
  if (resizeOptionsOf(layer).mode == kernels::ResizeMode::kNearest) return {};
  return floatData(layer, tensors);
}

}  // namespace

void registerResizeCudaOps(CudaOpRegistry& registry) {
  registry.add("Resize", stepOp<ResizeStep>(resizeTensors));
  registry.add("Upsample", stepOp<ResizeStep>(resizeTensors));
}

}  // namespace kiln::cuda
