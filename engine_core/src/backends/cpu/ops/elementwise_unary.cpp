// CPU kernels of the one-input elementwise ops: math functions, activations, Clip, Not, BitwiseNot,
// IsNaN and IsInf.
#include "elementwise.h"

#include "../../common/elementwise_ops.h"
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
  for (const char* name : {"Neg", "Abs", "Sign", "Relu", "Sqrt", "Reciprocal", "Exp", "Log", "Sin", "Cos", "Tan",
                           "Asin", "Acos", "Atan", "Sinh", "Cosh", "Tanh", "Asinh", "Acosh", "Atanh", "Erf",
                           "Floor", "Ceil", "Round", "Sigmoid", "Softplus", "Softsign", "HardSwish", "BitwiseNot",
                           "LeakyRelu", "Elu", "Celu", "ThresholdedRelu", "Selu", "HardSigmoid", "Shrink", "Gelu"})
    registry.add(name, [](KernelContext& ctx) {
      const UnaryChoice choice = *unaryOpOf(ctx.layer());
      unary(ctx, choice.op, choice.params);
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
