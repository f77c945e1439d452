// Type and shape inference of the collective layers (semantics: collective.h), and the reduction
// vocabulary of kiln/communicator.h.
#include "collective.h"

#include <kiln/communicator.h>
#include <kiln/error.h>

#include "fused.h"
#include "op_families.h"
#include "op_schema.h"

#include <set>

namespace kiln {

std::string_view toString(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "sum";
    case ReduceOp::kMax:
      return "max";
    case ReduceOp::kMin:
      return "min";
    case ReduceOp::kProd:
      return "prod";
  }
  return "?";
}

std::optional<ReduceOp> parseReduceOp(std::string_view name) {
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kMin, ReduceOp::kProd})
    if (toString(op) == name) return op;
  return std::nullopt;
}

bool reducible(DataType type) {
  switch (type) {
    case DataType::kFloat32:
    case DataType::kFloat16:
    case DataType::kBFloat16:
    case DataType::kFloat64:
    case DataType::kInt32:
    case DataType::kInt64:
      return true;
    default:
      return false;
  }
}

namespace collective {

bool isCollective(const Layer& layer) {
  static const std::set<std::string> ops = {kAllReduce, kAllGather, kReduceScatter, kBroadcast,
                                            kReduce,    kAllToAll,  kGather,        kScatter};
  return layer.domain == fused::kDomain && ops.count(layer.opType) != 0;
}

int64_t worldSizeOf(const Layer& layer) { return layer.attrInt(kWorldSize, 0); }

void checkWorldSizes(const Network& network) {
  const Layer* first = nullptr;
  for (const Layer& layer : network.layers()) {
    if (!isCollective(layer)) continue;
    if (!first) first = &layer;
    if (worldSizeOf(layer) != worldSizeOf(*first))
      throw Error(ErrorCode::kInvalidModel, layer.describe() + " has world_size " + std::to_string(worldSizeOf(layer)) +
                                                " but " + first->describe() + " has " +
                                                std::to_string(worldSizeOf(*first)) +
                                                "; an engine's collectives must all be split for one world size");
  }
}

AxisView axisViewOf(const Layer& layer, const std::vector<int64_t>& dims) {
  if (dims.empty())
    throw Error(ErrorCode::kRuntimeError,
                layer.describe() + ": input 0 must have rank 1 or more to split along an axis");
  const size_t axis = size_t(normalizeAxis(layer, layer.attrInt(kAxis, 0), int64_t(dims.size())));
  AxisView v;
  for (size_t d = 0; d < axis; ++d) v.outer *= dims[d];
  v.rows = dims[axis];
  for (size_t d = axis + 1; d < dims.size(); ++d) v.inner *= dims[d];
  return v;
}

int64_t rowsPerRank(const Layer& layer, int64_t axisRows, int64_t ranks) {
  if (axisRows % ranks != 0)
    throw Error(ErrorCode::kRuntimeError, layer.describe() + ": input 0's dim along axis is " +
                                              std::to_string(axisRows) + ", which world_size " + std::to_string(ranks) +
                                              " does not divide");
  return axisRows / ranks;
}

}  // namespace collective

