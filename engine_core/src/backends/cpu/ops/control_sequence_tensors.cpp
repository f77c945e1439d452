#include "control_sequence_tensors.h"

#include "../dispatch.h"

#include <kernels/cpu/sequence/copy_rows.h>

namespace kiln {
namespace {

int64_t product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end; ++i) n *= dims[i];
  return n;
}

}  // namespace

HostTensor sliceAlongAxis(const HostTensor& in, size_t axis, int64_t start, int64_t length) {
  std::vector<int64_t> dims = in.dims();
  int64_t outer = product(dims, 0, axis);
  int64_t inner = product(dims, axis + 1, dims.size());
  int64_t extent = dims[axis];
  dims[axis] = length;
  HostTensor out(in.dtype(), dims);
  dispatchAny(in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    kernels::copyRows(in.data<T>() + start * inner, extent * inner, out.data<T>(), length * inner, outer,
                      length * inner);
  });
  return out;
}

HostTensor itemAlongAxis(const HostTensor& in, size_t axis, int64_t index) {
  std::vector<int64_t> dims = in.dims();
  dims.erase(dims.begin() + int64_t(axis));
  return sliceAlongAxis(in, axis, index, 1).reshaped(std::move(dims));
}

HostTensor concatAlongAxis(const KernelContext& ctx, const std::vector<HostTensor>& parts, size_t axis) {
  if (parts.empty()) ctx.fail("there are no tensors to join");
  const HostTensor& first = parts.front();
  std::vector<int64_t> dims = first.dims();
  if (axis >= dims.size()) ctx.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(dims.size()));
  int64_t total = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const HostTensor& p = parts[i];
    if (p.dtype() != first.dtype())
      ctx.fail("tensor " + std::to_string(i) + " is " + std::string(toString(p.dtype())) + " but tensor 0 is " +
               std::string(toString(first.dtype())) + "; joined tensors need one type");
    bool compatible = p.rank() == first.rank();
    for (size_t d = 0; compatible && d < dims.size(); ++d) compatible = d == axis || p.dim(d) == dims[d];
    if (!compatible)
      ctx.fail("tensor " + std::to_string(i) + " has shape " + dimsToString(p.dims()) + ", which does not fit " +
               dimsToString(first.dims()) + " when joining on axis " + std::to_string(axis));
    total += p.dim(axis);
  }
  dims[axis] = total;
  HostTensor out(first.dtype(), dims);
  int64_t outer = product(dims, 0, axis);
  int64_t inner = product(dims, axis + 1, dims.size());
  dispatchAny(first.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* dst = out.data<T>();
    for (const HostTensor& p : parts) {
      int64_t row = p.dim(axis) * inner;
      kernels::copyRows(p.data<T>(), row, dst, total * inner, outer, row);
      dst += row;
    }
  });
  return out;
}

HostTensor stackAlongAxis(const KernelContext& ctx, const std::vector<HostTensor>& parts, size_t axis) {
  if (parts.empty()) ctx.fail("there are no tensors to stack");
  std::vector<HostTensor> expanded;
  expanded.reserve(parts.size());
  for (size_t i = 0; i < parts.size(); ++i) {
    if (parts[i].dims() != parts[0].dims())
      ctx.fail("tensor " + std::to_string(i) + " has shape " + dimsToString(parts[i].dims()) + " but tensor 0 has " +
               dimsToString(parts[0].dims()) + "; stacked tensors need one shape");
    std::vector<int64_t> dims = parts[i].dims();
    dims.insert(dims.begin() + int64_t(axis), 1);
    expanded.push_back(parts[i].reshaped(std::move(dims)));
  }
  return concatAlongAxis(ctx, expanded, axis);
}

int64_t scalarInput(const KernelContext& ctx, size_t i, const char* what) {
  const HostTensor& t = ctx.input(i);
  if (t.elementCount() != 1)
    ctx.fail(std::string(what) + " (input " + std::to_string(i) + ") must hold one value, got shape " +
             dimsToString(t.dims()));
  if (!isInteger(t.dtype()) && t.dtype() != DataType::kBool)
    ctx.fail(std::string(what) + " (input " + std::to_string(i) + ") must be an integer or bool, got " +
             std::string(toString(t.dtype())));
  return t.toInt64Vector()[0];
}

}  // namespace kiln
