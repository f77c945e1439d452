// CPU kernels of the indexed ops. Indices are validated here (an out-of-range index fails naming
// it); the kernels in kernels/cpu/layout receive in-range offsets.
#include "../../common/tensor_shape_ops.h"
#include "tensor_shape_kernels.h"

#include <kernels/cpu/layout/gather_scatter.h>
#include <kernels/cpu/layout/select.h>
#include <kernels/cpu/layout/strided_copy.h>

namespace kiln::tensor_shape {
namespace {

void gatherKernel(KernelContext& ctx) {
  const HostTensor& data = ctx.input(0);
  size_t axis = axisOf(ctx, data.rank());
  std::vector<int64_t> indices = normalizedIndices(ctx, 1, data.dim(axis), "index");
  HostTensor& out = ctx.allocateOutput(0);
  if (out.elementCount() == 0) return;
  dispatchStorage(data.dtype(), [&](auto tag) {
    using T = decltype(tag);
    kernels::gatherAxis(elementsAs<T>(data), elementsAs<T>(out), product(data.dims(), 0, axis), data.dim(axis),
                        product(data.dims(), axis + 1, data.rank()), indices.data(), int64_t(indices.size()));
  });
}

// Offsets into data for GatherElements / ScatterElements, failing on an out-of-range index.
std::vector<int64_t> elementOffsets(const KernelContext& ctx, const HostTensor& data, const HostTensor& indices) {
  size_t axis = axisOf(ctx, data.rank());
  for (size_t d = 0; d < data.rank(); ++d)
    if (d != axis && indices.dim(d) > data.dim(d))
      ctx.fail("indices of shape " + dimsToString(indices.dims()) + " exceed data of shape " +
               dimsToString(data.dims()) + " in dim " + std::to_string(d));
  std::vector<int64_t> values = indices.toInt64Vector(), offsets(values.size());
  int64_t bad = kernels::elementOffsets(data.dims(), indices.dims(), values.data(), int64_t(axis), offsets.data());
  if (bad >= 0)
    ctx.fail("index value " + std::to_string(values[size_t(bad)]) + " is out of range for axis " + std::to_string(axis) +
             " of length " + std::to_string(data.dim(axis)));
  return offsets;
}

// Offsets of the slices that GatherND / ScatterND index: one per index tuple (the last axis of
// indices), within its batch (the first batchDims axes of data and indices).
std::vector<int64_t> tupleOffsets(const KernelContext& ctx, const HostTensor& data, const HostTensor& indices,
                                  size_t batchDims, int64_t& sliceSize) {
  size_t tuple = size_t(indices.dim(indices.rank() - 1));
  for (size_t d = 0; d < batchDims; ++d)
    if (indices.dim(d) != data.dim(d))
      ctx.fail("the batch dims of data " + dimsToString(data.dims()) + " and indices " + dimsToString(indices.dims()) +
               " must match");
  auto strides = kernels::denseStrides(data.dims());
  sliceSize = product(data.dims(), batchDims + tuple, data.rank());
  int64_t batchSize = product(data.dims(), batchDims, data.rank());
  int64_t tuples = indices.elementCount() / int64_t(tuple);
  int64_t tuplesPerBatch = tuples / std::max<int64_t>(1, product(indices.dims(), 0, batchDims));
  std::vector<int64_t> values = indices.toInt64Vector(), offsets(static_cast<size_t>(tuples));
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t offset = (t / std::max<int64_t>(1, tuplesPerBatch)) * batchSize;
    for (size_t j = 0; j < tuple; ++j) {
      int64_t dim = data.dim(batchDims + j), v = values[size_t(t) * tuple + j];
      if (v < -dim || v >= dim)
        ctx.fail("index value " + std::to_string(v) + " is out of range for data dim " + std::to_string(batchDims + j) +
                 " of length " + std::to_string(dim));
      offset += (v < 0 ? v + dim : v) * strides[batchDims + j];
    }
    offsets[size_t(t)] = offset;
  }
  return offsets;
}

void gatherElementsKernel(KernelContext& ctx) {
  const HostTensor& data = ctx.input(0);
  auto offsets = elementOffsets(ctx, data, ctx.input(1));
  HostTensor& out = ctx.allocateOutput(0);
  dispatchStorage(data.dtype(), [&](auto tag) {
    using T = decltype(tag);
    kernels::gatherSlices(elementsAs<T>(data), elementsAs<T>(out), offsets.data(), int64_t(offsets.size()), 1);
  });
}

void gatherNDKernel(KernelContext& ctx) {
  const HostTensor& data = ctx.input(0);
  int64_t sliceSize = 0;
  auto offsets = tupleOffsets(ctx, data, ctx.input(1), size_t(ctx.layer().attrInt("batch_dims", 0)), sliceSize);
  HostTensor& out = ctx.allocateOutput(0);
  dispatchStorage(data.dtype(), [&](auto tag) {
    using T = decltype(tag);
    kernels::gatherSlices(elementsAs<T>(data), elementsAs<T>(out), offsets.data(), int64_t(offsets.size()), sliceSize);
  });
}

// Writes updates (input 2) into a copy of data at the given slice offsets, with the node's reduction.
void scatterInto(KernelContext& ctx, const std::vector<int64_t>& offsets, int64_t sliceSize) {
  const HostTensor& data = ctx.input(0);
  const HostTensor& updates = ctx.input(2);
  if (updates.elementCount() != int64_t(offsets.size()) * sliceSize)
    ctx.fail("updates of shape " + dimsToString(updates.dims()) + " must hold " +
             std::to_string(int64_t(offsets.size()) * sliceSize) + " elements for these indices");
  HostTensor out = data.clone();
  const kernels::ScatterReduction reduction = scatterReductionOf(ctx.layer());
  if (reduction == kernels::ScatterReduction::kNone) {
    dispatchStorage(data.dtype(), [&](auto tag) {
      using T = decltype(tag);
      kernels::scatterSlices(elementsAs<T>(out), elementsAs<T>(updates), offsets.data(), int64_t(offsets.size()), sliceSize);
    });
  } else {
    dispatchNumeric(data.dtype(), [&](auto tag) {
      using T = decltype(tag);
      kernels::scatterSlicesReduce(out.data<T>(), updates.data<T>(), offsets.data(), int64_t(offsets.size()),
                                   sliceSize, reduction);
    });
  }
  ctx.setOutput(0, std::move(out));
}

void scatterElementsKernel(KernelContext& ctx) {
  if (ctx.input(1).dims() != ctx.input(2).dims())
    ctx.fail("indices " + dimsToString(ctx.input(1).dims()) + " and updates " + dimsToString(ctx.input(2).dims()) +
             " must have the same shape");
  scatterInto(ctx, elementOffsets(ctx, ctx.input(0), ctx.input(1)), 1);
}

void scatterNDKernel(KernelContext& ctx) {
  int64_t sliceSize = 0;
  auto offsets = tupleOffsets(ctx, ctx.input(0), ctx.input(1), 0, sliceSize);
  scatterInto(ctx, offsets, sliceSize);
}

void oneHotKernel(KernelContext& ctx) {
  const HostTensor& values = ctx.input(2);
  HostTensor& out = ctx.allocateOutput(0);
  size_t axis = axisOf(ctx, out.rank(), -1);
  int64_t depth = out.dim(axis);
  std::vector<int64_t> indices = ctx.input(0).toInt64Vector();
  for (int64_t& i : indices) i = i < 0 ? i + depth : i;  // still out of range: no hot element
  dispatchStorage(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* offOn = elementsAs<T>(values);
    kernels::oneHot(indices.data(), elementsAs<T>(out), product(out.dims(), 0, axis), depth,
                    product(out.dims(), axis + 1, out.rank()), offOn[0], offOn[1]);
  });
}

