// CPU kernels for the pools of the conv_pool family.
#include "../../../ops/conv_pool_window.h"
#include "conv_pool_common.h"

#include <kernels/cpu/pool/pool.h>

namespace kiln {
namespace {

std::vector<int64_t> spatialOf(const std::vector<int64_t>& dims) { return {dims.begin() + 2, dims.end()}; }

kernels::SpatialWindow poolWindow(const KernelContext& ctx, const HostTensor& x) {
  WindowAttributes attrs = readWindowAttributes(ctx.layer(), x.rank() - 2);
  return makeSpatialWindow(ctx.layer(), attrs, spatialOf(x.dims()));
}

// Runs pool(T, const T* x, T* y) for float inputs, computing in float32 or float64.
template <class Fn>
void runFloatPool(KernelContext& ctx, Fn&& pool) {
  const HostTensor& x = ctx.input(0);
  withFloatComputeType(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    constexpr DataType type = DataTypeOf<T>::value;
    HostTensor xs = convertFloatTensor(x, type);
    computeOutput(ctx, 0, type, [&](HostTensor& y) { pool(xs.data<T>(), y.data<T>()); });
  });
}

void runMaxPool(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  const kernels::SpatialWindow window = poolWindow(ctx, x);
  const int64_t planes = x.dim(0) * x.dim(1);
  const bool columnMajor = ctx.layer().attrInt("storage_order", 0) == 1;
  int64_t* indices = ctx.hasOutput(1) ? ctx.allocateOutput(1).data<int64_t>() : nullptr;
  auto pool = [&](const auto* in, auto* out) { kernels::maxPool(window, planes, in, out, indices, columnMajor); };
  if (x.dtype() == DataType::kInt8) pool(x.data<int8_t>(), ctx.allocateOutput(0).data<int8_t>());
  else if (x.dtype() == DataType::kUInt8) pool(x.data<uint8_t>(), ctx.allocateOutput(0).data<uint8_t>());
  else runFloatPool(ctx, pool);
}

void runAveragePool(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  const kernels::SpatialWindow window = poolWindow(ctx, x);
  const bool includePad = ctx.layer().attrInt("count_include_pad", 0) != 0;
  runFloatPool(ctx, [&](const auto* in, auto* out) {
    kernels::averagePool(window, x.dim(0) * x.dim(1), in, out, includePad);
  });
}

void runLpPool(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  const kernels::SpatialWindow window = poolWindow(ctx, x);
  const float p = float(ctx.layer().attrInt("p", 2));
  runFloatPool(ctx, [&](const auto* in, auto* out) { kernels::lpPool(window, x.dim(0) * x.dim(1), in, out, p); });
}

template <kernels::GlobalPoolKind kKind>
void runGlobalPool(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  const int64_t planes = x.dim(0) * x.dim(1);
  const float p = float(ctx.layer().attrInt("p", 2));
  runFloatPool(ctx, [&](const auto* in, auto* out) {
    kernels::globalPool(kKind, planes, x.elementCount() / std::max<int64_t>(planes, 1), in, out, p);
  });
}

// Y = 0 except Y[I[i]] = X.flat[i]: the inverse of MaxPool with indices. Indices address the
// default unpooled shape; an explicit output_shape keeps each element's coordinates (the extra
// rows and columns stay zero).
void runMaxUnpool(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  const HostTensor& indices = ctx.input(1);
  if (indices.dims() != x.dims())
    ctx.fail("input I has shape " + dimsToString(indices.dims()) + " but X has " + dimsToString(x.dims()) +
             "; they must match (I is MaxPool's Indices output)");
  HostTensor& y = ctx.allocateZeroedOutput(0);
  const WindowAttributes attrs = readWindowAttributes(ctx.layer(), x.rank() - 2);
  std::vector<int64_t> pooledFrom = {x.dim(0), x.dim(1)};
  for (size_t i = 0; i + 2 < x.rank(); ++i) pooledFrom.push_back(maxUnpoolOutputSize(attrs, i, x.dim(i + 2)));
  const int64_t pooledCount = elementCount(pooledFrom);
  auto outputIndex = [&](int64_t index) {
    if (pooledFrom == y.dims()) return index;
    int64_t out = 0, stride = 1;
    for (size_t a = pooledFrom.size(); a-- > 0; stride *= y.dim(a)) {
      out += index % pooledFrom[a] * stride;
      index /= pooledFrom[a];
    }
    return out;
  };
  const int64_t* where = indices.data<int64_t>();
  dispatchFloat(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* in = x.data<T>();
    T* out = y.data<T>();
    for (int64_t i = 0; i < x.elementCount(); ++i) {
      const int64_t target = where[i] >= 0 && where[i] < pooledCount ? outputIndex(where[i]) : -1;
      if (target < 0 || target >= y.elementCount())
        ctx.fail("index " + std::to_string(where[i]) + " in I is outside the unpooled tensor " +
                 dimsToString(pooledFrom) + "; check kernel_shape, strides and pads");
      out[target] = in[i];
    }
  });
}

