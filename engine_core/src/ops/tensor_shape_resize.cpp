// Schemas of Resize (opsets 10, 11, 13, 18) and Upsample (7, 9).
#include "tensor_shape_common.h"

namespace kiln::tensor_shape {
namespace {

void checkOneOf(const InferenceContext& ctx, const char* attr, const std::string& value,
                std::initializer_list<const char*> allowed) {
  std::string list;
  for (const char* a : allowed) {
    if (value == a) return;
    list += (list.empty() ? "" : ", ") + std::string(a);
  }
  ctx.fail(std::string(attr) + " '" + value + "' is not one of " + list);
}

void inferResize(InferenceContext& ctx) {
  const Layer& layer = ctx.layer();
  const Shape& in = ctx.inputShape(0);
  DataType type = ctx.inputType(0);
  std::string mode = layer.attrString("mode", "nearest");
  if (mode == "bilinear") mode = "linear";  // Upsample-7 spelling
  checkOneOf(ctx, "mode", mode, {"nearest", "linear", "cubic"});
  if (layer.opType == "Resize" && ctx.opset() >= 11) {
    checkOneOf(ctx, "coordinate_transformation_mode", layer.attrString("coordinate_transformation_mode", "half_pixel"),
               {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
                "tf_half_pixel_for_nn", "tf_crop_and_resize"});
    checkOneOf(ctx, "nearest_mode", layer.attrString("nearest_mode", "round_prefer_floor"),
               {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"});
  } else if (mode == "cubic") {
    ctx.fail("cubic mode needs Resize from opset 11");
  }
  if (mode != "nearest" && !isFloatingPoint(type))
    ctx.fail(mode + " interpolation needs floating-point data, got " + std::string(toString(type)) +
             "; use mode 'nearest' or cast the input");
  if (!in.hasRank()) {
    ctx.setOutput(0, type, Shape::unknownRank());
    return;
  }
  std::vector<int64_t> inDims;
  for (const Dim& d : in.dims()) inDims.push_back(d.isKnown() ? d.value() : -1);
  auto geometry = resizeGeometry(layer, inDims, valuesOf(ctx));
  if (!geometry) {
    ctx.setOutput(0, type, Shape::ofRank(in.rank()));
    return;
  }
  std::vector<Dim> out;
  for (size_t d = 0; d < in.rank(); ++d) {
    bool unchanged = geometry->scales[d] == 1.0 && geometry->outDims[d] == inDims[d];
    out.push_back(unchanged ? in[d] : geometry->outDims[d] >= 0 ? Dim(geometry->outDims[d]) : Dim::unknown());
  }
  ctx.setOutput(0, type, Shape(std::move(out)));
}

}  // namespace

void registerResizeSchemas(OpSchemaRegistry& registry) {
  registry.add({"", "Resize", inferResize, 1, 4});
  registry.add({"", "Upsample", inferResize, 1, 2});
}

}  // namespace kiln::tensor_shape
