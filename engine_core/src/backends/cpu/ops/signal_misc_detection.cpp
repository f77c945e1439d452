// CPU kernels for NonMaxSuppression and GridSample (numeric work in kernels/cpu/detection/ and
// kernels/cpu/sampling/).
#include "../../../ops/signal_misc.h"
#include "../dispatch.h"
#include "signal_misc.h"

#include <kernels/cpu/detection/non_max_suppression.h>

namespace kiln {
namespace {

std::vector<float> floatValues(const HostTensor& t) {
  if (t.dtype() == DataType::kFloat32) return {t.data<float>(), t.data<float>() + t.elementCount()};
  auto d = t.toDoubleVector();
  return {d.begin(), d.end()};
}

float optionalScalar(const KernelContext& ctx, size_t i, float fallback) {
  if (!ctx.hasInput(i)) return fallback;
  const HostTensor& t = ctx.input(i);
  if (t.elementCount() != 1) ctx.fail("input " + std::to_string(i) + " must hold one value, got shape " + dimsToString(t.dims()));
  return float(t.toDoubleVector()[0]);
}

void nonMaxSuppressionKernel(KernelContext& ctx) {
  const HostTensor& boxes = ctx.input(0);
  const HostTensor& scores = ctx.input(1);
  if (boxes.rank() != 3 || boxes.dim(2) != 4 || scores.rank() != 3 || scores.dim(0) != boxes.dim(0) ||
      scores.dim(2) != boxes.dim(1))
    ctx.fail("boxes must be [batch, boxes, 4] and scores [batch, classes, boxes], got " + dimsToString(boxes.dims()) +
             " and " + dimsToString(scores.dims()));
  kernels::NmsConfig config;
  config.batches = boxes.dim(0);
  config.boxes = boxes.dim(1);
  config.classes = scores.dim(1);
  config.centerPointBox = ctx.layer().attrInt("center_point_box", 0) != 0;
  config.maxPerClass = ctx.hasInput(2) && ctx.input(2).elementCount() > 0 ? ctx.input(2).toInt64Vector()[0] : 0;
  config.iouThreshold = optionalScalar(ctx, 3, 0.0f);
  if (config.iouThreshold < 0 || config.iouThreshold > 1)
    ctx.fail("iou_threshold must be in [0, 1], got " + std::to_string(config.iouThreshold));
  config.hasScoreThreshold = ctx.hasInput(4);
  config.scoreThreshold = optionalScalar(ctx, 4, 0.0f);
  std::vector<std::array<int64_t, 3>> selected;
  if (config.maxPerClass > 0) selected = kernels::nonMaxSuppression(config, floatValues(boxes).data(), floatValues(scores).data());
  HostTensor& out = ctx.allocateOutput(0, DataType::kInt64, {int64_t(selected.size()), 3});
  int64_t* dst = out.data<int64_t>();
  for (const auto& triple : selected) dst = std::copy(triple.begin(), triple.end(), dst);
}

void gridSampleKernel(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  HostTensor grid = ctx.input(1);
  if (x.rank() != 4 || grid.rank() != 4 || grid.dim(3) != 2 || grid.dim(0) != x.dim(0))
    ctx.fail("X must be [N, C, H, W] and grid [N, H_out, W_out, 2], got " + dimsToString(x.dims()) + " and " +
             dimsToString(grid.dims()));
  if (grid.dtype() != x.dtype()) {  // sample in X's type
    HostTensor converted(x.dtype(), grid.dims());
    auto values = grid.toDoubleVector();
    dispatchFloat(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      T* dst = converted.data<T>();
      for (size_t i = 0; i < values.size(); ++i) dst[i] = T(float(values[i]));
    });
    grid = converted;
  }
  kernels::GridSampleConfig config = gridSampleAttributes(ctx.layer());
  config.batch = x.dim(0);
  config.channels = x.dim(1);
  config.inHeight = x.dim(2);
  config.inWidth = x.dim(3);
  config.outHeight = grid.dim(1);
  config.outWidth = grid.dim(2);
  HostTensor& out = ctx.allocateOutput(0, x.dtype(), {config.batch, config.channels, config.outHeight, config.outWidth});
  dispatchFloat(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    kernels::gridSample2d<T>(config, x.data<T>(), grid.data<T>(), out.data<T>());
  });
}

}  // namespace

void registerDetectionCpuKernels(CpuKernelRegistry& registry) {
  registry.add("NonMaxSuppression", nonMaxSuppressionKernel);
  registry.add("GridSample", gridSampleKernel);
}

}  // namespace kiln
