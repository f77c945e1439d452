// Schemas of the indexed ops: Gather, GatherElements, GatherND, Scatter, ScatterElements, ScatterND,
// OneHot, Compress, and the data-dependent NonZero and Unique.
#include "tensor_shape_common.h"

namespace kiln::tensor_shape {
namespace {

void requireIntegerIndices(const InferenceContext& ctx, size_t i, const char* what) {
  DataType t = ctx.inputType(i);
  if (t != DataType::kInt32 && t != DataType::kInt64)
    ctx.fail(std::string(what) + " must be int32 or int64, got " + std::string(toString(t)));
}

void inferGather(InferenceContext& ctx) {
  requireIntegerIndices(ctx, 1, "indices");
  const Shape &data = ctx.inputShape(0), &indices = ctx.inputShape(1);
  DataType type = ctx.inputType(0);
  if (!data.hasRank() || !indices.hasRank()) {
    ctx.setOutput(0, type, Shape::unknownRank());
    return;
  }
  if (data.rank() == 0) ctx.fail("the data must have rank >= 1");
  size_t axis = size_t(ctx.normalizeAxis(ctx.layer().attrInt("axis", 0), int64_t(data.rank())));
  std::vector<Dim> out(data.dims().begin(), data.dims().begin() + ptrdiff_t(axis));
  out.insert(out.end(), indices.dims().begin(), indices.dims().end());
  out.insert(out.end(), data.dims().begin() + ptrdiff_t(axis) + 1, data.dims().end());
  ctx.setOutput(0, type, Shape(std::move(out)));
}

void inferGatherElements(InferenceContext& ctx) {
  requireIntegerIndices(ctx, 1, "indices");
  const Shape &data = ctx.inputShape(0), &indices = ctx.inputShape(1);
  if (data.hasRank() && indices.hasRank()) {
    if (data.rank() != indices.rank() || data.rank() == 0)
      ctx.fail("data " + data.toString() + " and indices " + indices.toString() + " must have the same rank >= 1");
    ctx.normalizeAxis(ctx.layer().attrInt("axis", 0), int64_t(data.rank()));
  }
  ctx.setOutput(0, ctx.inputType(0), indices);
}

void inferGatherND(InferenceContext& ctx) {
  if (ctx.inputType(1) != DataType::kInt64) ctx.fail("indices must be int64");
  const Shape &data = ctx.inputShape(0), &indices = ctx.inputShape(1);
  DataType type = ctx.inputType(0);
  int64_t batchDims = ctx.layer().attrInt("batch_dims", 0);
  if (!data.hasRank() || !indices.hasRank() || indices.rank() == 0 || !indices[indices.rank() - 1].isKnown()) {
    ctx.setOutput(0, type, Shape::unknownRank());
    return;
  }
  int64_t tuple = indices[indices.rank() - 1].value();
  if (batchDims < 0 || batchDims >= int64_t(std::min(data.rank(), indices.rank())))
    ctx.fail("batch_dims " + std::to_string(batchDims) + " must be smaller than the ranks of data " + data.toString() +
             " and indices " + indices.toString());
  if (tuple < 1 || batchDims + tuple > int64_t(data.rank()))
    ctx.fail("the last dim of indices " + indices.toString() + " (" + std::to_string(tuple) +
             ") must be in [1, rank(data) - batch_dims] for data " + data.toString());
  std::vector<Dim> out(indices.dims().begin(), indices.dims().end() - 1);
  out.insert(out.end(), data.dims().begin() + ptrdiff_t(batchDims + tuple), data.dims().end());
  ctx.setOutput(0, type, Shape(std::move(out)));
}

void checkReduction(const InferenceContext& ctx) {
  std::string reduction = ctx.layer().attrString("reduction", "none");
  if (reduction != "none" && reduction != "add" && reduction != "mul" && reduction != "max" && reduction != "min")
    ctx.fail("reduction '" + reduction + "' is not one of none, add, mul, max, min");
}

void inferScatterElements(InferenceContext& ctx) {
  requireIntegerIndices(ctx, 1, "indices");
  checkReduction(ctx);
  const Shape &data = ctx.inputShape(0), &indices = ctx.inputShape(1), &updates = ctx.inputShape(2);
  if (ctx.inputType(2) != ctx.inputType(0)) ctx.fail("updates must have the data's type");
  if (indices.hasRank() && updates.hasRank() && !(indices == updates) && indices.isFullyKnown() && updates.isFullyKnown())
    ctx.fail("indices " + indices.toString() + " and updates " + updates.toString() + " must have the same shape");
  if (data.hasRank()) {
    if (indices.hasRank() && indices.rank() != data.rank())
      ctx.fail("indices " + indices.toString() + " must have the rank of data " + data.toString());
    ctx.normalizeAxis(ctx.layer().attrInt("axis", 0), int64_t(data.rank()));
  }
  inferSameAsInput(ctx);
}

void inferScatterND(InferenceContext& ctx) {
  if (ctx.inputType(1) != DataType::kInt64) ctx.fail("indices must be int64");
  checkReduction(ctx);
  if (ctx.inputType(2) != ctx.inputType(0)) ctx.fail("updates must have the data's type");
  inferSameAsInput(ctx);
}

void inferOneHot(InferenceContext& ctx) {
  const Shape& indices = ctx.inputShape(0);
  DataType type = ctx.inputType(2);
  if (const HostTensor* values = ctx.inputValue(2); values && values->elementCount() != 2)
    ctx.fail("values must hold two elements [off, on], got shape " + dimsToString(values->dims()));
  if (!indices.hasRank()) {
    ctx.setOutput(0, type, Shape::unknownRank());
    return;
  }
  int64_t outRank = int64_t(indices.rank()) + 1;
  int64_t axis = ctx.normalizeAxis(ctx.layer().attrInt("axis", -1), outRank);
  Dim depth = Dim::unknown();
  if (const HostTensor* given = ctx.inputValue(1)) {
    if (given->elementCount() != 1) ctx.fail("depth must be a scalar, got shape " + dimsToString(given->dims()));
    int64_t d = int64_t(given->toDoubleVector()[0]);
    if (d < 1) ctx.fail("depth must be >= 1, got " + std::to_string(d));
    depth = d;
  }
  std::vector<Dim> out = indices.dims();
  out.insert(out.begin() + axis, depth);
  ctx.setOutput(0, type, Shape(std::move(out)));
}

void inferCompress(InferenceContext& ctx) {
  if (ctx.inputType(1) != DataType::kBool) ctx.fail("condition must be bool");
  const Shape& data = ctx.inputShape(0);
  DataType type = ctx.inputType(0);
  // The output length is the number of true conditions that fall inside the axis.
  Dim selected = Dim::unknown();
  const HostTensor* condition = ctx.inputValue(1);
  bool hasAxis = ctx.layer().hasAttr("axis");
  auto countWithin = [&](int64_t length) {
    const bool* c = condition->data<bool>();
    int64_t n = 0;
    for (int64_t i = 0; i < std::min(length, condition->elementCount()); ++i) n += c[i];
    return Dim(n);
  };
  if (!hasAxis) {
    auto total = data.elementCount();
    if (condition && total) selected = countWithin(*total);
    ctx.setOutput(0, type, Shape{selected});
    return;
  }
  if (!data.hasRank()) {
    ctx.setOutput(0, type, Shape::unknownRank());
    return;
  }
  size_t axis = size_t(ctx.normalizeAxis(ctx.layer().attrInt("axis"), int64_t(data.rank())));
  if (condition && data[axis].isKnown()) selected = countWithin(data[axis].value());
  Shape out = data;
  out[axis] = selected;
  ctx.setOutput(0, type, std::move(out));
}

void inferNonZero(InferenceContext& ctx) {  // a scalar counts as rank 1
  const Shape& in = ctx.inputShape(0);
  ctx.setOutput(0, DataType::kInt64, in.hasRank() ? Shape{Dim(int64_t(std::max<size_t>(1, in.rank()))), Dim::unknown()}
                                                  : Shape{Dim::unknown(), Dim::unknown()});
}

void inferUnique(InferenceContext& ctx) {
  const Shape& in = ctx.inputShape(0);
  DataType type = ctx.inputType(0);
  Dim inputSlices = Dim::unknown();
  if (!ctx.layer().hasAttr("axis")) {
    if (auto n = in.elementCount()) inputSlices = *n;
    ctx.setOutput(0, type, Shape{Dim::unknown()});
  } else if (in.hasRank()) {
    size_t axis = size_t(ctx.normalizeAxis(ctx.layer().attrInt("axis"), int64_t(in.rank())));
    inputSlices = in[axis];
    Shape out = in;
    out[axis] = Dim::unknown();
    ctx.setOutput(0, type, std::move(out));
  } else {
    ctx.setOutput(0, type, Shape::unknownRank());
  }
  ctx.setOutput(1, DataType::kInt64, Shape{Dim::unknown()});
  ctx.setOutput(2, DataType::kInt64, Shape{inputSlices});
  ctx.setOutput(3, DataType::kInt64, Shape{Dim::unknown()});
}

}  // namespace

void registerIndexingSchemas(OpSchemaRegistry& registry) {
  registry.add({"", "Gather", inferGather, 2, 2});
  registry.add({"", "GatherElements", inferGatherElements, 2, 2});
  registry.add({"", "GatherND", inferGatherND, 2, 2});
  registry.add({"", "Scatter", inferScatterElements, 3, 3});
  registry.add({"", "ScatterElements", inferScatterElements, 3, 3});
  registry.add({"", "ScatterND", inferScatterND, 3, 3});
  registry.add({"", "OneHot", inferOneHot, 3, 3});
  registry.add({"", "Compress", inferCompress, 2, 2});
  registry.add({"", "NonZero", inferNonZero, 1, 1});
  registry.add({"", "Unique", inferUnique, 1, 1});
}

}  // namespace kiln::tensor_shape
