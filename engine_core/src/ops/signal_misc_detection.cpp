// Type and shape inference for NonMaxSuppression and GridSample.
#include "signal_misc.h"

namespace kiln {

kernels::GridSampleConfig gridSampleAttributes(const Layer& layer) {
  auto fail = [&](const std::string& why) { throw Error(ErrorCode::kInvalidModel, layer.describe() + ": " + why); };
  kernels::GridSampleConfig config;
  // Opset 20 renamed bilinear / bicubic to linear / cubic.
  std::string mode = layer.attrString("mode", "bilinear");
  if (mode == "bilinear" || mode == "linear") config.mode = kernels::GridSampleMode::kBilinear;
  else if (mode == "nearest") config.mode = kernels::GridSampleMode::kNearest;
  else if (mode == "bicubic" || mode == "cubic") config.mode = kernels::GridSampleMode::kBicubic;
  else fail("mode must be bilinear, nearest or bicubic, got '" + mode + "'");
  std::string padding = layer.attrString("padding_mode", "zeros");
  if (padding == "zeros") config.padding = kernels::GridSamplePadding::kZeros;
  else if (padding == "border") config.padding = kernels::GridSamplePadding::kBorder;
  else if (padding == "reflection") config.padding = kernels::GridSamplePadding::kReflection;
  else fail("padding_mode must be zeros, border or reflection, got '" + padding + "'");
  config.alignCorners = layer.attrInt("align_corners", 0) != 0;
  return config;
}

namespace {

void requireRank(const InferenceContext& ctx, size_t i, const char* what, size_t rank) {
  if (!ctx.hasInput(i)) return;
  const Shape& s = ctx.inputShape(i);
  if (s.hasRank() && s.rank() != rank)
    ctx.fail(std::string(what) + " must have rank " + std::to_string(rank) + ", got shape " + s.toString());
}

void requireDim(const InferenceContext& ctx, size_t i, const char* what, size_t axis, int64_t value) {
  const Shape& s = ctx.inputShape(i);
  if (s.hasRank() && axis < s.rank() && s[axis].isKnown() && s[axis].value() != value)
    ctx.fail(std::string(what) + " dimension " + std::to_string(axis) + " must be " + std::to_string(value) +
             ", got shape " + s.toString());
}

void inferNonMaxSuppression(InferenceContext& ctx) {
  requireRank(ctx, 0, "boxes", 3);
  requireRank(ctx, 1, "scores", 3);
  requireDim(ctx, 0, "boxes", 2, 4);
  int64_t centerPointBox = ctx.layer().attrInt("center_point_box", 0);
  if (centerPointBox != 0 && centerPointBox != 1)
    ctx.fail("center_point_box must be 0 or 1, got " + std::to_string(centerPointBox));
  const Shape& boxes = ctx.inputShape(0);
  const Shape& scores = ctx.inputShape(1);
  if (boxes.hasRank() && scores.hasRank())
    for (auto [b, s] : {std::pair<size_t, size_t>{0, 0}, {1, 2}})
      if (boxes[b].isKnown() && scores[s].isKnown() && boxes[b].value() != scores[s].value())
        ctx.fail("boxes " + boxes.toString() + " and scores " + scores.toString() +
                 " disagree on the batch or box count (boxes [batch, boxes, 4], scores [batch, classes, boxes])");
  ctx.setOutput(0, DataType::kInt64, Shape{Dim::unknown(), 3});
}

void inferGridSample(InferenceContext& ctx) {
  gridSampleAttributes(ctx.layer());
  requireRank(ctx, 0, "X", 4);
  requireRank(ctx, 1, "grid", 4);
  requireDim(ctx, 1, "grid", 3, 2);
  DataType t = ctx.inputType(0);
  if (t != DataType::kUndefined && (!isFloatingPoint(t) || t == DataType::kFloat8E4M3 || t == DataType::kFloat8E5M2))
    ctx.fail("X must be float32, float64, float16 or bfloat16, got " + std::string(toString(t)));
  DataType gridType = ctx.inputType(1);
  if (gridType != DataType::kUndefined && (!isFloatingPoint(gridType) || gridType == DataType::kFloat8E4M3 ||
                                           gridType == DataType::kFloat8E5M2))
    ctx.fail("grid must be float32, float64, float16 or bfloat16, got " + std::string(toString(gridType)));
  const Shape& x = ctx.inputShape(0);
  const Shape& grid = ctx.inputShape(1);
  auto dim = [](const Shape& s, size_t i) { return s.hasRank() ? s[i] : Dim::unknown(); };
  Dim batch = dim(x, 0).isKnown() ? dim(x, 0) : dim(grid, 0);
  ctx.setOutput(0, t, Shape{batch, dim(x, 1), dim(grid, 1), dim(grid, 2)});
}

}  // namespace

void registerDetectionSchemas(OpSchemaRegistry& registry) {
  registry.add({"", "NonMaxSuppression", inferNonMaxSuppression, 2, 5});
  registry.add({"", "GridSample", inferGridSample, 2, 2});
}

}  // namespace kiln
