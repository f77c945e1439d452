// Type and shape inference for the control_sequence op family: sequences and optionals here,
// If / Loop / Scan / SequenceMap in control_sequence_flow.cpp.
#include "control_sequence.h"

#include "data_type_attr.h"
#include "op_families.h"

#include <algorithm>

namespace kiln {

Shape mergeShapes(const Shape& a, const Shape& b) {
  if (!a.hasRank() || !b.hasRank() || a.rank() != b.rank()) return Shape::unknownRank();
  std::vector<Dim> dims(a.rank());
  for (size_t i = 0; i < a.rank(); ++i) dims[i] = a[i] == b[i] ? a[i] : Dim::unknown();
  return Shape(std::move(dims));
}

namespace {

// A value whose kind is really known: a typed tensor, or any sequence / optional. Values that
// inference could not type (undefined dtype) are not checked.
bool isKnownTensor(const Tensor& t) { return t.kind == ValueKind::kTensor && t.dtype != DataType::kUndefined; }

void requireSequence(const InferenceContext& ctx, size_t i) {
  const Tensor& t = ctx.input(i);
  if (isKnownTensor(t) || t.kind == ValueKind::kOptionalTensor || t.kind == ValueKind::kOptionalSequence)
    ctx.fail("input " + std::to_string(i) + " ('" + t.name + "') must be a sequence, got a " +
             std::string(toString(t.kind)));
}

void requireTensor(const InferenceContext& ctx, size_t i) {
  const Tensor& t = ctx.input(i);
  if (t.kind != ValueKind::kTensor)
    ctx.fail("input " + std::to_string(i) + " ('" + t.name + "') must be a tensor, got a " +
             std::string(toString(t.kind)));
}

// Optional integer scalar (position, split) inputs.
void requireIndexInput(const InferenceContext& ctx, size_t i, const char* what) {
  if (!ctx.hasInput(i)) return;
  requireTensor(ctx, i);
  DataType t = ctx.inputType(i);
  if (t != DataType::kUndefined && t != DataType::kInt32 && t != DataType::kInt64)
    ctx.fail(std::string(what) + " (input " + std::to_string(i) + ") must be int32 or int64, got " +
             std::string(toString(t)));
}

void inferSequenceEmpty(InferenceContext& ctx) {
  ctx.setOutput(0, onnxDataTypeAttr(ctx, "dtype", DataType::kFloat32), Shape::unknownRank(), ValueKind::kSequence);
}

void inferSequenceConstruct(InferenceContext& ctx) {
  requireTensor(ctx, 0);
  DataType dtype = ctx.inputType(0);
  Shape shape = ctx.inputShape(0);
  for (size_t i = 1; i < ctx.inputCount(); ++i) {
    requireTensor(ctx, i);
    if (ctx.inputType(i) != dtype)
      ctx.fail("all inputs must have one element type: input 0 is " + std::string(toString(dtype)) + ", input " +
               std::to_string(i) + " is " + std::string(toString(ctx.inputType(i))));
    shape = mergeShapes(shape, ctx.inputShape(i));
  }
  ctx.setOutput(0, dtype, shape, ValueKind::kSequence);
}

void inferSequenceAt(InferenceContext& ctx) {
  requireSequence(ctx, 0);
  requireIndexInput(ctx, 1, "position");
  ctx.setOutput(0, ctx.inputType(0), ctx.inputShape(0));
}

void inferSequenceInsert(InferenceContext& ctx) {
  requireSequence(ctx, 0);
  requireTensor(ctx, 1);
  requireIndexInput(ctx, 2, "position");
  const Tensor& sequence = ctx.input(0);
  const Tensor& item = ctx.input(1);
  if (sequence.dtype == DataType::kUndefined) {  // e.g. an empty sequence at run time
    ctx.setOutput(0, item.dtype, item.shape, ValueKind::kSequence);
    return;
  }
  if (item.dtype != DataType::kUndefined && item.dtype != sequence.dtype)
    ctx.fail("the inserted tensor is " + std::string(toString(item.dtype)) + " but the sequence holds " +
             std::string(toString(sequence.dtype)) + "; cast it first");
  ctx.setOutput(0, sequence.dtype, mergeShapes(sequence.shape, item.shape), ValueKind::kSequence);
}

void inferSequenceErase(InferenceContext& ctx) {
  requireSequence(ctx, 0);
  requireIndexInput(ctx, 1, "position");
  ctx.setOutput(0, ctx.inputType(0), ctx.inputShape(0), ValueKind::kSequence);
}

void inferSequenceLength(InferenceContext& ctx) {
  requireSequence(ctx, 0);
  ctx.setOutput(0, DataType::kInt64, Shape{});
}

void inferSplitToSequence(InferenceContext& ctx) {
  requireTensor(ctx, 0);
  requireIndexInput(ctx, 1, "split");
  const Shape& in = ctx.inputShape(0);
  if (!in.hasRank()) {
    ctx.setOutput(0, ctx.inputType(0), Shape::unknownRank(), ValueKind::kSequence);
    return;
  }
  if (in.rank() == 0) ctx.fail("the input must have rank 1 or more to be split");
  int64_t axis = ctx.normalizeAxis(ctx.layer().attrInt("axis", 0), int64_t(in.rank()));
  std::vector<Dim> dims = in.dims();
  const HostTensor* split = ctx.inputValue(1);
  if (!ctx.hasInput(1)) {
    if (ctx.layer().attrInt("keepdims", 1) == 0) dims.erase(dims.begin() + axis);
    else dims[size_t(axis)] = 1;
  } else if (split && split->rank() > 1) {
    ctx.fail("split must be a scalar or a 1-D tensor, got shape " + dimsToString(split->dims()));
  } else {
    // Equal pieces keep a known size; otherwise the split axis varies between items.
    std::vector<int64_t> sizes = split ? split->toInt64Vector() : std::vector<int64_t>{};
    bool equal = !sizes.empty() && std::all_of(sizes.begin(), sizes.end(), [&](int64_t s) { return s == sizes[0]; });
    const Dim& axisDim = in[size_t(axis)];
    bool evenScalar = split && split->rank() == 0 && axisDim.isKnown() && sizes[0] > 0 && axisDim.value() % sizes[0] == 0;
    dims[size_t(axis)] = equal && (split->rank() == 1 || evenScalar) ? Dim(sizes[0]) : Dim::unknown();
  }
  ctx.setOutput(0, ctx.inputType(0), Shape(std::move(dims)), ValueKind::kSequence);
}

void inferConcatFromSequence(InferenceContext& ctx) {
  requireSequence(ctx, 0);
  if (!ctx.layer().hasAttr("axis")) ctx.fail("attribute 'axis' is required");
  bool newAxis = ctx.layer().attrInt("new_axis", 0) != 0;
  const Shape& item = ctx.inputShape(0);
  if (!item.hasRank()) {
    ctx.setOutput(0, ctx.inputType(0), Shape::unknownRank());
    return;
  }
  int64_t rank = int64_t(item.rank()) + (newAxis ? 1 : 0);
  int64_t axis = ctx.normalizeAxis(ctx.layer().attrInt("axis"), rank);
  std::vector<Dim> dims = item.dims();
  if (newAxis) dims.insert(dims.begin() + axis, Dim::unknown());
  else dims[size_t(axis)] = Dim::unknown();  // the sum over the items, known only at run time
  ctx.setOutput(0, ctx.inputType(0), Shape(std::move(dims)));
}

// Optional's `type` attribute arrives as "tensor(float32)" or "seq(tensor(float32))".
void inferOptional(InferenceContext& ctx) {
  if (ctx.hasInput(0)) {
    const Tensor& in = ctx.input(0);
    if (in.kind == ValueKind::kOptionalTensor || in.kind == ValueKind::kOptionalSequence)
      ctx.fail("the input is already an optional; optionals do not nest");
    ValueKind kind = in.kind == ValueKind::kSequence ? ValueKind::kOptionalSequence : ValueKind::kOptionalTensor;
    ctx.setOutput(0, in.dtype, in.shape, kind);
    return;
  }
  if (!ctx.layer().hasAttr("type")) ctx.fail("an Optional without input needs the 'type' attribute");
  std::string type = ctx.layer().attrString("type");
  ValueKind kind = ValueKind::kOptionalTensor;
  if (type.rfind("seq(", 0) == 0 && type.back() == ')') {
    kind = ValueKind::kOptionalSequence;
    type = type.substr(4, type.size() - 5);
  }
  std::optional<DataType> dtype;
  if (type.rfind("tensor(", 0) == 0 && type.back() == ')') dtype = parseDataType(type.substr(7, type.size() - 8));
  if (!dtype) ctx.fail("attribute 'type' must be a tensor or a sequence of tensors, got '" + ctx.layer().attrString("type") + "'");
  ctx.setOutput(0, *dtype, Shape::unknownRank(), kind);
}

void inferOptionalHasElement(InferenceContext& ctx) {
  if (ctx.hasInput(0) && ctx.opset() < 18 && isKnownTensor(ctx.input(0)))
    ctx.fail("the input must be an optional before opset 18, got a tensor");
  ctx.setOutput(0, DataType::kBool, Shape{});
}

void inferOptionalGetElement(InferenceContext& ctx) {
  const Tensor& in = ctx.input(0);
  if (ctx.opset() < 18 && isKnownTensor(in)) ctx.fail("the input must be an optional before opset 18, got a tensor");
  bool sequence = in.kind == ValueKind::kOptionalSequence || in.kind == ValueKind::kSequence;
  ctx.setOutput(0, in.dtype, in.shape, sequence ? ValueKind::kSequence : ValueKind::kTensor);
}

}  // namespace

void registerSequenceSchemas(OpSchemaRegistry& registry) {
  registry.add({"", "SequenceEmpty", inferSequenceEmpty, 0, 0});
  registry.add({"", "SequenceConstruct", inferSequenceConstruct, 1, -1});
  registry.add({"", "SequenceAt", inferSequenceAt, 2, 2});
  registry.add({"", "SequenceInsert", inferSequenceInsert, 2, 3});
  registry.add({"", "SequenceErase", inferSequenceErase, 1, 2});
  registry.add({"", "SequenceLength", inferSequenceLength, 1, 1});
  registry.add({"", "SplitToSequence", inferSplitToSequence, 1, 2});
  registry.add({"", "ConcatFromSequence", inferConcatFromSequence, 1, 1});
  registry.add({"", "Optional", inferOptional, 0, 1});
  registry.add({"", "OptionalHasElement", inferOptionalHasElement, 0, 1});
  registry.add({"", "OptionalGetElement", inferOptionalGetElement, 1, 1});
}

void registerControlSequenceSchemas(OpSchemaRegistry& registry) {
  registerSequenceSchemas(registry);
  registerControlFlowSchemas(registry);
}

}  // namespace kiln
