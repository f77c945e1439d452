// CPU kernels of the one-input elementwise ops: math functions, activations, Clip, Not, BitwiseNot,
// IsNaN and IsInf.
#include "elementwise.h"

#include "../dispatch.h"

#include <kernels/cpu/elementwise/unary.h>

#include <cmath>
#include <limits>

namespace kiln {
namespace {

using kernels::UnaryOp;
using kernels::UnaryParams;

void unary(KernelContext& ctx, UnaryOp op, const UnaryParams& params) {
  const HostTensor& in = ctx.input(0);
  HostTensor& out = ctx.allocateOutput(0);
  dispatchNumeric(in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    kernels::unary<T>(op, in.data<T>(), out.data<T>(), in.elementCount(), params);
  });
}

// The parameterised activations, with ONNX's attribute defaults.
UnaryParams alphaParam(const Layer& layer, float alphaDefault) { return {layer.attrFloat("alpha", alphaDefault)}; }

struct ParameterisedOp {
  const char* name;
  UnaryOp op;
  UnaryParams (*params)(const Layer&);
};

const ParameterisedOp kParameterisedOps[] = {
    {"LeakyRelu", UnaryOp::kLeakyRelu, [](const Layer& l) { return alphaParam(l, 0.01f); }},
    {"Elu", UnaryOp::kElu, [](const Layer& l) { return alphaParam(l, 1.0f); }},
    {"Celu", UnaryOp::kCelu, [](const Layer& l) { return alphaParam(l, 1.0f); }},
    {"ThresholdedRelu", UnaryOp::kThresholdedRelu, [](const Layer& l) { return alphaParam(l, 1.0f); }},
    {"Selu", UnaryOp::kSelu,
     [](const Layer& l) {
       return UnaryParams{l.attrFloat("alpha", 1.67326319217681884765625f), 0.0f,
                          l.attrFloat("gamma", 1.05070102214813232421875f)};
     }},
    {"HardSigmoid", UnaryOp::kHardSigmoid,
     [](const Layer& l) { return UnaryParams{l.attrFloat("alpha", 0.2f), l.attrFloat("beta", 0.5f)}; }},
    {"Shrink", UnaryOp::kShrink,
     [](const Layer& l) { return UnaryParams{l.attrFloat("lambd", 0.5f), l.attrFloat("bias", 0.0f)}; }},
};

const std::pair<const char*, UnaryOp> kPlainOps[] = {
    {"Neg", UnaryOp::kNeg},       {"Abs", UnaryOp::kAbs},         {"Sign", UnaryOp::kSign},
    {"Relu", UnaryOp::kRelu},     {"Sqrt", UnaryOp::kSqrt},       {"Reciprocal", UnaryOp::kReciprocal},
    {"Exp", UnaryOp::kExp},       {"Log", UnaryOp::kLog},         {"Sin", UnaryOp::kSin},
    {"Cos", UnaryOp::kCos},       {"Tan", UnaryOp::kTan},         {"Asin", UnaryOp::kAsin},
    {"Acos", UnaryOp::kAcos},     {"Atan", UnaryOp::kAtan},       {"Sinh", UnaryOp::kSinh},
    {"Cosh", UnaryOp::kCosh},     {"Tanh", UnaryOp::kTanh},       {"Asinh", UnaryOp::kAsinh},
    {"Acosh", UnaryOp::kAcosh},   {"Atanh", UnaryOp::kAtanh},     {"Erf", UnaryOp::kErf},
    {"Floor", UnaryOp::kFloor},   {"Ceil", UnaryOp::kCeil},       {"Round", UnaryOp::kRound},
    {"Sigmoid", UnaryOp::kSigmoid}, {"Softplus", UnaryOp::kSoftplus}, {"Softsign", UnaryOp::kSoftsign},
    {"HardSwish", UnaryOp::kHardSwish}, {"BitwiseNot", UnaryOp::kBitwiseNot},
};

// Bounds of T's range: +-infinity for floats, the extremes for integers.
template <class T>
T lowestOf() {
  if constexpr (std::numeric_limits<T>::is_integer) return std::numeric_limits<T>::lowest();
  else return kernels::fromFloat<T>(-std::numeric_limits<float>::infinity());
}
template <class T>
T highestOf() {
  if constexpr (std::numeric_limits<T>::is_integer) return std::numeric_limits<T>::max();
  else return kernels::fromFloat<T>(std::numeric_limits<float>::infinity());
}

// Clip: bounds are attributes before opset 11 and optional scalar inputs since.
void clip(KernelContext& ctx) {
  const HostTensor& in = ctx.input(0);
  HostTensor& out = ctx.allocateOutput(0);
  dispatchNumeric(in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T lo = lowestOf<T>(), hi = highestOf<T>();
    if (ctx.opset() < 11) {
      const Layer& layer = ctx.layer();
      if (layer.hasAttr("min")) lo = kernels::fromFloat<T>(layer.attrFloat("min"));
      if (layer.hasAttr("max")) hi = kernels::fromFloat<T>(layer.attrFloat("max"));
    } else {
      if (ctx.hasInput(1)) lo = ctx.input(1).data<T>()[0];
      if (ctx.hasInput(2)) hi = ctx.input(2).data<T>()[0];
    }
    kernels::clip<T>(in.data<T>(), out.data<T>(), in.elementCount(), lo, hi);
  });
}

void isInf(KernelContext& ctx) {
  const HostTensor& in = ctx.input(0);
  HostTensor& out = ctx.allocateOutput(0);
  const bool positive = ctx.layer().attrInt("detect_positive", 1) != 0;
  const bool negative = ctx.layer().attrInt("detect_negative", 1) != 0;
  dispatchFloat(in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    kernels::isInf<T>(in.data<T>(), out.data<bool>(), in.elementCount(), positive, negative);
  });
}

void isNaN(KernelContext& ctx) {
  const HostTensor& in = ctx.input(0);
  HostTensor& out = ctx.allocateOutput(0);
  dispatchFloat(in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    kernels::isNaN<T>(in.data<T>(), out.data<bool>(), in.elementCount());
  });
}

}  // namespace

void registerElementwiseUnaryCpuKernels(CpuKernelRegistry& registry) {
  for (auto [name, op] : kPlainOps) registry.add(name, [op = op](KernelContext& ctx) { unary(ctx, op, {}); });
  for (const auto& entry : kParameterisedOps)
    registry.add(entry.name, [&entry](KernelContext& ctx) { unary(ctx, entry.op, entry.params(ctx.layer())); });
  registry.add("Gelu", [](KernelContext& ctx) {
    const bool tanh = ctx.layer().attrString("approximate", "none") == "tanh";
    unary(ctx, tanh ? UnaryOp::kGeluTanh : UnaryOp::kGelu, {});
  });
  registry.add("Clip", clip);
  registry.add("Not", [](KernelContext& ctx) {
    const HostTensor& in = ctx.input(0);
    kernels::logicalNot(in.data<bool>(), ctx.allocateOutput(0).data<bool>(), in.elementCount());
  });
  registry.add("IsInf", isInf);
  registry.add("IsNaN", isNaN);
}

}  // namespace kiln
