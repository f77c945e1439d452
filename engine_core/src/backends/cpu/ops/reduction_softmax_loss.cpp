// CPU kernels for NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.
#include <kernels/cpu/softmax/softmax.h>

#include "../../../ops/reduction_softmax.h"
#include "../cpu_kernel.h"
#include "../dispatch.h"

namespace kiln {
namespace {

// loss (output 0) from log-probabilities [N, C, d...] and the target/weight inputs 1 and 2.
void computeLoss(KernelContext& ctx, const HostTensor& logProb) {
  const Layer& layer = ctx.layer();
  const HostTensor& target = ctx.input(1);
  const int64_t batch = logProb.dim(0), classes = logProb.dim(1);
  const int64_t spatial = batch * classes == 0 ? 0 : logProb.elementCount() / (batch * classes);
  const std::optional<int64_t> ignore = lossIgnoreIndex(layer);
  HostTensor& loss = ctx.allocateOutput(0);
  int64_t bad = -1;
  dispatchFloat(logProb.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* weight = ctx.hasInput(2) ? ctx.input(2).data<T>() : nullptr;
    auto run = [&](auto indexTag) {
      using I = decltype(indexTag);
      bad =
          kernels::negativeLogLikelihoodLoss<T, I>(logProb.data<T>(), target.data<I>(), weight, loss.data<T>(), batch,
                                                   classes, spatial, lossReductionOf(layer), ignore ? &*ignore : nullptr);
    };
    if (target.dtype() == DataType::kInt32)
      run(int32_t{});
    else
      run(int64_t{});
  });
  if (bad >= 0) {
    const int64_t value = target.toInt64Vector()[size_t(bad)];
    ctx.fail("target value " + std::to_string(value) + " at position " + std::to_string(bad) +
             " is not a class index in [0, " + std::to_string(classes) + ")" +
             (ignore ? " nor ignore_index " + std::to_string(*ignore) : std::string()));
  }
}

void runNegativeLogLikelihoodLoss(KernelContext& ctx) { computeLoss(ctx, ctx.input(0)); }

// log_softmax over the class axis (output 1 when requested), then the NLL loss.
void runSoftmaxCrossEntropyLoss(KernelContext& ctx) {
  const HostTensor& scores = ctx.input(0);
  HostTensor logProb = ctx.hasOutput(1) ? ctx.allocateOutput(1) : HostTensor(scores.dtype(), scores.dims());
  const int64_t batch = scores.dim(0), classes = scores.dim(1);
  const int64_t spatial = batch * classes == 0 ? 0 : scores.elementCount() / (batch * classes);
  dispatchFloat(scores.dtype(), [&](auto tag) {
    using T = decltype(tag);
    kernels::softmax<T>(kernels::SoftmaxKind::kLogSoftmax, scores.data<T>(), logProb.data<T>(), batch, classes,
                        spatial);
  });
  computeLoss(ctx, logProb);
}

}  // namespace

void registerLossCpuKernels(CpuKernelRegistry& registry) {
  registry.add("NegativeLogLikelihoodLoss", runNegativeLogLikelihoodLoss);
  registry.add("SoftmaxCrossEntropyLoss", runSoftmaxCrossEntropyLoss);
}

}  // namespace kiln
