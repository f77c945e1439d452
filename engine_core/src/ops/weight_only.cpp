// Kiln's INT4 weight-only op (domain "kiln"), made by the builder from MatMul / Gemm /
// kiln.FusedMatMul layers with constant weights (`--int4-weights`, passes/int4_weights.cpp) and
// from onnxruntime's MatMulNBits (passes/lower_matmul_nbits.cpp). Its type and shape inference;
// the CPU kernel is in backends/cpu/ops/weight_only.cpp.
//
// kiln.WeightOnlyMatMul inputs A, B, [C], [Z], scales, [zero_points]
//   y = act(A · W + C + Z)  or  act(A · W + C) + Z   (residual_before_activation as FusedMatMul)
//   A float32 [..., K] (activations are not quantized); W [K, N] is stored as int4, B uint8
//   [N, groups, group_size / 2] with scales float32 [N, groups] and zero_points int8 [N, groups]
//   (absent: 0), groups = ceil(K / group_size); W[k, n] = scales[n, g] * (q - zero_points[n, g])
//   for the int4 q of element (k, n) (kernels/cpu/quant/int4_weight_format.h: nibble order, rounding).
//   C a bias [N]; Z the output's shape. y float32 [..., N]. Attributes K, N, group_size (even, > 0)
//   and the epilogue attributes of kiln.FusedMatMul.
#include "weight_only.h"

#include "op_families.h"
#include "op_schema.h"

#include <kernels/cpu/quant/int4_weight_format.h>

namespace kiln {
namespace {

using weight_only::kScalesInput;
using weight_only::kZeroPointsInput;

// The input's shape must be exactly `dims` where it is known.
void checkDims(const InferenceContext& ctx, size_t i, const std::vector<int64_t>& dims, const char* what) {
  const Shape& shape = ctx.inputShape(i);
  if (!shape.hasRank()) return;
  bool same = shape.rank() == dims.size();
  for (size_t d = 0; same && d < dims.size(); ++d) same = !shape[d].isKnown() || shape[d].value() == dims[d];
  if (!same) ctx.fail(std::string(what) + " has shape " + shape.toString() + ", expected " + Shape::fromDims(dims).toString());
}

void inferWeightOnlyMatMul(InferenceContext& ctx) {
  const Layer& layer = ctx.layer();
  const int64_t k = layer.attrInt(weight_only::kK, 0), n = layer.attrInt(weight_only::kN, 0);
  const int64_t group = layer.attrInt(weight_only::kGroupSize, 0);
  if (k <= 0 || n <= 0) ctx.fail("attributes K and N must be positive, got K = " + std::to_string(k) + ", N = " + std::to_string(n));
  if (group <= 0 || group % 2 != 0) ctx.fail("attribute group_size must be even and positive, got " + std::to_string(group));
  const int64_t groups = kernels::int4GroupCount(k, group);
  if (ctx.inputType(0) != DataType::kFloat32) ctx.fail("A (input 0) must be float32, got " + std::string(toString(ctx.inputType(0))));
  if (ctx.inputType(1) != DataType::kUInt8) ctx.fail("B (input 1) must be the packed uint8 weights");
  checkDims(ctx, 1, {n, groups, group / 2}, "B (input 1)");
  if (ctx.inputType(kScalesInput) != DataType::kFloat32) ctx.fail("scales (input 4) must be float32");
  checkDims(ctx, kScalesInput, {n, groups}, "scales (input 4)");
  if (ctx.hasInput(kZeroPointsInput)) {
    if (ctx.inputType(kZeroPointsInput) != DataType::kInt8) ctx.fail("zero_points (input 5) must be int8");
    checkDims(ctx, kZeroPointsInput, {n, groups}, "zero_points (input 5)");
  }
  if (ctx.hasInput(2)) {
    if (ctx.inputType(2) != DataType::kFloat32) ctx.fail("the bias (input 2) must be float32");
    checkDims(ctx, 2, {n}, "the bias (input 2)");
  }
  const Shape& a = ctx.inputShape(0);
  if (!a.hasRank()) return ctx.setOutput(0, DataType::kFloat32, Shape::unknownRank());
  if (a.rank() == 0) ctx.fail("A (input 0) must have rank 1 or more");
  const Dim& aK = a[a.rank() - 1];
  if (aK.isKnown() && aK.value() != k)
    ctx.fail("A (input 0) has shape " + a.toString() + ": its last dim must be K = " + std::to_string(k));
  std::vector<Dim> dims(a.dims().begin(), a.dims().end() - 1);
  dims.push_back(Dim(n));
  Shape out(std::move(dims));
  if (ctx.hasInput(3) && ctx.inputShape(3).hasRank() && ctx.inputShape(3).rank() != out.rank())
    ctx.fail("the residual input has shape " + ctx.inputShape(3).toString() + " but the output has shape " +
             out.toString() + "; they must be equal");
  ctx.setOutput(0, DataType::kFloat32, std::move(out));
}

}  // namespace

void registerMatMulNBitsSchema(OpSchemaRegistry& registry);

void registerWeightOnlySchemas(OpSchemaRegistry& registry) {
  registry.add({fused::kDomain, weight_only::kWeightOnlyMatMul, inferWeightOnlyMatMul,
                int(weight_only::kMinInputCount), int(weight_only::kMaxInputCount)});
  registerMatMulNBitsSchema(registry);
}

}  // namespace kiln
