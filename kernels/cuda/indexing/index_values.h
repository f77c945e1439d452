#pragma once
// Index tensors of the indexing ops (and OneHot) are int32 or int64. ONNX counts negative indices
// from the end of the axis. A device kernel cannot raise the CPU kernels' out-of-range error, so
// the GPU kernels never read or write out of bounds and, when given one, set a device int flag
// (`errorFlag`, may be null) to non-zero; the engine can check it after the run.
#include <kernels/cuda/common/element_type.h>
#include <kernels/cuda/common/host_device.h>

#include <cuda_runtime.h>

#include <cstdint>

namespace kiln::kernels::cuda {

// The index as a position on an axis of length `dim`, or -1 when it is outside [-dim, dim).
KILN_HD int64_t normalizeIndex(int64_t index, int64_t dim) {
  if (index < 0) index += dim;
  return index >= 0 && index < dim ? index : -1;
}

// Reads an int32 or int64 index tensor; the width is a runtime flag (uniform across a launch, so
// the branch is free) instead of a template argument, which halves the kernels instantiated.
struct IndexReader {
  const void* data = nullptr;
  bool wide = true;  // int64

  KILN_HD int64_t operator[](int64_t i) const {
    return wide ? static_cast<const int64_t*>(data)[i] : int64_t(static_cast<const int32_t*>(data)[i]);
  }
};

inline bool isIndexType(ElementType type) { return type == ElementType::kInt32 || type == ElementType::kInt64; }

template <class Fn>
cudaError_t dispatchIndexType(ElementType type, Fn&& fn) {
  switch (type) {
    case ElementType::kInt32: return fn(int32_t{});
    case ElementType::kInt64: return fn(int64_t{});
    default: return cudaErrorInvalidValue;
  }
}

inline IndexReader indexReader(const void* data, ElementType type) { return {data, type == ElementType::kInt64}; }

#if defined(__CUDACC__) || defined(KILN_CUDA_EMULATION)
// Records a bad index; every thread that finds one writes the same value, so no atomic is needed.
__device__ __forceinline__ void reportBadIndex(int* errorFlag) {
  if (errorFlag) *errorFlag = 1;
}
#endif

}  // namespace kiln::kernels::cuda
