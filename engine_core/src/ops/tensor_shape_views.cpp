// Schemas of the ops whose output is the input's data under another shape (Reshape, Flatten,
// Squeeze, Unsqueeze, Dropout), of the shape queries (Shape, Size) and of the generators
// (ConstantOfShape, Range, EyeLike).
#include "../onnx/tensor_proto.h"
#include "tensor_shape_common.h"

namespace kiln::tensor_shape {
namespace {

void inferShapeOp(InferenceContext& ctx) {
  const Shape& in = ctx.inputShape(0);
  if (!in.hasRank()) {
    ctx.setOutput(0, DataType::kInt64, Shape{Dim::unknown()});
    return;
  }
  auto [start, end] = shapeWindow(ctx.layer(), int64_t(in.rank()));
  ctx.setOutput(0, DataType::kInt64, Shape{end - start});
}

void inferReshape(InferenceContext& ctx) {
  const Layer& layer = ctx.layer();
  bool allowZero = ctx.opset() >= 14 && layer.attrInt("allowzero", 0) != 0;
  IntsParam target = intsParam(layer, "shape", 1, 5, valuesOf(ctx));
  if (!target.given) ctx.fail("the target shape is missing; give it as input 1 (opset 5+) or the 'shape' attribute");
  DataType type = ctx.inputType(0);
  if (target.values) {
    ctx.setOutput(0, type, Shape(reshapeDims(layer, ctx.inputShape(0), *target.values, allowZero)));
  } else if (auto rank = knownLength(ctx, 1)) {
    ctx.setOutput(0, type, Shape::ofRank(size_t(*rank)));
  } else {
    ctx.setOutput(0, type, Shape::unknownRank());
  }
}

void inferFlatten(InferenceContext& ctx) {
  const Shape& in = ctx.inputShape(0);
  int64_t axis = ctx.layer().attrInt("axis", 1);
  if (!in.hasRank()) {
    ctx.setOutput(0, ctx.inputType(0), Shape{Dim::unknown(), Dim::unknown()});
    return;
  }
  int64_t rank = int64_t(in.rank());
  if (axis < -rank || axis > rank)
    ctx.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank) + "; use [" +
             std::to_string(-rank) + ", " + std::to_string(rank) + "]");
  if (axis < 0) axis += rank;
  ctx.setOutput(0, ctx.inputType(0),
                Shape{productDim(in.dims(), 0, size_t(axis)), productDim(in.dims(), size_t(axis), in.rank())});
}

void inferSqueeze(InferenceContext& ctx) {
  const Shape& in = ctx.inputShape(0);
  IntsParam axes = intsParam(ctx.layer(), "axes", 1, 13, valuesOf(ctx));
  DataType type = ctx.inputType(0);
  if (!in.hasRank()) {
    ctx.setOutput(0, type, Shape::unknownRank());
    return;
  }
  int64_t rank = int64_t(in.rank());
  std::vector<bool> drop(in.rank(), false);
  if (!axes.given) {  // every dim of size 1; which those are must be known
    for (size_t d = 0; d < in.rank(); ++d) {
      if (!in[d].isKnown()) {
        ctx.setOutput(0, type, Shape::unknownRank());
        return;
      }
      drop[d] = in[d].value() == 1;
    }
  } else if (!axes.values) {
    auto count = knownLength(ctx, 1);
    ctx.setOutput(0, type, count ? Shape::ofRank(size_t(rank - *count)) : Shape::unknownRank());
    return;
  } else {
    for (int64_t axis : normalizeAxes(ctx.layer(), *axes.values, rank)) {
      if (in[size_t(axis)].isKnown() && in[size_t(axis)].value() != 1)
        ctx.fail("cannot squeeze axis " + std::to_string(axis) + " of the input " + in.toString() +
                 ": its size is not 1");
      drop[size_t(axis)] = true;
    }
  }
  std::vector<Dim> out;
  for (size_t d = 0; d < in.rank(); ++d)
    if (!drop[d]) out.push_back(in[d]);
  ctx.setOutput(0, type, Shape(std::move(out)));
}

