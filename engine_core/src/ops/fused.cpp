// Kiln's fused ops (domain "kiln"), made by the fusion passes in engine_core/src/passes/. Their type
// and shape inference; the CPU kernels are in backends/cpu/ops/fused.cpp (SqueezeExcitation's in
// squeeze_excitation.cpp beside it).
//
// kiln.FusedConv   inputs X, W, [B], [Z]     y = act(conv(X, W) + B + Z)  or  act(conv(X, W) + B) + Z
//   attributes: base ("Conv" | "ConvTranspose") and all of that op's attributes; the layer's
//   opsetVersion is the base op's ai.onnx opset. B is the per-output-channel bias [M] of the base
//   op. Z (residual) has exactly the output's shape; residual_before_activation (int, default 1)
//   picks the first form (Add before the activation) or the second. activation (string, default
//   none) is one of Relu, Clip (alpha = min, beta = max), Sigmoid, HardSigmoid (alpha, beta),
//   HardSwish, SiLU (x * sigmoid(x)), Gelu, GeluTanh (Gelu with approximate = tanh), LeakyRelu
//   (alpha), Tanh; activation_alpha / activation_beta (floats) are its parameters.
// kiln.FusedConvPool inputs X, W, [B]      y = MaxPool(act(conv(X, W) + B))
//   a FusedConv over a 2-D Conv (no residual) and the MaxPool reading its output alone: the
//   FusedConv's attributes, and the MaxPool's prefixed "pool_" (pool_kernel_shape, pool_strides,
//   pool_pads, pool_ceil_mode, ...) with its opset in pool_opset. Made by FuseConvMaxPool where the
//   CUDA small-channel kernel runs the whole (the 205 MB stem output of ResNet-50 b128 is never
//   written); other backends run the FusedConv, then the MaxPool.
// kiln.SqueezeExcitation inputs X, W1, [B1], W2, [B2]   float32
//   y = act2(W2 · act1(W1 · mean(X) + B1) + B2): a squeeze-and-excitation block's gate (EfficientNet,
//   MobileNetV3) without the Mul that applies it. X is [N, C, spatial...] (rank 3 or more), the mean
//   over its spatial dims; W1 [R, C, 1, ...] and W2 [C2, R, 1, ...] are the two 1x1 convolutions'
//   filters (X's rank, spatial dims 1), B1 [R] and B2 [C2] their biases. y is [N, C2, 1, ..., 1].
//   FC1's epilogue is squeeze_activation, squeeze_activation_alpha, squeeze_activation_beta; FC2's
//   excite_activation, excite_activation_alpha, excite_activation_beta (FusedConv's activation names
//   and parameters; absent = none). Made by FuseSqueezeExcitation from GlobalAveragePool and two
//   (Fused)Convs where the CUDA backend runs it as one kernel.
// kiln.FusedMatMul inputs A, B, [C], [Z]     y = act(base(A, B, C) + Z)  or  act(base(A, B, C)) + Z
//   base "Gemm" (C is Gemm's C, scaled by its beta) or "MatMul" (C is a bias of shape [N] added
//   to every row, N = the last output dim). Epilogue attributes as for FusedConv. float32.
// kiln.Pointwise   inputs: the group's outside tensors, in order
//   body (graph): the original elementwise layers; its inputs bind to the layer's inputs in order
//   and its single output is the layer's output. Any dtype the body's ops accept.
// kiln.Attention   inputs Q [..., Lq, D], K, V [..., Lk, Dv], [mask]   float32
//   y = softmax(Q · Kᵀ · scale + mask) · V over the last axis, numerically stable. K is
//   [..., Lk, D] when k_transposed = 0, or already transposed [..., D, Lk] when k_transposed = 1
//   (the model's MatMul read it that way). Q, K and V have the same leading (batch) dims; the mask
//   broadcasts to [..., Lq, Lk] and is present iff has_mask = 1. scale (float, default 1).
//   q_interleaved, k_interleaved, v_interleaved, out_interleaved (int, default 0): that tensor is
//   stored with its row dim and last batch dim swapped ([B, L, H, D] for the [B, H, L, D] above;
//   rank 3 or more), as exporters lay heads out; the dims above are the swapped-back ones.
//   qkv_packed (int, default 0): inputs 0, 1 and 2 are one tensor [..., L, 3, H, D] whose part i
//   (that dim's index) is Q, K or V stored interleaved ([..., L, H, D]); q/k/v_interleaved are 1.
#include "fused.h"

