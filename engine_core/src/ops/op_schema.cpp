#include "op_schema.h"

#include "op_families.h"

namespace kiln {

InferenceContext::InferenceContext(const Layer& layer, std::vector<const Tensor*> inputs,
                                   std::vector<const HostTensor*> inputValues, Network::ScopeLookup scope)
    : InferenceContext(
          layer, std::move(inputs),
          [values = std::move(inputValues)](size_t i) { return i < values.size() ? values[i] : nullptr; },
          std::move(scope)) {}

InferenceContext::InferenceContext(const Layer& layer, std::vector<const Tensor*> inputs, ValueProvider values,
                                   Network::ScopeLookup scope)
    : layer_(layer),
      inputs_(std::move(inputs)),
      values_(std::move(values)),
      requested_(inputs_.size(), false),
      scope_(std::move(scope)) {
  outputs_.resize(layer.outputs.size());
  for (size_t i = 0; i < outputs_.size(); ++i) outputs_[i].name = layer.outputs[i];
}

const HostTensor* InferenceContext::inputValue(size_t i) const {
  if (i >= inputs_.size()) return nullptr;
  requested_[i] = true;
  return values_ ? values_(i) : nullptr;
}

const Tensor& InferenceContext::input(size_t i) const {
  if (!hasInput(i)) fail("input " + std::to_string(i) + " is required but missing");
  return *inputs_[i];
}

void InferenceContext::setOutput(size_t i, DataType dtype, Shape shape, ValueKind kind) {
  if (i >= outputs_.size()) return;  // optional output not requested
  outputs_[i].dtype = dtype;
  outputs_[i].shape = std::move(shape);
  outputs_[i].kind = kind;
}

void InferenceContext::fail(const std::string& why) const {
  throw Error(ErrorCode::kInvalidModel, layer_.describe() + ": " + why);
}

int64_t InferenceContext::normalizeAxis(int64_t axis, int64_t rank, const char* what) const {
  return kiln::normalizeAxis(layer_, axis, rank, what);
}

int64_t normalizeAxis(const Layer& layer, int64_t axis, int64_t rank, const char* what) {
  if (axis < -rank || axis >= rank)
    throw Error(ErrorCode::kInvalidModel, layer.describe() + ": " + what + " " + std::to_string(axis) +
                                              " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

const OpSchemaRegistry& OpSchemaRegistry::instance() {
  static const OpSchemaRegistry registry = [] {
    OpSchemaRegistry r;
#define KILN_REGISTER_FAMILY(Family) register##Family##Schemas(r);
    KILN_OP_FAMILIES(KILN_REGISTER_FAMILY)
#undef KILN_REGISTER_FAMILY
    return r;
  }();
  return registry;
}

Shape broadcastShapes(const InferenceContext& ctx, const Shape& a, const Shape& b) {
  if (!a.hasRank() || !b.hasRank()) return Shape::unknownRank();
  size_t rank = std::max(a.rank(), b.rank());
  std::vector<Dim> dims(rank);
  for (size_t i = 0; i < rank; ++i) {
    const Dim* da = i + a.rank() >= rank ? &a[i + a.rank() - rank] : nullptr;
    const Dim* db = i + b.rank() >= rank ? &b[i + b.rank() - rank] : nullptr;
    if (!da) { dims[i] = *db; continue; }
    if (!db) { dims[i] = *da; continue; }
    if (da->isKnown() && db->isKnown()) {
      int64_t x = da->value(), y = db->value();
      if (x != y && x != 1 && y != 1)
        ctx.fail("shapes " + a.toString() + " and " + b.toString() + " cannot be broadcast (dimension " +
                 std::to_string(i) + ": " + std::to_string(x) + " vs " + std::to_string(y) + ")");
      dims[i] = x == 1 ? y : x;
    } else if (da->isKnown() && da->value() == 1) {
      dims[i] = *db;
    } else if (db->isKnown() && db->value() == 1) {
      dims[i] = *da;
    } else if (da->isKnown()) {
      dims[i] = *da;  // the other must be 1 or equal
    } else if (db->isKnown()) {
      dims[i] = *db;
    } else if (*da == *db) {
      dims[i] = *da;
    } else {
      dims[i] = Dim::unknown();
    }
  }
  return Shape(std::move(dims));
}

void inferSameAsInput(InferenceContext& ctx) {
  const Tensor& in = ctx.input(0);
  ctx.setOutput(0, in.dtype, in.shape, in.kind);
}

namespace {
Shape broadcastAll(const InferenceContext& ctx) {
  Shape s;
  bool first = true;
  for (size_t i = 0; i < ctx.inputCount(); ++i) {
    if (!ctx.hasInput(i)) continue;
    s = first ? ctx.inputShape(i) : broadcastShapes(ctx, s, ctx.inputShape(i));
    first = false;
  }
  return s;
}
}  // namespace

void inferBroadcastSameType(InferenceContext& ctx) {
  ctx.setOutput(0, ctx.inputType(0), broadcastAll(ctx));
}

void inferBroadcastBool(InferenceContext& ctx) { ctx.setOutput(0, DataType::kBool, broadcastAll(ctx)); }

}  // namespace kiln
