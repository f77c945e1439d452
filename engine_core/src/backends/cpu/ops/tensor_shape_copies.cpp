// CPU kernels that rearrange data into a new dense tensor. Transpose, Slice, Expand, Tile,
// DepthToSpace and SpaceToDepth are all one strided copy with different source strides.
#include "../../common/tensor_shape_ops.h"
#include "tensor_shape_kernels.h"

#include <kernels/cpu/layout/pad.h>
#include <kernels/cpu/layout/rearrange.h>
#include <kernels/cpu/layout/strided_copy.h>

namespace kiln::tensor_shape {
namespace {

using kernels::denseStrides;

// out (dense, dims `dims`) from `in` starting at element `offset` with the given source strides.
void copyStrided(const HostTensor& in, int64_t offset, HostTensor& out, std::vector<int64_t> dims,
                 std::vector<int64_t> strides) {
  if (out.elementCount() == 0) return;
  dispatchStorage(in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    kernels::copyStrided(elementsAs<T>(in) + offset, elementsAs<T>(out), std::move(dims), std::move(strides));
  });
}

// Transposes `in`, viewed with dims `viewDims`, by `perm` into `out`.
void permutedCopy(const HostTensor& in, const std::vector<int64_t>& viewDims, const std::vector<int64_t>& perm,
                  HostTensor& out) {
  auto viewStrides = denseStrides(viewDims);
  std::vector<int64_t> dims, strides;
  for (int64_t axis : perm) {
    dims.push_back(viewDims[size_t(axis)]);
    strides.push_back(viewStrides[size_t(axis)]);
  }
  copyStrided(in, 0, out, dims, strides);
}

void transposeKernel(KernelContext& ctx) {
  const HostTensor& in = ctx.input(0);
  HostTensor& out = ctx.allocateOutput(0);
  permutedCopy(in, in.dims(), transposePermutation(ctx.layer(), int64_t(in.rank())), out);
}

void concatKernel(KernelContext& ctx) {
  HostTensor& out = ctx.allocateOutput(0);
  size_t axis = axisOf(ctx, out.rank());
  int64_t outer = product(out.dims(), 0, axis), inner = product(out.dims(), axis + 1, out.rank());
  std::vector<int64_t> axisSizes;
  for (size_t i = 0; i < ctx.inputCount(); ++i) axisSizes.push_back(ctx.input(i).dim(axis));
  dispatchStorage(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    std::vector<const T*> parts;
    for (size_t i = 0; i < ctx.inputCount(); ++i) parts.push_back(elementsAs<T>(ctx.input(i)));
    kernels::concatBlocks(parts, axisSizes, elementsAs<T>(out), outer, inner);
  });
}

void splitKernel(KernelContext& ctx) {
  const HostTensor& in = ctx.input(0);
  size_t axis = axisOf(ctx, in.rank());
  int64_t outer = product(in.dims(), 0, axis), inner = product(in.dims(), axis + 1, in.rank());
  std::vector<int64_t> axisSizes;
  std::vector<HostTensor*> outs;
  for (size_t i = 0; i < ctx.outputCount(); ++i) {
    axisSizes.push_back(ctx.inferredOutput(i).shape[axis].value());
    outs.push_back(ctx.hasOutput(i) ? &ctx.allocateOutput(i) : nullptr);
  }
  dispatchStorage(in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    std::vector<T*> parts;
    for (HostTensor* o : outs) parts.push_back(o ? elementsAs<T>(*o) : nullptr);
    kernels::splitBlocks(elementsAs<T>(in), parts, axisSizes, outer, inner);
  });
}

void sliceKernel(KernelContext& ctx) {
  const HostTensor& in = ctx.input(0);
  HostTensor& out = ctx.allocateOutput(0);
  auto axes = resolveSlice(ctx.layer(), in.dims(), sliceInputs(ctx.layer(), valuesOf(ctx)));
  auto inStrides = denseStrides(in.dims());
  int64_t offset = 0;
  std::vector<int64_t> strides;
  for (size_t d = 0; d < in.rank(); ++d) {
    offset += axes[d].start * inStrides[d];
    strides.push_back(axes[d].step * inStrides[d]);
  }
  copyStrided(in, offset, out, out.dims(), strides);
}

void expandKernel(KernelContext& ctx) {
  const HostTensor& in = ctx.input(0);
  HostTensor& out = ctx.allocateOutput(0);
  auto inStrides = denseStrides(in.dims());
  size_t lead = out.rank() - in.rank();
  std::vector<int64_t> strides(out.rank(), 0);  // broadcast axes read the same element again
  for (size_t d = 0; d < in.rank(); ++d)
    if (in.dim(d) != 1) strides[lead + d] = inStrides[d];
  copyStrided(in, 0, out, out.dims(), strides);
}

void tileKernel(KernelContext& ctx) {
  const HostTensor& in = ctx.input(0);
  HostTensor& out = ctx.allocateOutput(0);
  // Output axis d is [repeats, in.dim(d)] in row-major order: a copy with a zero-stride repeat axis.
  auto repeats = ctx.input(1).toInt64Vector();
  auto inStrides = denseStrides(in.dims());
  std::vector<int64_t> dims, strides;
  for (size_t d = 0; d < in.rank(); ++d) {
    dims.insert(dims.end(), {repeats[d], in.dim(d)});
    strides.insert(strides.end(), {0, inStrides[d]});
  }
  copyStrided(in, 0, out, dims, strides);
}