void compressKernel(KernelContext& ctx) {
  const HostTensor& data = ctx.input(0);
  const HostTensor& condition = ctx.input(1);
  const SelectionAxis along = selectionAxisOf(ctx.layer(), data.dims());
  const std::vector<int64_t>& dims = along.dims;
  const size_t axis = along.axis;
  std::vector<int64_t> selected;
  for (int64_t i = 0; i < std::min(dims[axis], condition.elementCount()); ++i)
    if (condition.data<bool>()[i]) selected.push_back(i);
  HostTensor& out = ctx.allocateOutput(0);
  if (out.elementCount() == 0) return;
  dispatchStorage(data.dtype(), [&](auto tag) {
    using T = decltype(tag);
    kernels::gatherAxis(elementsAs<T>(data), elementsAs<T>(out), along.outer, dims[axis], along.inner, selected.data(),
                        int64_t(selected.size()));
  });
}

// Calls fn with the type to compare values as: bool as uint8_t, strings, or the numeric type.
template <class Fn>
void dispatchComparable(DataType type, Fn&& fn) {
  if (type == DataType::kBool) fn(uint8_t{});
  else if (type == DataType::kString) fn(std::string{});
  else dispatchNumeric(type, fn);
}

void nonZeroKernel(KernelContext& ctx) {
  const HostTensor& in = ctx.input(0);
  if (in.dtype() == DataType::kString) ctx.fail("NonZero does not take strings");
  std::vector<int64_t> dims = in.rank() == 0 ? std::vector<int64_t>{1} : in.dims();  // a scalar acts as [1]
  dispatchComparable(in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, std::string>) {
      auto coordinates = kernels::nonZeroCoordinates(elementsAs<T>(in), dims);
      int64_t count = int64_t(coordinates.size() / dims.size());
      HostTensor& out = ctx.allocateOutput(0, DataType::kInt64, {int64_t(dims.size()), count});
      std::copy(coordinates.begin(), coordinates.end(), out.data<int64_t>());
    }
  });
}