void inferUnsqueeze(InferenceContext& ctx) {
  const Shape& in = ctx.inputShape(0);
  IntsParam axes = intsParam(ctx.layer(), "axes", 1, 13, valuesOf(ctx));
  DataType type = ctx.inputType(0);
  if (!axes.given) ctx.fail("axes are required (the 'axes' attribute before opset 13, input 1 from opset 13)");
  if (!in.hasRank()) {
    ctx.setOutput(0, type, Shape::unknownRank());
    return;
  }
  if (!axes.values) {
    auto count = knownLength(ctx, 1);
    ctx.setOutput(0, type, count ? Shape::ofRank(in.rank() + size_t(*count)) : Shape::unknownRank());
    return;
  }
  int64_t outRank = int64_t(in.rank() + axes.values->size());
  std::vector<bool> inserted(size_t(outRank), false);
  for (int64_t axis : normalizeAxes(ctx.layer(), *axes.values, outRank)) inserted[size_t(axis)] = true;
  std::vector<Dim> out;
  size_t next = 0;
  for (int64_t d = 0; d < outRank; ++d) out.push_back(inserted[size_t(d)] ? Dim(1) : in[next++]);
  ctx.setOutput(0, type, Shape(std::move(out)));
}

void inferDropout(InferenceContext& ctx) {
  const Tensor& in = ctx.input(0);
  ctx.setOutput(0, in.dtype, in.shape);
  // The mask was the data's type before opset 10, bool since.
  ctx.setOutput(1, ctx.opset() >= 10 ? DataType::kBool : in.dtype, in.shape);
  double ratio = ctx.opset() < 12 ? ctx.layer().attrFloat("ratio", 0.5f) : 0.5;
  if (const HostTensor* given = ctx.opset() >= 12 ? ctx.inputValue(1) : nullptr) ratio = given->toDoubleVector().at(0);
  if (ratio < 0 || ratio >= 1) ctx.fail("ratio " + std::to_string(ratio) + " must be in [0, 1)");
}

void inferConstantOfShape(InferenceContext& ctx) {
  DataType type = DataType::kFloat32;
  if (ctx.layer().hasAttr("value")) {
    const HostTensor& value = ctx.layer().attrTensor("value");
    if (value.elementCount() != 1)
      ctx.fail("the 'value' attribute must hold exactly one element, got shape " + dimsToString(value.dims()));
    type = value.dtype();
  }
  if (const HostTensor* shape = ctx.inputValue(0)) {
    auto dims = shape->toInt64Vector();
    for (int64_t d : dims)
      if (d < 0) ctx.fail("the requested shape " + dimsToString(dims) + " has a negative dim");
    ctx.setOutput(0, type, Shape::fromDims(dims));
  } else if (auto rank = knownLength(ctx, 0)) {
    ctx.setOutput(0, type, Shape::ofRank(size_t(*rank)));
  } else {
    ctx.setOutput(0, type, Shape::unknownRank());
  }
}

void inferRange(InferenceContext& ctx) {
  DataType type = ctx.inputType(0);
  for (size_t i = 1; i < 3; ++i)
    if (ctx.inputType(i) != type)
      ctx.fail("start, limit and delta must have the same type; input " + std::to_string(i) + " is " +
               std::string(toString(ctx.inputType(i))) + ", start is " + std::string(toString(type)));
  const HostTensor *start = ctx.inputValue(0), *limit = ctx.inputValue(1), *delta = ctx.inputValue(2);
  if (start && limit && delta) {
    ctx.setOutput(0, type, Shape{rangeLength(ctx.layer(), *start, *limit, *delta)});
  } else {
    ctx.setOutput(0, type, Shape{Dim::unknown()});
  }
}

void inferEyeLike(InferenceContext& ctx) {
  const Shape& in = ctx.inputShape(0);
  if (in.hasRank() && in.rank() != 2) ctx.fail("the input must be 2-D, got shape " + in.toString());
  DataType type = ctx.inputType(0);
  if (ctx.layer().hasAttr("dtype"))
    type = onnx_import::fromOnnxType(int32_t(ctx.layer().attrInt("dtype")), ctx.layer().describe() + " dtype");
  ctx.setOutput(0, type, in.hasRank() ? in : Shape::ofRank(2));
}

}  // namespace

void registerViewSchemas(OpSchemaRegistry& registry) {
  registry.add({"", "Shape", inferShapeOp, 1, 1});
  registry.add({"", "Size", [](InferenceContext& ctx) { ctx.setOutput(0, DataType::kInt64, Shape{}); }, 1, 1});
  registry.add({"", "Reshape", inferReshape, 1, 2});
  registry.add({"", "Flatten", inferFlatten, 1, 1});
  registry.add({"", "Squeeze", inferSqueeze, 1, 2});
  registry.add({"", "Unsqueeze", inferUnsqueeze, 1, 2});
  registry.add({"", "Dropout", inferDropout, 1, 3});
  registry.add({"", "ConstantOfShape", inferConstantOfShape, 1, 1});
  registry.add({"", "Range", inferRange, 3, 3});
  registry.add({"", "EyeLike", inferEyeLike, 1, 1});
}

}  // namespace kiln::tensor_shape