namespace {

using namespace collective;

int64_t worldSize(const InferenceContext& ctx) {
  if (!ctx.layer().hasAttr(kWorldSize))
    ctx.fail("attribute world_size (the number of ranks the model was split for) is required");
  const int64_t size = ctx.layer().attrInt(kWorldSize);
  if (size < 1) ctx.fail("attribute world_size must be 1 or more, got " + std::to_string(size));
  return size;
}

// The input's type, checked: reductions take reducible types, the others any fixed-size type.
DataType checkedType(const InferenceContext& ctx, bool reduces) {
  const DataType type = ctx.inputType(0);
  if (ctx.input(0).kind != ValueKind::kTensor || byteSize(type) == 0)
    ctx.fail("input 0 must be a tensor of a fixed-size type, got " + std::string(toString(type)));
  if (reduces && !reducible(type))
    ctx.fail("reductions take float32, float16, bfloat16, float64, int32 or int64, not " + std::string(toString(type)));
  if (reduces) {
    const std::string name = ctx.layer().attrString(kReduction, "sum");
    if (!parseReduceOp(name)) ctx.fail("attribute reduction must be sum, max, min or prod, got '" + name + "'");
  }
  return type;
}

void checkRoot(const InferenceContext& ctx, int64_t size) {
  const int64_t root = ctx.layer().attrInt(kRoot, 0);
  if (root < 0 || root >= size)
    ctx.fail("attribute root " + std::to_string(root) + " is not a rank of world_size " + std::to_string(size));
}

// The input's shape with dim `axis` (attribute) mapped by `resize`; unknown rank stays unknown.
template <class Resize>
void inferAlongAxis(InferenceContext& ctx, DataType type, Resize resize) {
  const Shape& in = ctx.inputShape(0);
  if (!in.hasRank()) return ctx.setOutput(0, type, Shape::unknownRank());
  if (in.rank() == 0) ctx.fail("input 0 must have rank 1 or more to split along an axis");
  const int64_t axis = ctx.normalizeAxis(ctx.layer().attrInt(kAxis, 0), int64_t(in.rank()));
  std::vector<Dim> dims = in.dims();
  dims[size_t(axis)] = resize(in[size_t(axis)]);
  ctx.setOutput(0, type, Shape(std::move(dims)));
}

// A dim that must split into `size` equal slices.
void checkDivisible(const InferenceContext& ctx, const Dim& dim, int64_t size) {
  if (dim.isKnown() && dim.value() % size != 0)
    ctx.fail("input 0's dim along axis is " + std::to_string(dim.value()) + ", which world_size " +
             std::to_string(size) + " does not divide");
}

void inferAllReduce(InferenceContext& ctx) {
  worldSize(ctx);
  ctx.setOutput(0, checkedType(ctx, true), ctx.inputShape(0));
}

void inferAllGather(InferenceContext& ctx) {
  const int64_t size = worldSize(ctx);
  inferAlongAxis(ctx, checkedType(ctx, false),
                 [&](const Dim& d) { return d.isKnown() ? Dim(d.value() * size) : Dim(); });
}

// Y[axis] = X[axis] / size, which must divide it.
void inferSlicedAxis(InferenceContext& ctx, DataType type, int64_t size) {
  inferAlongAxis(ctx, type, [&](const Dim& d) {
    checkDivisible(ctx, d, size);
    return d.isKnown() ? Dim(d.value() / size) : Dim();
  });
}

void inferReduceScatter(InferenceContext& ctx) { inferSlicedAxis(ctx, checkedType(ctx, true), worldSize(ctx)); }

void inferGather(InferenceContext& ctx) {
  checkRoot(ctx, worldSize(ctx));
  inferAllGather(ctx);
}

void inferScatter(InferenceContext& ctx) {
  const int64_t size = worldSize(ctx);
  checkRoot(ctx, size);
  inferSlicedAxis(ctx, checkedType(ctx, false), size);
}

void inferBroadcast(InferenceContext& ctx) {
  checkRoot(ctx, worldSize(ctx));
  ctx.setOutput(0, checkedType(ctx, false), ctx.inputShape(0));
}

void inferReduce(InferenceContext& ctx) {
  checkRoot(ctx, worldSize(ctx));
  ctx.setOutput(0, checkedType(ctx, true), ctx.inputShape(0));
}

void inferAllToAll(InferenceContext& ctx) {
  const int64_t size = worldSize(ctx);
  inferAlongAxis(ctx, checkedType(ctx, false), [&](const Dim& d) {
    checkDivisible(ctx, d, size);
    return d;
  });
}

}  // namespace

void registerCollectiveSchemas(OpSchemaRegistry& registry) {
  registry.add({fused::kDomain, kAllReduce, inferAllReduce, 1, 1});
  registry.add({fused::kDomain, kAllGather, inferAllGather, 1, 1});
  registry.add({fused::kDomain, kReduceScatter, inferReduceScatter, 1, 1});
  registry.add({fused::kDomain, kBroadcast, inferBroadcast, 1, 1});
  registry.add({fused::kDomain, kReduce, inferReduce, 1, 1});
  registry.add({fused::kDomain, kAllToAll, inferAllToAll, 1, 1});
  registry.add({fused::kDomain, kGather, inferGather, 1, 1});
  registry.add({fused::kDomain, kScatter, inferScatter, 1, 1});
}

}  // namespace kiln
