// Type and shape inference for the reduction_softmax family: Reduce* and ArgMax/ArgMin here;
// softmax-like ops, TopK and CumSum in reduction_softmax_normalize.cpp; losses in
// reduction_softmax_loss.cpp.
#include "reduction_softmax.h"

#include "op_families.h"
#include "op_schema.h"

#include <algorithm>

namespace kiln {

void registerNormalizeSchemas(OpSchemaRegistry& registry);
void registerLossSchemas(OpSchemaRegistry& registry);

namespace {

[[noreturn]] void failLayer(const Layer& layer, const std::string& why) {
  throw Error(ErrorCode::kInvalidModel, layer.describe() + ": " + why);
}

bool axesFromInput(const Layer& layer) {
  return layer.opsetVersion >= (layer.opType == "ReduceSum" ? 13 : 18);
}

bool isNumeric(DataType t) { return (isFloatingPoint(t) || isInteger(t)) && t != DataType::kFloat8E4M3 &&
                                    t != DataType::kFloat8E5M2; }

void inferReduce(InferenceContext& ctx) {
  const Layer& layer = ctx.layer();
  const DataType type = ctx.inputType(0);
  if (!isNumeric(type)) ctx.fail("input has type " + std::string(toString(type)) + "; expected a numeric type");
  if (ctx.hasInput(1)) {
    if (!axesFromInput(layer))
      ctx.fail("axes is an attribute at opset " + std::to_string(layer.opsetVersion) + ", not an input");
    if (ctx.inputType(1) != DataType::kInt64) ctx.fail("axes input must be int64");
  }
  const Shape& x = ctx.inputShape(0);
  const bool keepDims = layer.attrInt("keepdims", 1) != 0;
  if (!x.hasRank()) return ctx.setOutput(0, type, Shape::unknownRank());
  const ReduceAxes axes = resolveReduceAxes(layer, int64_t(x.rank()), ctx.inputValue(1));
  if (!axes.known)
    return ctx.setOutput(0, type, keepDims ? Shape(std::vector<Dim>(x.rank(), Dim::unknown())) : Shape::unknownRank());
  if (axes.noop) return ctx.setOutput(0, type, x);
  std::vector<Dim> dims;
  for (size_t d = 0; d < x.rank(); ++d) {
    if (!axes.reduced[d]) dims.push_back(x[d]);
    else if (keepDims) dims.push_back(1);
  }
  ctx.setOutput(0, type, Shape(std::move(dims)));
}

void inferArgExtreme(InferenceContext& ctx) {
  const DataType type = ctx.inputType(0);
  if (!isNumeric(type)) ctx.fail("input has type " + std::string(toString(type)) + "; expected a numeric type");
  const Shape& x = ctx.inputShape(0);
  if (!x.hasRank()) return ctx.setOutput(0, DataType::kInt64, Shape::unknownRank());
  if (x.rank() == 0) ctx.fail("input must have rank >= 1");
  const int64_t axis = ctx.normalizeAxis(ctx.layer().attrInt("axis", 0), int64_t(x.rank()));
  if (x[axis].isKnown() && x[axis].value() == 0) ctx.fail("axis " + std::to_string(axis) + " has size 0");
  std::vector<Dim> dims = x.dims();
  if (ctx.layer().attrInt("keepdims", 1) != 0) dims[axis] = 1;
  else dims.erase(dims.begin() + axis);
  ctx.setOutput(0, DataType::kInt64, Shape(std::move(dims)));
}

}  // namespace

ReduceAxes resolveReduceAxes(const Layer& layer, int64_t rank, const HostTensor* axesValue) {
  ReduceAxes result;
  std::vector<int64_t> axes;
  if (axesFromInput(layer)) {
    if (layer.hasInput(1)) {
      if (!axesValue) {
        result.known = false;
        return result;
      }
      axes = axesValue->toInt64Vector();
    }
  } else {
    axes = layer.attrInts("axes");
  }
  result.reduced.assign(size_t(rank), axes.empty());
  if (axes.empty()) {
    result.noop = axesFromInput(layer) && layer.attrInt("noop_with_empty_axes", 0) != 0;
    return result;
  }
  for (int64_t axis : axes) {
    if (axis < -rank || axis >= rank)
      failLayer(layer, "axis " + std::to_string(axis) + " is out of range for an input of rank " + std::to_string(rank));
    const int64_t a = axis < 0 ? axis + rank : axis;
    if (result.reduced[a]) failLayer(layer, "axis " + std::to_string(axis) + " is listed twice in axes");
    result.reduced[a] = true;
  }
  return result;
}

AxisSplit splitAtAxis(const std::vector<int64_t>& dims, int64_t axis, bool flattenTail) {
  AxisSplit s;
  for (int64_t d = 0; d < int64_t(dims.size()); ++d) {
    if (d < axis) s.outer *= dims[d];
    else if (d == axis || flattenTail) s.n *= dims[d];
    else s.inner *= dims[d];
  }
  return s;
}

int64_t softmaxAxisAttr(const Layer& layer) { return layer.attrInt("axis", softmaxFlattens(layer) ? 1 : -1); }
bool softmaxFlattens(const Layer& layer) { return layer.opsetVersion < 13; }

void registerReductionSoftmaxSchemas(OpSchemaRegistry& registry) {
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                         "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"})
    registry.add({"", op, inferReduce, 1, 2});
  registry.add({"", "ArgMax", inferArgExtreme, 1, 1});
  registry.add({"", "ArgMin", inferArgExtreme, 1, 1});
  registerNormalizeSchemas(registry);
  registerLossSchemas(registry);
}

}  // namespace kiln
