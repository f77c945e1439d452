#include "tensor_shape_ops.h"

namespace kiln {

kernels::PadMode padModeOf(const Layer& layer) {
  const std::string mode = layer.attrString("mode", "constant");
  return mode == "reflect" ? kernels::PadMode::kReflect
         : mode == "edge"  ? kernels::PadMode::kEdge
         : mode == "wrap"  ? kernels::PadMode::kWrap
                           : kernels::PadMode::kConstant;
}

kernels::ScatterReduction scatterReductionOf(const Layer& layer) {
  const std::string name = layer.attrString("reduction", "none");
  return name == "add"   ? kernels::ScatterReduction::kAdd
         : name == "mul" ? kernels::ScatterReduction::kMul
         : name == "max" ? kernels::ScatterReduction::kMax
         : name == "min" ? kernels::ScatterReduction::kMin
                         : kernels::ScatterReduction::kNone;
}

SelectionAxis selectionAxisOf(const Layer& layer, const std::vector<int64_t>& dims) {
  SelectionAxis s;
  if (!layer.hasAttr("axis")) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    s.dims = {n};
    return s;
  }
  s.dims = dims;
  const int64_t axis = layer.attrInt("axis");
  s.axis = size_t(axis < 0 ? axis + int64_t(dims.size()) : axis);
  for (size_t d = 0; d < s.axis; ++d) s.outer *= dims[d];
  for (size_t d = s.axis + 1; d < dims.size(); ++d) s.inner *= dims[d];
  return s;
}

kernels::ResizeOptions resizeOptionsOf(const Layer& layer) {
  using kernels::CoordinateMode;
  using kernels::NearestMode;
  using kernels::ResizeMode;
  kernels::ResizeOptions options;
  const std::string mode = layer.attrString("mode", "nearest");
  options.mode = mode == "nearest" ? ResizeMode::kNearest : mode == "cubic" ? ResizeMode::kCubic : ResizeMode::kLinear;
  if (layer.opType == "Upsample" || layer.opsetVersion < 11) {  // no coordinate attributes yet
    options.coordinates = CoordinateMode::kAsymmetric;
    options.nearest = NearestMode::kSimple;
    return options;
  }
  const std::string coordinates = layer.attrString("coordinate_transformation_mode", "half_pixel");
  options.coordinates = coordinates == "half_pixel_symmetric"   ? CoordinateMode::kHalfPixelSymmetric
                        : coordinates == "pytorch_half_pixel"   ? CoordinateMode::kPytorchHalfPixel
                        : coordinates == "align_corners"        ? CoordinateMode::kAlignCorners
                        : coordinates == "asymmetric"           ? CoordinateMode::kAsymmetric
                        : coordinates == "tf_half_pixel_for_nn" ? CoordinateMode::kTfHalfPixelForNn
                        : coordinates == "tf_crop_and_resize"   ? CoordinateMode::kTfCropAndResize
                                                                : CoordinateMode::kHalfPixel;
  const std::string nearest = layer.attrString("nearest_mode", "round_prefer_floor");
  options.nearest = nearest == "round_prefer_ceil" ? NearestMode::kRoundPreferCeil
                    : nearest == "floor"           ? NearestMode::kFloor
                    : nearest == "ceil"            ? NearestMode::kCeil
                                                   : NearestMode::kRoundPreferFloor;
  options.cubicCoeffA = layer.attrFloat("cubic_coeff_a", -0.75f);
  options.excludeOutside = layer.attrInt("exclude_outside", 0) != 0;
  options.antialias = layer.attrInt("antialias", 0) != 0;
  return options;
}

}  // namespace kiln