void uniqueKernel(KernelContext& ctx) {
  const HostTensor& in = ctx.input(0);
  const SelectionAxis along = selectionAxisOf(ctx.layer(), in.dims());
  const std::vector<int64_t>& dims = along.dims;
  const size_t axis = along.axis;
  const int64_t outer = along.outer, inner = along.inner;
  kernels::UniqueSlices found;
  dispatchComparable(in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    found = kernels::uniqueSlices(elementsAs<T>(in), outer, dims[axis], inner, ctx.layer().attrInt("sorted", 1) != 0);
  });
  std::vector<int64_t> outDims = dims;
  outDims[axis] = int64_t(found.firstOccurrence.size());
  HostTensor& y = ctx.allocateOutput(0, in.dtype(), outDims);
  if (y.elementCount() > 0)
    dispatchStorage(in.dtype(), [&](auto tag) {
      using T = decltype(tag);
      kernels::gatherAxis(elementsAs<T>(in), elementsAs<T>(y), outer, dims[axis], inner, found.firstOccurrence.data(),
                          int64_t(found.firstOccurrence.size()));
    });
  for (auto [i, values] : {std::pair{size_t(1), &found.firstOccurrence}, {size_t(2), &found.inverse}, {size_t(3), &found.counts}})
    if (ctx.hasOutput(i)) ctx.setOutput(i, HostTensor::fromVector<int64_t>({int64_t(values->size())}, *values));
}

}  // namespace

void registerIndexingKernels(CpuKernelRegistry& registry) {
  registry.add("Gather", gatherKernel);
  registry.add("GatherElements", gatherElementsKernel);
  registry.add("GatherND", gatherNDKernel);
  registry.add("Scatter", scatterElementsKernel);
  registry.add("ScatterElements", scatterElementsKernel);
  registry.add("ScatterND", scatterNDKernel);
  registry.add("OneHot", oneHotKernel);
  registry.add("Compress", compressKernel);
  registry.add("NonZero", nonZeroKernel);
  registry.add("Unique", uniqueKernel);
}

}  // namespace kiln::tensor_shape
