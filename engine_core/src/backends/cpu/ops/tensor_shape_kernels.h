#pragma once
// Shared by the tensor_shape CPU kernel files (tensor_shape_<part>.cpp).
#include "../../../ops/tensor_shape_common.h"
#include "../cpu_kernel.h"
#include "../dispatch.h"

#include <cstdint>
#include <string>

namespace kiln::tensor_shape {

void registerViewKernels(CpuKernelRegistry& registry);
void registerCopyKernels(CpuKernelRegistry& registry);
void registerIndexingKernels(CpuKernelRegistry& registry);
void registerResizeKernels(CpuKernelRegistry& registry);

// Every input is known when a kernel runs.
ValueOf valuesOf(const KernelContext& ctx);

// Data movement only needs the element size: calls fn(uint8_t{} / uint16_t{} / uint32_t{} /
// uint64_t{}) by width, or fn(std::string{}) for strings, so one instantiation serves every dtype.
template <class Fn>
decltype(auto) dispatchStorage(DataType type, Fn&& fn) {
  if (type == DataType::kString) return fn(std::string{});
  switch (byteSize(type)) {
    case 1: return fn(uint8_t{});
    case 2: return fn(uint16_t{});
    case 4: return fn(uint32_t{});
    case 8: return fn(uint64_t{});
    default: detail::throwUnsupportedType(type, "fixed-size or string");
  }
}

// A tensor's elements as storage type T (no dtype check: T only needs the right width).
template <class T>
const T* elementsAs(const HostTensor& t) {
  return static_cast<const T*>(t.rawData());
}
template <class T>
T* elementsAs(HostTensor& t) {
  return static_cast<T*>(t.rawData());
}

// Input `input` as int64 indices into an axis of length `limit`: negative ones count from the end;
// an index outside [-limit, limit) fails naming it.
std::vector<int64_t> normalizedIndices(const KernelContext& ctx, size_t input, int64_t limit, const char* what);

// The 'axis' attribute made non-negative; the schema has range-checked it.
inline size_t axisOf(const KernelContext& ctx, size_t rank, int64_t fallback = 0) {
  int64_t axis = ctx.layer().attrInt("axis", fallback);
  return size_t(axis < 0 ? axis + int64_t(rank) : axis);
}

// Product of dims[begin, end).
inline int64_t product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t d = begin; d < end; ++d) n *= dims[d];
  return n;
}

}  // namespace kiln::tensor_shape