void checkBatchIndex(const KernelContext& ctx, int64_t index, int64_t batch) {
  if (index < 0 || index >= batch)
    ctx.fail("a roi refers to batch item " + std::to_string(index) + " but X has " + std::to_string(batch));
}

void runMaxRoiPool(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  const std::vector<float> rois = floatValues(ctx.input(1));
  const int64_t numRois = ctx.input(1).dim(0);
  for (int64_t r = 0; r < numRois; ++r) checkBatchIndex(ctx, int64_t(rois[size_t(r * 5)]), x.dim(0));
  const std::vector<int64_t> pooled = ctx.layer().attrInts("pooled_shape");
  const float scale = ctx.layer().attrFloat("spatial_scale", 1.0f);
  runFloatPool(ctx, [&](const auto* in, auto* out) {
    kernels::maxRoiPool(x.dim(1), x.dim(2), x.dim(3), in, numRois, rois.data(), scale, pooled[0], pooled[1], out);
  });
}

void runRoiAlign(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  const Layer& layer = ctx.layer();
  const std::vector<float> rois = floatValues(ctx.input(1));
  const std::vector<int64_t> batchIndices = ctx.input(2).toInt64Vector();
  const int64_t numRois = ctx.input(1).dim(0);
  if (int64_t(batchIndices.size()) != numRois)
    ctx.fail("input batch_indices has " + std::to_string(batchIndices.size()) + " values for " +
             std::to_string(numRois) + " rois");
  for (int64_t b : batchIndices) checkBatchIndex(ctx, b, x.dim(0));
  kernels::RoiAlignParams params = roiAlignAttributes(layer);
  params.channels = x.dim(1);
  params.height = x.dim(2);
  params.width = x.dim(3);
  runFloatPool(ctx, [&](const auto* in, auto* out) {
    kernels::roiAlign(params, in, numRois, rois.data(), batchIndices.data(), out);
  });
}

}  // namespace

void registerPoolTactics(CpuKernelRegistry& registry);

void registerPoolingCpuKernels(CpuKernelRegistry& registry) {
  registerPoolTactics(registry);
  registry.add("MaxPool", runMaxPool);
  registry.add("AveragePool", runAveragePool);
  registry.add("LpPool", runLpPool);
  registry.add("GlobalAveragePool", runGlobalPool<kernels::GlobalPoolKind::kAverage>);
  registry.add("GlobalMaxPool", runGlobalPool<kernels::GlobalPoolKind::kMax>);
  registry.add("GlobalLpPool", runGlobalPool<kernels::GlobalPoolKind::kLp>);
  registry.add("MaxUnpool", runMaxUnpool);
  registry.add("MaxRoiPool", runMaxRoiPool);
  registry.add("RoiAlign", runRoiAlign);
}

}  // namespace kiln
