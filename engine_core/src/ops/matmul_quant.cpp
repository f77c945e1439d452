// Type and shape inference for the matmul_quant op family: Gemm, MatMul, MatMulInteger,
// QLinearMatMul, Det (here), Einsum and the quantize ops (matmul_quant_*.cpp).
#include "matmul_quant.h"

#include "op_families.h"
#include "op_schema.h"

namespace kiln {
namespace {

bool isGemmType(DataType t) {
  switch (t) {
    case DataType::kFloat32: case DataType::kFloat64: case DataType::kFloat16: case DataType::kBFloat16:
    case DataType::kInt32: case DataType::kInt64: case DataType::kUInt32: case DataType::kUInt64:
      return true;
    default:
      return false;
  }
}

void requireGemmTypes(const InferenceContext& ctx, size_t a, size_t b) {
  const DataType ta = ctx.inputType(a), tb = ctx.inputType(b);
  if (!isGemmType(ta))
    ctx.fail("input " + std::to_string(a) + " has type " + std::string(toString(ta)) +
             "; expected float32, float64, float16, bfloat16 or a 32/64-bit integer");
  if (ta != tb)
    ctx.fail("inputs " + std::to_string(a) + " and " + std::to_string(b) + " must have the same type, got " +
             std::string(toString(ta)) + " and " + std::string(toString(tb)));
}

void requireEightBit(const InferenceContext& ctx, size_t i) {
  const DataType t = ctx.inputType(i);
  if (t != DataType::kUInt8 && t != DataType::kInt8)
    ctx.fail("input " + std::to_string(i) + " has type " + std::string(toString(t)) + "; expected uint8 or int8");
}

// Zero points and scales of the quantized matmuls: one per tensor, per row of A (M) or per column
// of B (N).
void requireScalarOrVector(const InferenceContext& ctx, size_t i, const Dim& length, const char* what) {
  if (!ctx.hasInput(i)) return;
  const Shape& s = ctx.inputShape(i);
  if (!s.hasRank() || s.rank() == 0) return;
  int64_t nonUnit = 0;  // [L], or [1, .., L, .., 1] (per-row zero points of N-d inputs are [.., M, 1])
  bool matches = true;
  for (const Dim& d : s.dims()) {
    if (d.isKnown() && d.value() == 1) continue;
    ++nonUnit;
    matches = matches && !(d.isKnown() && length.isKnown() && d.value() != length.value());
  }
  if (nonUnit > 1 || !matches)
    ctx.fail("input " + std::to_string(i) + " has shape " + s.toString() + "; expected a scalar or " + what +
             " (" + length.toString() + " values)");
}

void inferMatMulTyped(InferenceContext& ctx, DataType outType) {
  ctx.setOutput(0, outType, inferMatMulShape(ctx, ctx.inputShape(0), ctx.inputShape(1)));
}

void inferMatMul(InferenceContext& ctx) {
  requireGemmTypes(ctx, 0, 1);
  inferMatMulTyped(ctx, ctx.inputType(0));
}

Dim lastDim(const Shape& s, size_t fromEnd) {
  return s.hasRank() && s.rank() >= fromEnd ? s[s.rank() - fromEnd] : Dim::unknown();
}

void inferMatMulInteger(InferenceContext& ctx) {
  requireEightBit(ctx, 0);
  requireEightBit(ctx, 1);
  for (size_t zp : {2, 3})
    if (ctx.hasInput(zp) && ctx.inputType(zp) != ctx.inputType(zp - 2))
      ctx.fail("zero point input " + std::to_string(zp) + " must have the type of input " + std::to_string(zp - 2));
  requireScalarOrVector(ctx, 2, lastDim(ctx.inputShape(0), 2), "one per row of A");
  requireScalarOrVector(ctx, 3, lastDim(ctx.inputShape(1), 1), "one per column of B");
  inferMatMulTyped(ctx, DataType::kInt32);
}

void inferQLinearMatMul(InferenceContext& ctx) {
  requireEightBit(ctx, 0);
  requireEightBit(ctx, 3);
  requireEightBit(ctx, 7);
  for (size_t scale : {1, 4, 6})
    if (ctx.inputType(scale) != DataType::kFloat32)
      ctx.fail("scale input " + std::to_string(scale) + " must be float32, got " +
               std::string(toString(ctx.inputType(scale))));
  if (ctx.inputType(2) != ctx.inputType(0) || ctx.inputType(5) != ctx.inputType(3))
    ctx.fail("a_zero_point and b_zero_point must have the types of a and b");
  const Dim rows = lastDim(ctx.inputShape(0), 2), cols = lastDim(ctx.inputShape(3), 1);
  requireScalarOrVector(ctx, 1, rows, "one per row of A");
  requireScalarOrVector(ctx, 2, rows, "one per row of A");
  requireScalarOrVector(ctx, 4, cols, "one per column of B");
  requireScalarOrVector(ctx, 5, cols, "one per column of B");
  for (size_t i : {6, 7})
    if (auto n = ctx.inputShape(i).elementCount(); n && *n != 1)
      ctx.fail("input " + std::to_string(i) + " (y scale / zero point) must hold one value");
  ctx.setOutput(0, ctx.inputType(7), inferMatMulShape(ctx, ctx.inputShape(0), ctx.inputShape(3)));
}

void inferGemm(InferenceContext& ctx) {
  requireGemmTypes(ctx, 0, 1);
  const Shape &a = ctx.inputShape(0), &b = ctx.inputShape(1);
  for (auto [shape, name] : {std::pair{&a, "A"}, std::pair{&b, "B"}})
    if (shape->hasRank() && shape->rank() != 2)
      ctx.fail(std::string("input ") + name + " must be a matrix (rank 2), got shape " + shape->toString());
  const bool transA = ctx.layer().attrInt("transA", 0) != 0, transB = ctx.layer().attrInt("transB", 0) != 0;
  const Dim M = a.hasRank() ? a[transA ? 1 : 0] : Dim::unknown();
  const Dim Ka = a.hasRank() ? a[transA ? 0 : 1] : Dim::unknown();
  const Dim Kb = b.hasRank() ? b[transB ? 1 : 0] : Dim::unknown();
  const Dim N = b.hasRank() ? b[transB ? 0 : 1] : Dim::unknown();
  if (Ka.isKnown() && Kb.isKnown() && Ka.value() != Kb.value())
    ctx.fail("inner dimensions differ: op(A) is " + M.toString() + "x" + Ka.toString() + ", op(B) is " +
             Kb.toString() + "x" + N.toString() + " (check transA/transB)");
  if (ctx.hasInput(2)) {
    if (ctx.inputType(2) != ctx.inputType(0)) ctx.fail("input C must have the type of A");
    const Shape& c = ctx.inputShape(2);
    if (c.hasRank()) {
      if (c.rank() > 2) ctx.fail("input C must have rank 0, 1 or 2, got shape " + c.toString());
      const Dim target[2] = {M, N};
      for (size_t i = 0; i < c.rank(); ++i) {
        const Dim& d = c[i];
        const Dim& t = target[2 - c.rank() + i];
        if (d.isKnown() && t.isKnown() && d.value() != 1 && d.value() != t.value())
          ctx.fail("input C of shape " + c.toString() + " cannot be broadcast to the output " + M.toString() + "x" +
                   N.toString());
      }
    }
  }
  ctx.setOutput(0, ctx.inputType(0), Shape({M, N}));
}

void inferDet(InferenceContext& ctx) {
  const DataType t = ctx.inputType(0);
  if (!isFloatingPoint(t) || t == DataType::kFloat8E4M3 || t == DataType::kFloat8E5M2)
    ctx.fail("input has type " + std::string(toString(t)) + "; expected float32, float64, float16 or bfloat16");
  const Shape& x = ctx.inputShape(0);
  if (!x.hasRank()) return ctx.setOutput(0, t, Shape::unknownRank());
  if (x.rank() < 2) ctx.fail("input must have shape [..., M, M], got " + x.toString());
  const Dim &rows = x[x.rank() - 2], &cols = x[x.rank() - 1];
  if (rows.isKnown() && cols.isKnown() && rows.value() != cols.value())
    ctx.fail("input matrices must be square, got shape " + x.toString());
  ctx.setOutput(0, t, Shape(std::vector<Dim>(x.dims().begin(), x.dims().end() - 2)));
}

}  // namespace

Shape inferMatMulShape(const InferenceContext& ctx, const Shape& a, const Shape& b) {
  if (!a.hasRank() || !b.hasRank()) return Shape::unknownRank();
  if (a.rank() == 0 || b.rank() == 0)
    ctx.fail("matrix product inputs must have rank >= 1, got shapes " + a.toString() + " and " + b.toString());
  const Dim& ka = a[a.rank() - 1];
  const Dim& kb = b.rank() == 1 ? b[0] : b[b.rank() - 2];
  if (ka.isKnown() && kb.isKnown() && ka.value() != kb.value())
    ctx.fail("inner dimensions differ: " + a.toString() + " x " + b.toString() + " (" + ka.toString() + " vs " +
             kb.toString() + ")");
  auto batchOf = [](const Shape& s) {
    return Shape(std::vector<Dim>(s.dims().begin(), s.dims().end() - std::min<size_t>(2, s.rank())));
  };
  std::vector<Dim> dims = broadcastShapes(ctx, batchOf(a), batchOf(b)).dims();
  if (a.rank() >= 2) dims.push_back(a[a.rank() - 2]);
  if (b.rank() >= 2) dims.push_back(b[b.rank() - 1]);
  return Shape(std::move(dims));
}

void registerMatMulQuantSchemas(OpSchemaRegistry& registry) {
  registry.add({"", "Gemm", inferGemm, 2, 3});
  registry.add({"", "MatMul", inferMatMul, 2, 2});
  registry.add({"", "MatMulInteger", inferMatMulInteger, 2, 4});
  registry.add({"", "QLinearMatMul", inferQLinearMatMul, 8, 8});
  registry.add({"", "Det", inferDet, 1, 1});
  registerEinsumSchema(registry);
  registerQuantizeSchemas(registry);
}

}  // namespace kiln
