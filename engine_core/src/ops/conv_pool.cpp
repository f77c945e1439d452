// Type and shape inference for the conv_pool op family: the convolutions here, the pools in
// conv_pool_pooling.cpp.
#include "conv_pool_window.h"
#include "op_families.h"
#include "op_schema.h"

namespace kiln {

void registerPoolingSchemas(OpSchemaRegistry& registry);

namespace {

std::string dimText(const Dim& d) { return d.toString(); }

// Rank of X (or of W when X's is unknown); 0 when neither is known. Checks both are N, C + spatial.
size_t convRank(const InferenceContext& ctx, size_t xIndex, size_t wIndex) {
  const Shape& x = ctx.inputShape(xIndex);
  const Shape& w = ctx.inputShape(wIndex);
  if (x.hasRank() && w.hasRank() && x.rank() != w.rank())
    ctx.fail("input X has rank " + std::to_string(x.rank()) + " but the weights have rank " +
             std::to_string(w.rank()) + "; both must be [N or M, C, spatial...] with the same spatial rank");
  size_t rank = x.hasRank() ? x.rank() : w.hasRank() ? w.rank() : 0;
  if (rank != 0 && (rank < 3 || rank > 5))
    ctx.fail("input X must have rank 3 to 5 ([N, C, D1, ...]), got rank " + std::to_string(rank));
  return rank;
}

// Kernel spatial size from the weights (-1 where unknown).
std::vector<int64_t> kernelFromWeights(const Shape& w, size_t rank) {
  std::vector<int64_t> kernel(rank - 2, -1);
  if (w.hasRank())
    for (size_t i = 2; i < rank; ++i) kernel[i - 2] = w[i].isKnown() ? w[i].value() : -1;
  return kernel;
}

int64_t readGroup(const InferenceContext& ctx) {
  int64_t group = ctx.layer().attrInt("group", 1);
  if (group < 1) ctx.fail("attribute 'group' is " + std::to_string(group) + "; it must be >= 1");
  return group;
}

void checkFloatInput(const InferenceContext& ctx, size_t i, const char* name) {
  DataType t = ctx.inputType(i);
  if (t != DataType::kUndefined && (!isFloatingPoint(t) || t == DataType::kFloat8E4M3 || t == DataType::kFloat8E5M2))
    ctx.fail(std::string("input ") + name + " must be float16, bfloat16, float32 or float64, got " +
             std::string(toString(t)));
}

void check8BitInput(const InferenceContext& ctx, size_t i, const char* name) {
  DataType t = ctx.inputType(i);
  if (t != DataType::kUndefined && t != DataType::kInt8 && t != DataType::kUInt8)
    ctx.fail(std::string("input ") + name + " must be int8 or uint8, got " + std::string(toString(t)));
}

// A per-output-channel parameter (bias, weight scale or zero point) must be a scalar or have M values.
void checkPerChannel(const InferenceContext& ctx, size_t i, const char* name, const Dim& m, bool allowScalar) {
  if (!ctx.hasInput(i)) return;
  const Shape& s = ctx.inputShape(i);
  if (!s.hasRank()) return;
  if (allowScalar && (s.rank() == 0 || (s.rank() == 1 && s[0] == Dim(1)))) return;
  if (s.rank() != 1 || (m.isKnown() && s[0].isKnown() && s[0] != m))
    ctx.fail(std::string("input ") + name + " must have shape [M] = [" + dimText(m) + "]" +
             (allowScalar ? " or be a scalar" : "") + ", got " + s.toString());
}

// Conv, ConvInteger and QLinearConv: Y[N, M, out...] from X[N, C, in...] and W[M, C/group, k...].
void inferForwardConv(InferenceContext& ctx, size_t xIndex, size_t wIndex, DataType outType) {
  const size_t rank = convRank(ctx, xIndex, wIndex);
  if (rank == 0) return ctx.setOutput(0, outType, Shape::unknownRank());
  const Shape& x = ctx.inputShape(xIndex);
  const Shape& w = ctx.inputShape(wIndex);
  const int64_t group = readGroup(ctx);
  const Dim n = x.hasRank() ? x[0] : Dim::unknown();
  const Dim c = x.hasRank() ? x[1] : Dim::unknown();
  const Dim m = w.hasRank() ? w[0] : Dim::unknown();
  if (m.isKnown() && m.value() % group != 0)
    ctx.fail("the weights have " + std::to_string(m.value()) + " output channels, not a multiple of group " +
             std::to_string(group));
  if (c.isKnown() && w.hasRank() && w[1].isKnown() && c.value() != w[1].value() * group)
    ctx.fail("input X has " + std::to_string(c.value()) + " channels but the weights expect " +
             std::to_string(w[1].value() * group) + " (W dim 1 = " + std::to_string(w[1].value()) + " x group " +
             std::to_string(group) + "); check the weights and the group attribute");
  WindowAttributes attrs = readWindowAttributes(ctx.layer(), rank - 2, kernelFromWeights(w, rank));
  std::vector<Dim> dims = {n, m};
  for (size_t i = 0; i + 2 < rank; ++i)
    dims.push_back(windowOutputDim(ctx.layer(), attrs, i, x.hasRank() ? x[i + 2] : Dim::unknown()));
  ctx.setOutput(0, outType, Shape(std::move(dims)));
}

void inferConv(InferenceContext& ctx) {
  checkFloatInput(ctx, 0, "X");
  if (ctx.inputType(1) != ctx.inputType(0))
    ctx.fail("the weights are " + std::string(toString(ctx.inputType(1))) + " but X is " +
             std::string(toString(ctx.inputType(0))) + "; they must have the same type");
  const Shape& w = ctx.inputShape(1);
  checkPerChannel(ctx, 2, "B", w.hasRank() ? w[0] : Dim::unknown(), false);
  inferForwardConv(ctx, 0, 1, ctx.inputType(0));
}

void inferConvInteger(InferenceContext& ctx) {
  check8BitInput(ctx, 0, "x");
  check8BitInput(ctx, 1, "w");
  const Shape& w = ctx.inputShape(1);
  checkPerChannel(ctx, 3, "w_zero_point", w.hasRank() ? w[0] : Dim::unknown(), true);
  inferForwardConv(ctx, 0, 1, DataType::kInt32);
}

void inferQLinearConv(InferenceContext& ctx) {
  check8BitInput(ctx, 0, "x");
  check8BitInput(ctx, 3, "w");
  const Shape& w = ctx.inputShape(3);
  const Dim m = w.hasRank() ? w[0] : Dim::unknown();
  checkPerChannel(ctx, 4, "w_scale", m, true);
  checkPerChannel(ctx, 5, "w_zero_point", m, true);
  checkPerChannel(ctx, 8, "B", m, false);
  DataType outType = ctx.hasInput(7) ? ctx.inputType(7) : ctx.inputType(0);
  inferForwardConv(ctx, 0, 3, outType);
}

// ConvTranspose: Y[N, W1 * group, out...] from X[N, C, in...] and W[C, M/group, k...].
void inferConvTranspose(InferenceContext& ctx) {
  checkFloatInput(ctx, 0, "X");
  const size_t rank = convRank(ctx, 0, 1);
  if (rank == 0) return ctx.setOutput(0, ctx.inputType(0), Shape::unknownRank());
  const Shape& x = ctx.inputShape(0);
  const Shape& w = ctx.inputShape(1);
  const int64_t group = readGroup(ctx);
  const Dim c = x.hasRank() ? x[1] : Dim::unknown();
  if (c.isKnown() && w.hasRank() && w[0].isKnown() && c.value() != w[0].value())
    ctx.fail("input X has " + std::to_string(c.value()) + " channels but the weights have " +
             std::to_string(w[0].value()) + " (W must be [C, M/group, kernel...])");
  if (c.isKnown() && c.value() % group != 0)
    ctx.fail("input X has " + std::to_string(c.value()) + " channels, not a multiple of group " + std::to_string(group));
  const Dim m = w.hasRank() && w[1].isKnown() ? Dim(w[1].value() * group) : Dim::unknown();
  checkPerChannel(ctx, 2, "B", m, false);
  WindowAttributes attrs = readWindowAttributes(ctx.layer(), rank - 2, kernelFromWeights(w, rank));
  std::vector<Dim> dims = {x.hasRank() ? x[0] : Dim::unknown(), m};
  for (size_t i = 0; i + 2 < rank; ++i)
    dims.push_back(convTransposeOutputDim(ctx.layer(), attrs, i, x.hasRank() ? x[i + 2] : Dim::unknown()));
  ctx.setOutput(0, ctx.inputType(0), Shape(std::move(dims)));
}

}  // namespace

void registerConvPoolSchemas(OpSchemaRegistry& registry) {
  registry.add({"", "Conv", inferConv, 2, 3});
  registry.add({"", "ConvTranspose", inferConvTranspose, 2, 3});
  registry.add({"", "ConvInteger", inferConvInteger, 2, 4});
  registry.add({"", "QLinearConv", inferQLinearConv, 8, 9});
  registerPoolingSchemas(registry);
}

}  // namespace kiln
