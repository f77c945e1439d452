// CPU kernels for the normalization op family.
#include "../../../ops/op_families.h"
#include "conv_pool_common.h"

#include <kernels/cpu/norm/norm.h>

#include <numeric>

namespace kiln {
namespace {

int64_t product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  return std::accumulate(dims.begin() + begin, dims.begin() + end, int64_t(1), std::multiplies<>());
}

// x[N, C, spatial] view of an [N, C, ...] tensor.
struct ChannelView {
  int64_t batch, channels, spatial;
};
ChannelView channelView(const HostTensor& x) {
  return {x.dim(0), x.rank() > 1 ? x.dim(1) : 1, x.rank() > 2 ? product(x.dims(), 2, x.rank()) : 1};
}

// A parameter tensor broadcast (numpy rules, right-aligned) to `target` dims, as floats.
std::vector<float> broadcastParameter(const KernelContext& ctx, size_t i, const std::vector<int64_t>& target) {
  const HostTensor& p = ctx.input(i);
  std::vector<float> values = floatValues(p);
  const int64_t count = product(target, 0, target.size());
  if (p.elementCount() == count && p.rank() <= target.size()) return values;
  if (p.rank() > target.size())
    ctx.fail("input " + std::to_string(i) + " has shape " + dimsToString(p.dims()) + " that does not broadcast to " +
             dimsToString(target));
  std::vector<int64_t> strides(target.size(), 0);  // strides of p along the target axes (0: broadcast)
  int64_t stride = 1;
  for (size_t a = 0; a < p.rank(); ++a) {
    size_t pa = p.rank() - 1 - a, ta = target.size() - 1 - a;
    if (p.dim(pa) != 1 && p.dim(pa) != target[ta])
      ctx.fail("input " + std::to_string(i) + " has shape " + dimsToString(p.dims()) + " that does not broadcast to " +
               dimsToString(target));
    strides[ta] = p.dim(pa) == 1 ? 0 : stride;
    stride *= p.dim(pa);
  }
  std::vector<float> out(static_cast<size_t>(count));
  for (int64_t flat = 0; flat < count; ++flat) {
    int64_t rest = flat, source = 0;
    for (size_t a = target.size(); a-- > 0;) {
      source += rest % target[a] * strides[a];
      rest /= target[a];
    }
    out[size_t(flat)] = values[size_t(source)];
  }
  return out;
}

void runBatchNormalization(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  const ChannelView v = channelView(x);
  const float epsilon = ctx.layer().attrFloat("epsilon", 1e-5f), momentum = ctx.layer().attrFloat("momentum", 0.9f);
  std::vector<float> scale = floatValues(ctx.input(1)), bias = floatValues(ctx.input(2));
  std::vector<float> mean = floatValues(ctx.input(3)), variance = floatValues(ctx.input(4));
  for (size_t i = 1; i <= 4; ++i)
    if (ctx.input(i).elementCount() != v.channels)
      ctx.fail("input " + std::to_string(i) + " has " + std::to_string(ctx.input(i).elementCount()) +
               " values but X has " + std::to_string(v.channels) + " channels");
  const bool training = ctx.opset() >= 14 && ctx.layer().attrInt("training_mode", 0) != 0;
  const bool wantsStatistics = training || ctx.hasOutput(1) || ctx.hasOutput(2) || ctx.hasOutput(3) || ctx.hasOutput(4);
  std::vector<float> batchMean(size_t(v.channels)), batchVariance(size_t(v.channels));
  dispatchFloat(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if (wantsStatistics) kernels::channelMoments(v.batch, v.channels, v.spatial, x.data<T>(), batchMean.data(), batchVariance.data());
    const std::vector<float>& useMean = training ? batchMean : mean;
    const std::vector<float>& useVariance = training ? batchVariance : variance;
    kernels::batchNormalization(v.batch, v.channels, v.spatial, x.data<T>(), scale.data(), bias.data(), useMean.data(),
                                useVariance.data(), epsilon, ctx.allocateOutput(0).data<T>());
  });
  if (!wantsStatistics) return;
  std::vector<float> runningMean(mean), runningVariance(variance);
  for (size_t c = 0; c < runningMean.size(); ++c) {
    runningMean[c] = mean[c] * momentum + batchMean[c] * (1 - momentum);
    runningVariance[c] = variance[c] * momentum + batchVariance[c] * (1 - momentum);
  }
  setFloatOutput(ctx, 1, runningMean);
  setFloatOutput(ctx, 2, runningVariance);
  setFloatOutput(ctx, 3, batchMean);  // opset < 14: saved mean and variance
  setFloatOutput(ctx, 4, batchVariance);
}

