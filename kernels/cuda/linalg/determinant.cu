#include "linalg.h"

#include <kernels/cpu/gemm/lu_determinant.h>

#include <kernels/cuda/common/device_types.cuh>
#include <kernels/cuda/common/launch.cuh>

#include <type_traits>

namespace kiln::kernels::cuda {
namespace {

template <class T>
__global__ void determinantKernel(const T* in, T* out, int64_t batch, int64_t n, double* workspace) {
  KILN_GRID_STRIDE_LOOP(b, batch) {
    double* lu = workspace + b * n * n;
    for (int64_t i = 0; i < n * n; ++i) lu[i] = double(toCompute(in[b * n * n + i]));
    const double det = luDeterminant(lu, n);
    if constexpr (std::is_same_v<T, double>) out[b] = det;
    else out[b] = fromCompute<T>(float(det));
  }
}

}  // namespace

cudaError_t determinants(const void* in, void* out, int64_t batch, int64_t n, void* workspace, ElementType type,
                         cudaStream_t stream) {
  if (batch < 0 || n < 0) return cudaErrorInvalidValue;
  return dispatchFloat(type, [&](auto tag) {
    using T = decltype(tag);
    if (batch == 0) return cudaSuccess;
    determinantKernel<T><<<gridFor(batch, 64), 64, 0, stream>>>(static_cast<const T*>(in), static_cast<T*>(out), batch,
                                                                n, static_cast<double*>(workspace));
    return launchStatus();
  });
}

}  // namespace kiln::kernels::cuda
