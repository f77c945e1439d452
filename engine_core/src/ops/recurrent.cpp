// Type and shape inference for the recurrent op family: RNN, GRU, LSTM.
#include "recurrent.h"

#include "op_families.h"
#include "op_schema.h"

namespace kiln {

using kernels::RecurrentCell;

RecurrentAttributes readRecurrentAttributes(const Layer& layer, RecurrentCell cell) {
  auto fail = [&](const std::string& why) { throw Error(ErrorCode::kInvalidModel, layer.describe() + ": " + why); };
  RecurrentAttributes a;
  a.cell = cell;
  std::string direction = layer.attrString("direction", "forward");
  if (direction == "bidirectional") a.directions = 2;
  else if (direction == "reverse") a.reverse = true;
  else if (direction != "forward")
    fail("direction must be forward, reverse or bidirectional, got '" + direction + "'");
  a.hiddenSize = layer.attrInt("hidden_size", -1);
  if (layer.hasAttr("hidden_size") && a.hiddenSize <= 0)
    fail("hidden_size must be positive, got " + std::to_string(a.hiddenSize));
  int64_t layout = layer.attrInt("layout", 0);
  if (layout != 0 && layout != 1) fail("layout must be 0 or 1, got " + std::to_string(layout));
  a.batchMajor = layout == 1;
  a.clip = layer.attrFloat("clip", 0.0f);
  if (layer.hasAttr("clip") && a.clip <= 0.0f) fail("clip must be positive, got " + std::to_string(a.clip));
  a.linearBeforeReset = layer.attrInt("linear_before_reset", 0) != 0;
  a.inputForget = layer.attrInt("input_forget", 0) != 0;

  static const std::vector<std::string> kRnnDefaults{"Tanh"}, kGruDefaults{"Sigmoid", "Tanh"},
      kLstmDefaults{"Sigmoid", "Tanh", "Tanh"};
  const auto& defaults = cell == RecurrentCell::kRnn ? kRnnDefaults : cell == RecurrentCell::kGru ? kGruDefaults : kLstmDefaults;
  size_t perDirection = defaults.size();
  std::vector<std::string> names = layer.hasAttr("activations") ? layer.attrStrings("activations") : defaults;
  if (names.size() == perDirection && a.directions == 2) names.insert(names.end(), defaults.begin(), defaults.end());
  if (names.size() != perDirection * size_t(a.directions))
    fail("activations lists " + std::to_string(names.size()) + " functions; the layer needs " +
         std::to_string(perDirection) + " per direction (" + std::to_string(perDirection * size_t(a.directions)) + ")");
  std::vector<kernels::RecurrentActivation> resolved;
  std::string why = kernels::resolveRecurrentActivations(names, layer.attrFloats("activation_alpha"),
                                                         layer.attrFloats("activation_beta"), resolved);
  if (!why.empty()) fail(why);
  for (int64_t d = 0; d < a.directions; ++d)
    a.activations.emplace_back(resolved.begin() + int64_t(d * perDirection), resolved.begin() + int64_t((d + 1) * perDirection));
  return a;
}

namespace {

// Checks a known dim against what the layer needs.
void expectDim(const InferenceContext& ctx, size_t input, const char* name, size_t axis, int64_t expected) {
  if (!ctx.hasInput(input) || expected < 0) return;
  const Shape& s = ctx.inputShape(input);
  if (!s.hasRank() || axis >= s.rank() || !s[axis].isKnown()) return;
  if (s[axis].value() != expected)
    ctx.fail(std::string(name) + " (input " + std::to_string(input) + ") has shape " + s.toString() + "; dimension " +
             std::to_string(axis) + " must be " + std::to_string(expected));
}

void expectRank(const InferenceContext& ctx, size_t input, const char* name, size_t rank) {
  if (!ctx.hasInput(input)) return;
  const Shape& s = ctx.inputShape(input);
  if (s.hasRank() && s.rank() != rank)
    ctx.fail(std::string(name) + " (input " + std::to_string(input) + ") must have rank " + std::to_string(rank) +
             ", got shape " + s.toString());
}

Dim dimOf(const InferenceContext& ctx, size_t input, size_t axis) {
  const Shape& s = ctx.inputShape(input);
  return s.hasRank() && axis < s.rank() ? s[axis] : Dim::unknown();
}

void inferRecurrent(InferenceContext& ctx, RecurrentCell cell) {
  RecurrentAttributes a = readRecurrentAttributes(ctx.layer(), cell);
  DataType dtype = ctx.inputType(0);
  if (dtype != DataType::kUndefined && !isFloatingPoint(dtype))
    ctx.fail("X must be a floating-point tensor, got " + std::string(toString(dtype)));
  for (size_t i : {1, 2, 3, 5, 6, 7})
    if (ctx.hasInput(i) && ctx.inputType(i) != DataType::kUndefined && dtype != DataType::kUndefined &&
        ctx.inputType(i) != dtype)
      ctx.fail("input " + std::to_string(i) + " is " + std::string(toString(ctx.inputType(i))) + " but X is " +
               std::string(toString(dtype)) + "; all float inputs need one type");
  if (ctx.hasInput(4) && ctx.inputType(4) != DataType::kUndefined && ctx.inputType(4) != DataType::kInt32)
    ctx.fail("sequence_lens (input 4) must be int32, got " + std::string(toString(ctx.inputType(4))));
  expectRank(ctx, 0, "X", 3);
  expectRank(ctx, 1, "W", 3);
  expectRank(ctx, 2, "R", 3);
  expectRank(ctx, 3, "B", 2);
  expectRank(ctx, 4, "sequence_lens", 1);
  expectRank(ctx, 5, "initial_h", 3);
  expectRank(ctx, 6, "initial_c", 3);
  expectRank(ctx, 7, "P", 2);
  Dim hiddenDim = a.hiddenSize > 0 ? Dim(a.hiddenSize) : dimOf(ctx, 2, 2);
  int64_t hidden = hiddenDim.isKnown() ? hiddenDim.value() : -1;
  int64_t gates = kernels::gateCount(cell);
  expectDim(ctx, 1, "W", 0, a.directions);
  expectDim(ctx, 1, "W", 1, hidden < 0 ? -1 : gates * hidden);
  expectDim(ctx, 1, "W", 2, dimOf(ctx, 0, 2).isKnown() ? dimOf(ctx, 0, 2).value() : -1);
  expectDim(ctx, 2, "R", 0, a.directions);
  expectDim(ctx, 2, "R", 1, hidden < 0 ? -1 : gates * hidden);
  expectDim(ctx, 2, "R", 2, hidden);
  expectDim(ctx, 3, "B", 0, a.directions);
  expectDim(ctx, 3, "B", 1, hidden < 0 ? -1 : 2 * gates * hidden);
  expectDim(ctx, 7, "P", 0, a.directions);
  expectDim(ctx, 7, "P", 1, hidden < 0 ? -1 : 3 * hidden);
  Dim steps = dimOf(ctx, 0, a.batchMajor ? 1 : 0);
  Dim batch = dimOf(ctx, 0, a.batchMajor ? 0 : 1);
  Dim dirs(a.directions);
  if (a.batchMajor) {
    ctx.setOutput(0, dtype, Shape{batch, steps, dirs, hiddenDim});
    for (size_t i : {1, 2}) ctx.setOutput(i, dtype, Shape{batch, dirs, hiddenDim});
  } else {
    ctx.setOutput(0, dtype, Shape{steps, dirs, batch, hiddenDim});
    for (size_t i : {1, 2}) ctx.setOutput(i, dtype, Shape{dirs, batch, hiddenDim});
  }
}

}  // namespace

void registerRecurrentSchemas(OpSchemaRegistry& registry) {
  registry.add({"", "RNN", [](InferenceContext& ctx) { inferRecurrent(ctx, RecurrentCell::kRnn); }, 3, 6});
  registry.add({"", "GRU", [](InferenceContext& ctx) { inferRecurrent(ctx, RecurrentCell::kGru); }, 3, 6});
  registry.add({"", "LSTM", [](InferenceContext& ctx) { inferRecurrent(ctx, RecurrentCell::kLstm); }, 3, 8});
}

}  // namespace kiln