// Normalises rows of X with `affine` and stores Y (and, when asked, the row statistics).
void normalizeRowsInto(KernelContext& ctx, int64_t rows, int64_t rowSize, const kernels::RowAffine& affine,
                       float epsilon, std::vector<float>* mean = nullptr, std::vector<float>* invStdDev = nullptr) {
  const HostTensor& x = ctx.input(0);
  dispatchFloat(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    kernels::normalizeRows(rows, rowSize, x.data<T>(), affine, epsilon, ctx.allocateOutput(0).data<T>(),
                           mean ? mean->data() : nullptr, invStdDev ? invStdDev->data() : nullptr);
  });
}

void runInstanceNormalization(KernelContext& ctx) {
  const ChannelView v = channelView(ctx.input(0));
  std::vector<float> scale = broadcastParameter(ctx, 1, {v.channels}), bias = broadcastParameter(ctx, 2, {v.channels});
  normalizeRowsInto(ctx, v.batch * v.channels, v.spatial, {scale.data(), bias.data(), v.channels, 1, v.spatial},
                    ctx.layer().attrFloat("epsilon", 1e-5f));
}

void runLayerNormalization(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  const int64_t rank = int64_t(x.rank());
  int64_t axis = ctx.layer().attrInt("axis", -1);
  axis = axis < 0 ? axis + rank : axis;
  const std::vector<int64_t> normalized(x.dims().begin() + axis, x.dims().end());
  const int64_t outer = product(x.dims(), 0, size_t(axis)), inner = product(normalized, 0, normalized.size());
  std::vector<float> scale = broadcastParameter(ctx, 1, normalized);
  std::vector<float> bias = ctx.hasInput(2) ? broadcastParameter(ctx, 2, normalized) : std::vector<float>();
  std::vector<float> mean(static_cast<size_t>(outer)), invStdDev(static_cast<size_t>(outer));
  normalizeRowsInto(ctx, outer, inner, {scale.data(), bias.empty() ? nullptr : bias.data(), 1, inner, 1},
                    ctx.layer().attrFloat("epsilon", 1e-5f), &mean, &invStdDev);
  setFloatOutput(ctx, 1, mean);
  setFloatOutput(ctx, 2, invStdDev);
}

void runGroupNormalization(KernelContext& ctx) {
  const ChannelView v = channelView(ctx.input(0));
  const int64_t groups = ctx.layer().attrInt("num_groups"), perGroup = v.channels / groups;
  // Per-group parameters (opset 18) are spread over the group's channels.
  auto perChannel = [&](size_t i) {
    std::vector<float> values = floatValues(ctx.input(i));
    if (int64_t(values.size()) == v.channels) return values;
    std::vector<float> spread(size_t(v.channels));
    for (int64_t c = 0; c < v.channels; ++c) spread[size_t(c)] = values.at(size_t(c / perGroup));
    return spread;
  };
  std::vector<float> scale = perChannel(1), bias = perChannel(2);
  normalizeRowsInto(ctx, v.batch * groups, perGroup * v.spatial, {scale.data(), bias.data(), groups, perGroup, v.spatial},
                    ctx.layer().attrFloat("epsilon", 1e-5f));
}

void runLrn(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  const ChannelView v = channelView(x);
  const Layer& layer = ctx.layer();
  dispatchFloat(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    kernels::localResponseNormalization(v.batch, v.channels, v.spatial, x.data<T>(), layer.attrInt("size"),
                                        layer.attrFloat("alpha", 1e-4f), layer.attrFloat("beta", 0.75f),
                                        layer.attrFloat("bias", 1.0f), ctx.allocateOutput(0).data<T>());
  });
}

void runLpNormalization(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  int64_t axis = ctx.layer().attrInt("axis", -1);
  axis = axis < 0 ? axis + int64_t(x.rank()) : axis;
  const int64_t outer = product(x.dims(), 0, size_t(axis)), inner = product(x.dims(), size_t(axis) + 1, x.rank());
  dispatchFloat(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    kernels::lpNormalization(outer, x.dim(size_t(axis)), inner, x.data<T>(), ctx.layer().attrInt("p", 2),
                             ctx.allocateOutput(0).data<T>());
  });
}

void runMeanVarianceNormalization(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  std::vector<bool> reduced(x.rank(), false);
  for (int64_t axis : ctx.layer().attrInts("axes", {0, 2, 3})) reduced[size_t(axis < 0 ? axis + int64_t(x.rank()) : axis)] = true;
  dispatchFloat(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    kernels::meanVarianceNormalization(x.dims(), reduced, x.data<T>(), ctx.allocateOutput(0).data<T>());
  });
}

}  // namespace

void registerNormalizationCpuKernels(CpuKernelRegistry& registry) {
  registry.add("BatchNormalization", runBatchNormalization);
  registry.add("InstanceNormalization", runInstanceNormalization);
  registry.add("LayerNormalization", runLayerNormalization);
  registry.add("GroupNormalization", runGroupNormalization);
  registry.add("LRN", runLrn);
  registry.add("LpNormalization", runLpNormalization);
  registry.add("MeanVarianceNormalization", runMeanVarianceNormalization);
}

}  // namespace kiln