// Runs the pad kernel with `padsBegin` (negative crops) and a one-element tensor holding the constant.
void padInto(const HostTensor& in, HostTensor& out, const std::vector<int64_t>& padsBegin, kernels::PadMode mode,
             const HostTensor& constant) {
  if (out.elementCount() == 0) return;
  dispatchStorage(in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    kernels::pad(elementsAs<T>(in), in.dims(), elementsAs<T>(out), padsBegin, out.dims(), mode,
                 elementsAs<T>(constant)[0]);
  });
}

void padKernel(KernelContext& ctx) {
  const HostTensor& in = ctx.input(0);
  HostTensor& out = ctx.allocateOutput(0);
  const kernels::PadMode mode = padModeOf(ctx.layer());
  HostTensor constant(in.dtype(), {});
  if (ctx.opset() >= 11 && ctx.hasInput(2) && ctx.input(2).elementCount() > 0) {
    if (ctx.input(2).dtype() != in.dtype()) ctx.fail("constant_value must have the data's type");
    constant = ctx.input(2);
  } else if (ctx.opset() < 11 && in.dtype() != DataType::kString) {
    float value = ctx.layer().attrFloat("value", 0.0f);
    dispatchAny(in.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (!std::is_same_v<T, std::string>) constant.data<T>()[0] = kernels::fromFloat<T>(value);
    });
  }
  auto pads = *padAmounts(ctx.layer(), int64_t(in.rank()), valuesOf(ctx));
  padInto(in, out, std::vector<int64_t>(pads.begin(), pads.begin() + ptrdiff_t(in.rank())), mode, constant);
}

void centerCropPadKernel(KernelContext& ctx) {
  const HostTensor& in = ctx.input(0);
  HostTensor& out = ctx.allocateOutput(0);
  // Centred: crop (in - out) / 2 from the start, or pad (out - in) / 2 before.
  std::vector<int64_t> padsBegin(in.rank());
  for (size_t d = 0; d < in.rank(); ++d) {
    int64_t diff = out.dim(d) - in.dim(d);
    padsBegin[d] = diff >= 0 ? diff / 2 : -((-diff) / 2);
  }
  padInto(in, out, padsBegin, kernels::PadMode::kConstant, HostTensor(in.dtype(), {}));
}

void depthToSpaceKernel(KernelContext& ctx) {
  const HostTensor& in = ctx.input(0);
  HostTensor& out = ctx.allocateOutput(0);
  int64_t b = ctx.layer().attrInt("blocksize"), n = in.dim(0), c = in.dim(1) / (b * b), h = in.dim(2), w = in.dim(3);
  if (ctx.layer().attrString("mode", "DCR") == "DCR")
    permutedCopy(in, {n, b, b, c, h, w}, {0, 3, 4, 1, 5, 2}, out);
  else
    permutedCopy(in, {n, c, b, b, h, w}, {0, 1, 4, 2, 5, 3}, out);
}

void spaceToDepthKernel(KernelContext& ctx) {
  const HostTensor& in = ctx.input(0);
  HostTensor& out = ctx.allocateOutput(0);
  int64_t b = ctx.layer().attrInt("blocksize"), n = in.dim(0), c = in.dim(1), h = in.dim(2) / b, w = in.dim(3) / b;
  permutedCopy(in, {n, c, h, b, w, b}, {0, 3, 5, 1, 2, 4}, out);
}

void triluKernel(KernelContext& ctx) {
  const HostTensor& in = ctx.input(0);
  HostTensor& out = ctx.allocateOutput(0);
  int64_t k = ctx.hasInput(1) ? ctx.input(1).toInt64Vector().at(0) : 0;
  bool upper = ctx.layer().attrInt("upper", 1) != 0;
  int64_t rows = in.dim(in.rank() - 2), cols = in.dim(in.rank() - 1);
  if (in.elementCount() == 0) return;
  dispatchStorage(in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    kernels::triangle(elementsAs<T>(in), elementsAs<T>(out), in.elementCount() / (rows * cols), rows, cols, k, upper);
  });
}

void reverseSequenceKernel(KernelContext& ctx) {
  const HostTensor& in = ctx.input(0);
  HostTensor& out = ctx.allocateOutput(0);
  bool batchMajor = ctx.layer().attrInt("batch_axis", 1) == 0;
  int64_t time = in.dim(batchMajor ? 1 : 0), batch = in.dim(batchMajor ? 0 : 1);
  auto lengths = ctx.input(1).toInt64Vector();
  if (int64_t(lengths.size()) != batch)
    ctx.fail("sequence_lens has " + std::to_string(lengths.size()) + " entries; it needs one per batch (" +
             std::to_string(batch) + ")");
  for (int64_t len : lengths)
    if (len < 0 || len > time)
      ctx.fail("sequence length " + std::to_string(len) + " is outside [0, " + std::to_string(time) + "]");
  dispatchStorage(in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    kernels::reverseSequence(elementsAs<T>(in), elementsAs<T>(out), time, batch, product(in.dims(), 2, in.rank()),
                             lengths.data(), batchMajor);
  });
}

}  // namespace

void registerCopyKernels(CpuKernelRegistry& registry) {
  registry.add("Transpose", transposeKernel);
  registry.add("Concat", concatKernel);
  registry.add("Split", splitKernel);
  registry.add("Slice", sliceKernel);
  registry.add("Expand", expandKernel);
  registry.add("Tile", tileKernel);
  registry.add("Pad", padKernel);
  registry.add("CenterCropPad", centerCropPadKernel);
  registry.add("DepthToSpace", depthToSpaceKernel);
  registry.add("SpaceToDepth", spaceToDepthKernel);
  registry.add("Trilu", triluKernel);
  registry.add("ReverseSequence", reverseSequenceKernel);
}

}  // namespace kiln::tensor_shape
