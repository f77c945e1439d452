// CPU kernels for the reduction_softmax family: Reduce*, ArgMax/ArgMin, Softmax/LogSoftmax/Hardmax,
// TopK and CumSum here; the losses in reduction_softmax_loss.cpp.
#include <kernels/cpu/reduce/reduce.h>
#include <kernels/cpu/softmax/softmax.h>

#include "../../../ops/op_families.h"
#include "../../../ops/op_schema.h"
#include "../../../ops/reduction_softmax.h"
#include "../cpu_kernel.h"
#include "../dispatch.h"

namespace kiln {

void registerLossCpuKernels(CpuKernelRegistry& registry);

namespace {

using kernels::ReduceKind;

void runReduce(KernelContext& ctx, ReduceKind kind) {
  const HostTensor& x = ctx.input(0);
  const ReduceAxes axes = resolveReduceAxes(ctx.layer(), int64_t(x.rank()), ctx.hasInput(1) ? &ctx.input(1) : nullptr);
  if (axes.noop) return ctx.setOutput(0, x);
  HostTensor& y = ctx.allocateOutput(0);
  dispatchNumeric(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    kernels::reduce<T>(kind, x.data<T>(), y.data<T>(), x.dims(), axes.reduced);
  });
}

void runArgExtreme(KernelContext& ctx, bool largest) {
  const HostTensor& x = ctx.input(0);
  const int64_t axis = normalizeAxis(ctx.layer(), ctx.layer().attrInt("axis", 0), int64_t(x.rank()));
  const bool selectLast = ctx.layer().attrInt("select_last_index", 0) != 0;
  const AxisSplit s = splitAtAxis(x.dims(), axis);
  HostTensor& y = ctx.allocateOutput(0);
  dispatchNumeric(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    kernels::argExtreme<T>(x.data<T>(), y.data<int64_t>(), s.outer, s.n, s.inner, largest, selectLast);
  });
}

void runSoftmax(KernelContext& ctx, kernels::SoftmaxKind kind) {
  const HostTensor& x = ctx.input(0);
  const int64_t axis = normalizeAxis(ctx.layer(), softmaxAxisAttr(ctx.layer()), int64_t(x.rank()));
  const AxisSplit s = splitAtAxis(x.dims(), axis, softmaxFlattens(ctx.layer()));
  HostTensor& y = ctx.allocateOutput(0);
  dispatchFloat(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    kernels::softmax<T>(kind, x.data<T>(), y.data<T>(), s.outer, s.n, s.inner);
  });
}

void runTopK(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  const Layer& layer = ctx.layer();
  const int64_t axis = normalizeAxis(ctx.layer(), layer.attrInt("axis", -1), int64_t(x.rank()));
  const int64_t k = layer.opsetVersion < 10 ? layer.attrInt("k") : ctx.input(1).toInt64Vector().at(0);
  const bool largest = layer.attrInt("largest", 1) != 0;  // 'sorted' = 0 allows any order; sorted is one
  const AxisSplit s = splitAtAxis(x.dims(), axis);
  HostTensor& values = ctx.allocateOutput(0);
  HostTensor& indices = ctx.allocateOutput(1);
  dispatchNumeric(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    kernels::topK<T>(x.data<T>(), values.data<T>(), indices.data<int64_t>(), s.outer, s.n, s.inner, k, largest);
  });
}

void runCumSum(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  const int64_t axis = normalizeAxis(ctx.layer(), ctx.input(1).toInt64Vector().at(0), int64_t(x.rank()));
  const bool exclusive = ctx.layer().attrInt("exclusive", 0) != 0, reverse = ctx.layer().attrInt("reverse", 0) != 0;
  const AxisSplit s = splitAtAxis(x.dims(), axis);
  HostTensor& y = ctx.allocateOutput(0);
  dispatchNumeric(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    kernels::cumulativeSum<T>(x.data<T>(), y.data<T>(), s.outer, s.n, s.inner, exclusive, reverse);
  });
}

}  // namespace

void registerReductionSoftmaxCpuKernels(CpuKernelRegistry& registry) {
  const std::pair<const char*, ReduceKind> reductions[] = {{"ReduceSum", ReduceKind::kSum},
                                                           {"ReduceMean", ReduceKind::kMean},
                                                           {"ReduceMax", ReduceKind::kMax},
                                                           {"ReduceMin", ReduceKind::kMin},
                                                           {"ReduceProd", ReduceKind::kProd},
                                                           {"ReduceL1", ReduceKind::kL1},
                                                           {"ReduceL2", ReduceKind::kL2},
                                                           {"ReduceLogSum", ReduceKind::kLogSum},
                                                           {"ReduceLogSumExp", ReduceKind::kLogSumExp},
                                                           {"ReduceSumSquare", ReduceKind::kSumSquare}};
  for (const auto& entry : reductions) {
    ReduceKind kind = entry.second;  // clang 14 cannot capture a structured binding
    registry.add(entry.first, [kind](KernelContext& ctx) { runReduce(ctx, kind); });
  }
  registry.add("ArgMax", [](KernelContext& ctx) { runArgExtreme(ctx, true); });
  registry.add("ArgMin", [](KernelContext& ctx) { runArgExtreme(ctx, false); });
  registry.add("Softmax", [](KernelContext& ctx) { runSoftmax(ctx, kernels::SoftmaxKind::kSoftmax); });
  registry.add("LogSoftmax", [](KernelContext& ctx) { runSoftmax(ctx, kernels::SoftmaxKind::kLogSoftmax); });
  registry.add("Hardmax", [](KernelContext& ctx) { runSoftmax(ctx, kernels::SoftmaxKind::kHardmax); });
  registry.add("TopK", runTopK);
  registry.add("CumSum", runCumSum);
  registerLossCpuKernels(registry);
}

}  // namespace kiln
