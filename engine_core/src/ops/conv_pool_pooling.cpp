// Type and shape inference for the pools of the conv_pool family.
#include "conv_pool_window.h"
#include "op_schema.h"

namespace kiln {
namespace {

// Rank of X, checked to be [N, C, spatial...]; 0 when unknown.
size_t poolRank(const InferenceContext& ctx, size_t minRank = 3) {
  const Shape& x = ctx.inputShape(0);
  if (!x.hasRank()) return 0;
  if (x.rank() < minRank || x.rank() > 5)
    ctx.fail("input X must have rank " + std::to_string(minRank) + " to 5 ([N, C, D1, ...]), got shape " +
             x.toString());
  return x.rank();
}

void checkPoolType(const InferenceContext& ctx, bool allow8Bit) {
  DataType t = ctx.inputType(0);
  bool ok = t == DataType::kFloat32 || t == DataType::kFloat64 || t == DataType::kFloat16 ||
            t == DataType::kBFloat16 || (allow8Bit && (t == DataType::kInt8 || t == DataType::kUInt8));
  if (t != DataType::kUndefined && !ok)
    ctx.fail("input X has type " + std::string(toString(t)) + "; this op takes float16, bfloat16, float32, float64" +
             (allow8Bit ? ", int8 or uint8" : ""));
}

// [N, C, out...] of a windowed pool; both outputs of MaxPool share it.
Shape windowPoolShape(const InferenceContext& ctx) {
  const size_t rank = poolRank(ctx);
  if (rank == 0) return Shape::unknownRank();
  const Shape& x = ctx.inputShape(0);
  WindowAttributes attrs = readWindowAttributes(ctx.layer(), rank - 2);
  std::vector<Dim> dims = {x[0], x[1]};
  for (size_t i = 0; i + 2 < rank; ++i) dims.push_back(windowOutputDim(ctx.layer(), attrs, i, x[i + 2]));
  return Shape(std::move(dims));
}

void inferMaxPool(InferenceContext& ctx) {
  checkPoolType(ctx, true);
  int64_t storageOrder = ctx.layer().attrInt("storage_order", 0);
  if (storageOrder != 0 && storageOrder != 1)
    ctx.fail("attribute 'storage_order' is " + std::to_string(storageOrder) + "; use 0 (row major) or 1 (column major)");
  Shape shape = windowPoolShape(ctx);
  ctx.setOutput(0, ctx.inputType(0), shape);
  ctx.setOutput(1, DataType::kInt64, shape);
}

void inferAveragePool(InferenceContext& ctx) {
  checkPoolType(ctx, false);
  ctx.setOutput(0, ctx.inputType(0), windowPoolShape(ctx));
}

void inferLpPool(InferenceContext& ctx) {
  checkPoolType(ctx, false);
  if (ctx.layer().attrInt("p", 2) < 1) ctx.fail("attribute 'p' must be >= 1");
  ctx.setOutput(0, ctx.inputType(0), windowPoolShape(ctx));
}

void inferGlobalPool(InferenceContext& ctx) {
  checkPoolType(ctx, false);
  const size_t rank = poolRank(ctx);
  if (rank == 0) return ctx.setOutput(0, ctx.inputType(0), Shape::unknownRank());
  const Shape& x = ctx.inputShape(0);
  std::vector<Dim> dims = {x[0], x[1]};
  dims.resize(rank, Dim(1));
  ctx.setOutput(0, ctx.inputType(0), Shape(std::move(dims)));
}

void inferMaxUnpool(InferenceContext& ctx) {
  checkPoolType(ctx, false);
  if (ctx.inputType(1) != DataType::kInt64)
    ctx.fail("input I (indices) must be int64, got " + std::string(toString(ctx.inputType(1))));
  const size_t rank = poolRank(ctx);
  const Shape& x = ctx.inputShape(0);
  if (ctx.hasInput(2)) {  // output_shape input: the shape is its value
    if (const HostTensor* value = ctx.inputValue(2)) {
      std::vector<int64_t> dims = value->toInt64Vector();
      if (rank != 0 && dims.size() != rank)
        ctx.fail("input output_shape has " + std::to_string(dims.size()) + " values but X has rank " +
                 std::to_string(rank));
      return ctx.setOutput(0, ctx.inputType(0), Shape::fromDims(dims));
    }
    return ctx.setOutput(0, ctx.inputType(0), rank ? Shape::ofRank(rank) : Shape::unknownRank());
  }
  if (rank == 0) return ctx.setOutput(0, ctx.inputType(0), Shape::unknownRank());
  // Without output_shape: the size MaxPool with these attributes came from, (in - 1) * s + k - pads.
  WindowAttributes attrs = readWindowAttributes(ctx.layer(), rank - 2);
  std::vector<Dim> dims = {x[0], x[1]};
  for (size_t i = 0; i + 2 < rank; ++i) {
    if (!x[i + 2].isKnown()) {
      dims.push_back(Dim::unknown());
      continue;
    }
    int64_t out = maxUnpoolOutputSize(attrs, i, x[i + 2].value());
    if (out <= 0) ctx.fail("the output of spatial axis " + std::to_string(i) + " would be empty; check pads");
    dims.push_back(Dim(out));
  }
  ctx.setOutput(0, ctx.inputType(0), Shape(std::move(dims)));
}

// rois must be [R, columns]; returns R.
Dim roiCount(const InferenceContext& ctx, size_t index, int64_t columns) {
  const Shape& rois = ctx.inputShape(index);
  if (!rois.hasRank()) return Dim::unknown();
  if (rois.rank() != 2 || (rois[1].isKnown() && rois[1].value() != columns))
    ctx.fail("input rois must have shape [num_rois, " + std::to_string(columns) + "], got " + rois.toString());
  return rois[0];
}

void inferMaxRoiPool(InferenceContext& ctx) {
  checkPoolType(ctx, false);
  std::vector<int64_t> pooled = ctx.layer().attrInts("pooled_shape");
  if (pooled.size() != 2 || pooled[0] < 1 || pooled[1] < 1)
    ctx.fail("attribute 'pooled_shape' must be two positive sizes (height, width)");
  if (ctx.inputShape(0).hasRank() && ctx.inputShape(0).rank() != 4)
    ctx.fail("input X must be [N, C, H, W], got " + ctx.inputShape(0).toString());
  Dim c = ctx.inputShape(0).hasRank() ? ctx.inputShape(0)[1] : Dim::unknown();
  ctx.setOutput(0, ctx.inputType(0), Shape({roiCount(ctx, 1, 5), c, pooled[0], pooled[1]}));
}

void inferRoiAlign(InferenceContext& ctx) {
  checkPoolType(ctx, false);
  const Layer& layer = ctx.layer();
  std::string mode = layer.attrString("mode", "avg");
  if (mode != "avg" && mode != "max") ctx.fail("attribute 'mode' is '" + mode + "'; use avg or max");
  std::string transform = layer.attrString("coordinate_transformation_mode", "half_pixel");
  if (transform != "half_pixel" && transform != "output_half_pixel")
    ctx.fail("attribute 'coordinate_transformation_mode' is '" + transform + "'; use half_pixel or output_half_pixel");
  int64_t height = layer.attrInt("output_height", 1), width = layer.attrInt("output_width", 1);
  if (height < 1 || width < 1) ctx.fail("attributes 'output_height' and 'output_width' must be >= 1");
  if (ctx.inputShape(0).hasRank() && ctx.inputShape(0).rank() != 4)
    ctx.fail("input X must be [N, C, H, W], got " + ctx.inputShape(0).toString());
  if (ctx.inputType(2) != DataType::kInt64)
    ctx.fail("input batch_indices must be int64, got " + std::string(toString(ctx.inputType(2))));
  Dim c = ctx.inputShape(0).hasRank() ? ctx.inputShape(0)[1] : Dim::unknown();
  ctx.setOutput(0, ctx.inputType(0), Shape({roiCount(ctx, 1, 4), c, height, width}));
}

}  // namespace

void registerPoolingSchemas(OpSchemaRegistry& registry) {
  registry.add({"", "MaxPool", inferMaxPool, 1, 1});
  registry.add({"", "AveragePool", inferAveragePool, 1, 1});
  registry.add({"", "LpPool", inferLpPool, 1, 1});
  registry.add({"", "GlobalAveragePool", inferGlobalPool, 1, 1});
  registry.add({"", "GlobalMaxPool", inferGlobalPool, 1, 1});
  registry.add({"", "GlobalLpPool", inferGlobalPool, 1, 1});
  registry.add({"", "MaxUnpool", inferMaxUnpool, 2, 3});
  registry.add({"", "MaxRoiPool", inferMaxRoiPool, 2, 2});
  registry.add({"", "RoiAlign", inferRoiAlign, 3, 3});
}

}  // namespace kiln
