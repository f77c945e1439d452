// CPU kernels of the broadcasting elementwise ops: arithmetic, comparisons, logic, bitwise, Pow,
// the variadic Sum/Mean/Min/Max, PRelu and Where.
#include "elementwise.h"

#include "../../common/elementwise_ops.h"

#include "../../../ops/elementwise.h"
#include "../dispatch.h"

#include <kernels/cpu/elementwise/binary.h>

#include <utility>

namespace kiln {
namespace {

using kernels::BinaryOp;

kernels::BroadcastPlan pairPlan(const KernelContext& ctx, const HostTensor& out, const HostTensor& a,
                                const HostTensor& b) {
  return kernels::BroadcastPlan(out.dims(), {a.dims(), alignLegacyBroadcast(ctx.layer(), a.rank(), b.dims())});
}

void arithmetic(KernelContext& ctx, BinaryOp op) {
  const HostTensor& a = ctx.input(0);
  const HostTensor& b = ctx.input(1);
  HostTensor& out = ctx.allocateOutput(0);
  const auto plan = pairPlan(ctx, out, a, b);
  dispatchNumeric(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    kernels::binary<T>(op, a.data<T>(), b.data<T>(), out.data<T>(), plan);
  });
}

// Comparisons, and And/Or/Xor (bool inputs).
void predicate(KernelContext& ctx, BinaryOp op) {
  const HostTensor& a = ctx.input(0);
  const HostTensor& b = ctx.input(1);
  HostTensor& out = ctx.allocateOutput(0);
  const auto plan = pairPlan(ctx, out, a, b);
  if (a.dtype() == DataType::kBool) return kernels::logical(op, a.data<bool>(), b.data<bool>(), out.data<bool>(), plan);
  dispatchNumeric(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    kernels::compare<T>(op, a.data<T>(), b.data<T>(), out.data<bool>(), plan);
  });
}

void power(KernelContext& ctx) {
  const HostTensor& base = ctx.input(0);
  const HostTensor& exponent = ctx.input(1);
  HostTensor& out = ctx.allocateOutput(0);
  const auto plan = pairPlan(ctx, out, base, exponent);
  auto withBase = [&](auto baseTag) {
    using Base = decltype(baseTag);
    dispatchNumeric(exponent.dtype(), [&](auto exponentTag) {
      using Exponent = decltype(exponentTag);
      kernels::power<Base, Exponent>(base.data<Base>(), exponent.data<Exponent>(), out.data<Base>(), plan);
    });
  };
  switch (base.dtype()) {
    case DataType::kInt32: return withBase(int32_t{});
    case DataType::kInt64: return withBase(int64_t{});
    default: return dispatchFloat(base.dtype(), withBase);
  }
}

// Sum, Mean, Min, Max: folds the inputs pairwise into the output, which has the joint shape.
void variadic(KernelContext& ctx, BinaryOp op, bool mean) {
  const size_t count = ctx.inputCount();
  if (count == 1) return ctx.setOutput(0, ctx.input(0));
  HostTensor& out = ctx.allocateOutput(0);
  dispatchNumeric(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const HostTensor& first = ctx.input(0);
    const HostTensor& second = ctx.input(1);
    kernels::binary<T>(op, first.data<T>(), second.data<T>(), out.data<T>(), broadcastPlan(out, {&first, &second}));
    for (size_t i = 2; i < count; ++i) {
      const HostTensor& next = ctx.input(i);
      kernels::binary<T>(op, out.data<T>(), next.data<T>(), out.data<T>(), broadcastPlan(out, {&out, &next}));
    }
    if (mean) {
      const T divisor = kernels::fromFloat<T>(float(count));
      kernels::binary<T>(BinaryOp::kDiv, out.data<T>(), &divisor, out.data<T>(),
                         kernels::BroadcastPlan(out.dims(), {out.dims(), {}}));
    }
  });
}

template <class T>
void selectAs(const HostTensor& condition, const HostTensor& x, const HostTensor& y, HostTensor& out,
              const kernels::BroadcastPlan& plan) {
  kernels::select<T>(condition.data<bool>(), static_cast<const T*>(x.rawData()), static_cast<const T*>(y.rawData()),
                     static_cast<T*>(out.rawData()), plan);
}

void where(KernelContext& ctx) {
  const HostTensor& condition = ctx.input(0);
  const HostTensor& x = ctx.input(1);
  const HostTensor& y = ctx.input(2);
  HostTensor& out = ctx.allocateOutput(0);
  const auto plan = broadcastPlan(out, {&condition, &x, &y});
  if (x.dtype() == DataType::kString) return selectAs<std::string>(condition, x, y, out, plan);
  switch (byteSize(x.dtype())) {
    case 1: return selectAs<uint8_t>(condition, x, y, out, plan);
    case 2: return selectAs<uint16_t>(condition, x, y, out, plan);
    case 4: return selectAs<uint32_t>(condition, x, y, out, plan);
    case 8: return selectAs<uint64_t>(condition, x, y, out, plan);
    default: ctx.fail("Where does not support " + std::string(toString(x.dtype())) + " tensors");
  }
}

}  // namespace

void registerElementwiseBinaryCpuKernels(CpuKernelRegistry& registry) {
  for (const char* name : {"Add", "Sub", "Mul", "Div", "PRelu", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "Mod", "BitShift"})
    registry.add(name, [](KernelContext& ctx) { arithmetic(ctx, *binaryOpOf(ctx.layer())); });
  for (const char* name : {"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or", "Xor"})
    registry.add(name, [](KernelContext& ctx) { predicate(ctx, *binaryOpOf(ctx.layer())); });
  registry.add("Pow", power);
  registry.add("Sum", [](KernelContext& ctx) { variadic(ctx, BinaryOp::kAdd, false); });
  registry.add("Mean", [](KernelContext& ctx) { variadic(ctx, BinaryOp::kAdd, true); });
  registry.add("Min", [](KernelContext& ctx) { variadic(ctx, BinaryOp::kMin, false); });
  registry.add("Max", [](KernelContext& ctx) { variadic(ctx, BinaryOp::kMax, false); });
  registry.add("Where", where);
}

}  // namespace kiln
