// NonZero and Compress's selection (selection.h) over the ordered scans of select_scan.cuh.
#include "comparable.cuh"
#include "select_scan.cuh"
#include "selection.h"

namespace kiln::kernels::cuda {
namespace {

template <class T>
struct NonZeroElement {
  const T* x;
  __device__ bool operator()(int64_t i) const { return toCompute(x[i]) != ComputeType<T>(0); }
};

constexpr int kMaxCoordinateRank = 8;

template <class T>
struct WriteCoordinates {
  int64_t dims[kMaxCoordinateRank];
  int rank;
  int64_t count;
  int64_t* out;
  __device__ void operator()(int64_t i, int64_t position, bool kept) const {
    if (!kept) return;
    for (int d = rank - 1; d >= 0; --d) {
      out[d * count + position] = i % dims[d];
      i /= dims[d];
    }
  }
};

struct TrueByte {
  const bool* condition;
  __device__ bool operator()(int64_t i) const { return condition[i]; }
};

struct WritePosition {
  int64_t* selected;
  __device__ void operator()(int64_t i, int64_t position, bool kept) const {
    if (kept) selected[position] = i;
  }
};

int64_t product(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

}  // namespace

size_t nonZeroWorkspaceBytes(int64_t n) { return selectScratchBytes(n); }

cudaError_t nonZeroCount(const void* x, ElementType type, int64_t n, void* workspace, int64_t* count,
                         cudaStream_t stream) {
  const SelectScratch scratch(workspace, n);
  const cudaError_t status = dispatchComparable(type, [&](auto tag) {
    using T = decltype(tag);
    return launchCount(n, NonZeroElement<T>{static_cast<const T*>(x)}, scratch, stream);
  });
  if (status != cudaSuccess) return status;
  return cudaMemcpyAsync(count, scratch.total, sizeof(int64_t), cudaMemcpyDeviceToDevice, stream);
}

cudaError_t nonZeroWrite(const void* x, ElementType type, const std::vector<int64_t>& dims, int64_t count,
                         void* workspace, int64_t* out, cudaStream_t stream) {
  if (dims.empty() || dims.size() > size_t(kMaxCoordinateRank)) return cudaErrorInvalidValue;
  const int64_t n = product(dims);
  if (n == 0 || count == 0) return cudaSuccess;
  const SelectScratch scratch(workspace, n);
  return dispatchComparable(type, [&](auto tag) {
    using T = decltype(tag);
    WriteCoordinates<T> write{{}, int(dims.size()), count, out};
    for (size_t d = 0; d < dims.size(); ++d) write.dims[d] = dims[d];
    return launchWrite(n, NonZeroElement<T>{static_cast<const T*>(x)}, write, scratch, stream);
  });
}

size_t selectTrueWorkspaceBytes(int64_t n) { return selectScratchBytes(n); }

cudaError_t selectTrue(const bool* condition, int64_t n, void* workspace, int64_t* selected, int64_t* count,
                       cudaStream_t stream) {
  const SelectScratch scratch(workspace, n);
  if (cudaError_t status = launchCount(n, TrueByte{condition}, scratch, stream); status != cudaSuccess) return status;
  if (cudaError_t status = launchWrite(n, TrueByte{condition}, WritePosition{selected}, scratch, stream);
      status != cudaSuccess)
    return status;
  return cudaMemcpyAsync(count, scratch.total, sizeof(int64_t), cudaMemcpyDeviceToDevice, stream);
}

}  // namespace kiln::kernels::cuda