#include "op_families.h"
#include "op_schema.h"

#include <algorithm>
#include <optional>

namespace kiln {
namespace {

// The base op's inference on the first `baseInputs` inputs; output 0 is the fused layer's.
void inferFromBase(InferenceContext& ctx, size_t baseInputs) {
  Layer base = fused::baseLayer(ctx.layer());
  if (!base.domain.empty() || base.opType.empty()) ctx.fail("attribute 'base' names no op");
  const OpSchema* schema = OpSchemaRegistry::instance().find("", base.opType);
  if (!schema) ctx.fail("base op '" + base.opType + "' is not supported by Kiln");
  base.inputs.resize(std::min(base.inputs.size(), baseInputs));
  while (!base.inputs.empty() && base.inputs.back().empty()) base.inputs.pop_back();
  std::vector<const Tensor*> inputs;
  for (size_t i = 0; i < base.inputs.size(); ++i) inputs.push_back(ctx.hasInput(i) ? &ctx.input(i) : nullptr);
  base.outputs.resize(1);
  // Values are passed on when the base op asks (Conv and MatMul never do), so the fused layer
  // reads no value its base would not.
  InferenceContext baseCtx(base, std::move(inputs), [&ctx](size_t i) { return ctx.inputValue(i); });
  schema->infer(baseCtx);
  const Tensor& out = baseCtx.output(0);
  if (ctx.hasInput(3) && ctx.input(3).shape.hasRank() && out.shape.hasRank() &&
      ctx.input(3).shape.rank() != out.shape.rank())
    ctx.fail("the residual input has shape " + ctx.input(3).shape.toString() + " but the output has shape " +
             out.shape.toString() + "; they must be equal");
  ctx.setOutput(0, out.dtype, out.shape);
}

void inferFusedConv(InferenceContext& ctx) {
  std::string base = ctx.layer().attrString(fused::kBase, "");
  if (base != "Conv" && base != "ConvTranspose")
    ctx.fail("attribute 'base' must be Conv or ConvTranspose, got '" + base + "'");
  inferFromBase(ctx, 3);
}

// The FusedConv's output, then the MaxPool's over it.
void inferFusedConvPool(InferenceContext& ctx) {
  const Layer conv = fused::convOfConvPool(ctx.layer()), pool = fused::poolOfConvPool(ctx.layer());
  std::vector<const Tensor*> inputs;
  for (size_t i = 0; i < ctx.inputCount(); ++i) inputs.push_back(ctx.hasInput(i) ? &ctx.input(i) : nullptr);
  InferenceContext convCtx(conv, std::move(inputs), [&ctx](size_t i) { return ctx.inputValue(i); });
  inferFusedConv(convCtx);
  const Tensor convOut = convCtx.output(0);
  const OpSchema* maxPool = OpSchemaRegistry::instance().find("", "MaxPool");
  if (!maxPool) ctx.fail("MaxPool has no schema");
  InferenceContext poolCtx(pool, {&convOut}, [](size_t) -> const HostTensor* { return nullptr; });
  maxPool->infer(poolCtx);
  ctx.setOutput(0, poolCtx.output(0).dtype, poolCtx.output(0).shape);
}

// A known dim of input `i` that must equal `expected` (when that is known too).
void checkDim(InferenceContext& ctx, size_t input, size_t dim, const Dim& expected, const std::string& what) {
  const Shape& shape = ctx.inputShape(input);
  if (!shape.hasRank() || !expected.isKnown() || !shape[dim].isKnown() || shape[dim] == expected) return;
  ctx.fail("input " + std::to_string(input) + " (" + what + ") has shape " + shape.toString() + "; its dim " +
           std::to_string(dim) + " must be " + expected.toString());
}

void inferSqueezeExcitation(InferenceContext& ctx) {
  namespace se = fused::squeeze_excitation;
  const char* names[se::kInputCount] = {"X", "W1", "B1", "W2", "B2"};
  for (size_t i = 0; i < se::kInputCount; ++i)
    if (ctx.hasInput(i) && ctx.inputType(i) != DataType::kFloat32)
      ctx.fail("input " + std::to_string(i) + " (" + names[i] + ") must be float32, got " +
               std::string(toString(ctx.inputType(i))));
  if (!ctx.hasInput(se::kW1) || !ctx.hasInput(se::kW2))
    ctx.fail("the filters W1 (input 1) and W2 (input 3) are required");
  const Shape &x = ctx.inputShape(se::kX), &w1 = ctx.inputShape(se::kW1), &w2 = ctx.inputShape(se::kW2);
  // The output's rank is X's; the filters have it too.
  std::optional<size_t> rank;
  for (const Shape* s : {&x, &w1, &w2})
    if (s->hasRank()) {
      if (s->rank() < 3) ctx.fail("X, W1 and W2 need rank 3 or more ([N, C, spatial...]), got " + s->toString());
      if (rank && *rank != s->rank())
        ctx.fail("X " + x.toString() + ", W1 " + w1.toString() + " and W2 " + w2.toString() + " must have one rank");
      rank = s->rank();
    }
  for (size_t i : {se::kW1, se::kW2}) {
    const Shape& w = ctx.inputShape(i);
    for (size_t d = 2; w.hasRank() && d < w.rank(); ++d)
      if (w[d].isKnown() && w[d].value() != 1)
        ctx.fail("input " + std::to_string(i) + " (" + names[i] + ") has shape " + w.toString() +
                 "; a squeeze-and-excitation filter's spatial dims must all be 1");
  }
  const Dim channels = x.hasRank() ? x[1] : Dim::unknown();
  const Dim reduced = w1.hasRank() ? w1[0] : (w2.hasRank() ? w2[1] : Dim::unknown());
  const Dim outChannels = w2.hasRank() ? w2[0] : Dim::unknown();
  checkDim(ctx, se::kW1, 1, channels, "W1, whose dim 1 is X's channels");
  checkDim(ctx, se::kW2, 1, reduced, "W2, whose dim 1 is W1's output channels");
  for (auto [bias, length] : {std::pair{se::kB1, reduced}, std::pair{se::kB2, outChannels}}) {
    if (!ctx.hasInput(bias) || !ctx.inputShape(bias).hasRank()) continue;
    if (ctx.inputShape(bias).rank() != 1)
      ctx.fail("input " + std::to_string(bias) + " (" + names[bias] + ") must be 1-D, got " +
               ctx.inputShape(bias).toString());
    checkDim(ctx, bias, 0, length, std::string(names[bias]) + ", one value per output channel of its filter");
  }
  if (!rank) return ctx.setOutput(0, DataType::kFloat32, Shape::unknownRank());
  std::vector<Dim> dims(*rank, Dim(1));
  dims[0] = x.hasRank() ? x[0] : Dim::unknown();
  dims[1] = outChannels;
  ctx.setOutput(0, DataType::kFloat32, Shape(std::move(dims)));
}

void inferFusedMatMul(InferenceContext& ctx) {
  std::string base = ctx.layer().attrString(fused::kBase, "");
  if (base != "MatMul" && base != "Gemm") ctx.fail("attribute 'base' must be MatMul or Gemm, got '" + base + "'");
  inferFromBase(ctx, base == "Gemm" ? 3 : 2);
}

// Types the body with the actual inputs and reports its output.
void inferPointwise(InferenceContext& ctx) {
  Network body = ctx.layer().attrGraph("body");
  if (body.inputs().size() != ctx.inputCount() || body.outputs().size() != 1)
    ctx.fail("the body has " + std::to_string(body.inputs().size()) + " inputs and " +
             std::to_string(body.outputs().size()) + " outputs; it needs one input per layer input and one output");
  for (size_t i = 0; i < ctx.inputCount(); ++i) {
    Tensor& declared = body.tensor(body.inputs()[i]);
    declared.dtype = ctx.inputType(i);
    declared.shape = ctx.inputShape(i);
  }
  body.inferShapes();
  const Tensor& out = body.tensor(body.outputs()[0]);
  ctx.setOutput(0, out.dtype, out.shape);
}

// A packed attention's Q, K and V: one tensor [..., L, 3, H, D], read interleaved.
void checkPackedInputs(InferenceContext& ctx) {
  const Layer& layer = ctx.layer();
  if (layer.inputs.size() < 3 || layer.inputs[1] != layer.inputs[0] || layer.inputs[2] != layer.inputs[0])
    ctx.fail("qkv_packed is 1, so inputs 0, 1 and 2 must name one tensor");
  for (size_t i = 0; i < 3; ++i)
    if (!fused::attentionInterleaved(layer, i)) ctx.fail("qkv_packed is 1, so q/k/v_interleaved must be 1");
  if (layer.attrInt("k_transposed", 0) != 0) ctx.fail("qkv_packed is 1, so k_transposed must be 0");
  const Shape& packed = ctx.inputShape(0);
  if (!packed.hasRank()) return;
  if (packed.rank() < fused::kPackedPartsDim + 2)
    ctx.fail("qkv_packed is 1, so input 0 needs rank 5 or more ([..., L, 3, H, D]), got " + packed.toString());
  const Dim& parts = packed[packed.rank() - fused::kPackedPartsDim];
  if (parts.isKnown() && parts.value() != 3)
    ctx.fail("qkv_packed is 1, so input 0's dim -3 must be 3 (Q, K, V), got " + packed.toString());
}

void inferAttention(InferenceContext& ctx) {
  const bool packed = fused::attentionPacked(ctx.layer());
  if (packed) checkPackedInputs(ctx);
  auto computed = [&](size_t i) {  // the dims the attention computes on
    const Shape& stored =
        packed && ctx.inputShape(i).hasRank() ? Shape(fused::packedPartDims(ctx.inputShape(i).dims())) : ctx.inputShape(i);
    if (!fused::attentionInterleaved(ctx.layer(), i) || !stored.hasRank()) return stored;
    if (stored.rank() < 3) ctx.fail("input " + std::to_string(i) + " is interleaved, so it needs rank 3 or more, got " + stored.toString());
    return Shape(fused::swapRowsAndHeads(stored.dims()));
  };
  const Shape q = computed(0), v = computed(2);
  for (size_t i = 0; i < 3; ++i) {
    if (ctx.inputType(i) != DataType::kFloat32) ctx.fail("input " + std::to_string(i) + " must be float32");
    if (ctx.inputShape(i).hasRank() && ctx.inputShape(i).rank() < 2)
      ctx.fail("input " + std::to_string(i) + " must have rank 2 or more, got " + ctx.inputShape(i).toString());
  }
  bool hasMask = ctx.layer().attrInt("has_mask", 0) != 0;
  if (hasMask != ctx.hasInput(3)) ctx.fail("has_mask must be 1 exactly when the mask input is given");
  if (!q.hasRank() || !v.hasRank()) return ctx.setOutput(0, DataType::kFloat32, Shape::unknownRank());
  std::vector<Dim> dims(q.dims().begin(), q.dims().end() - 1);
  dims.push_back(v[v.rank() - 1]);
  if (fused::attentionInterleaved(ctx.layer(), fused::kAttentionOutput)) {
    if (dims.size() < 3) ctx.fail("the output is interleaved, so it needs rank 3 or more");
    dims = fused::swapRowsAndHeads(std::move(dims));
  }
  ctx.setOutput(0, DataType::kFloat32, Shape(std::move(dims)));
}

}  // namespace

void registerFusedSchemas(OpSchemaRegistry& registry) {
  registry.add({fused::kDomain, fused::kFusedConv, inferFusedConv, 2, 4});
  registry.add({fused::kDomain, fused::kFusedMatMul, inferFusedMatMul, 2, 4});
  registry.add({fused::kDomain, fused::kFusedConvPool, inferFusedConvPool, 2, 3});
  registry.add({fused::kDomain, fused::kSqueezeExcitation, inferSqueezeExcitation, 4, 5});
  registry.add({fused::kDomain, fused::kPointwise, inferPointwise, 1, -1});
  registry.add({fused::kDomain, fused::kAttention, inferAttention, 3, 4});
}

}  // namespace kiln
