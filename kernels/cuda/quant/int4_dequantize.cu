#include "int4_dequantize.h"

#include <kernels/cpu/quant/int4_weight_format.h>
#include <kernels/cuda/common/device_types.cuh>
#include <kernels/cuda/common/launch.cuh>

namespace kiln::kernels::cuda {
namespace {

// A thread per element of W [K, N], n fastest: the writes are whole lines (the packed bytes, a
// few percent of them, are read across columns).
template <class T>
__global__ void dequantizeKernel(const __grid_constant__ Int4WeightsView w, int64_t groups, T* __restrict__ out) {
  const int64_t count = w.k * w.n;
  KILN_GRID_STRIDE_LOOP(i, count) {
    const int64_t k = i / w.n, n = i - k * w.n;
    const int64_t g = k / w.groupSize, within = k - g * w.groupSize;
    const uint8_t byte = w.packed[(n * groups + g) * (w.groupSize / 2) + within / 2];
    const int zero = w.zeros ? int(w.zeros[n * groups + g]) : 0;
    out[i] = fromCompute<T>(dequantizeInt4(unpackInt4(byte, int(within & 1)), zero, w.scales[n * groups + g]));
  }
}

}  // namespace

cudaError_t dequantizeInt4Weights(const Int4WeightsView& w, void* out, ElementType outType, cudaStream_t stream) {
  if (w.k <= 0 || w.n <= 0) return cudaSuccess;
  if (w.groupSize <= 0 || w.groupSize % 2 != 0) return cudaErrorInvalidValue;
  const int64_t groups = int4GroupCount(w.k, w.groupSize);
  auto launch = [&](auto tag) -> cudaError_t {
    using T = decltype(tag);
    dequantizeKernel<T><<<gridFor(w.k * w.n), kThreadsPerBlock, 0, stream>>>(w, groups, static_cast<T*>(out));
    return launchStatus();
  };
  switch (outType) {
    case ElementType::kFloat32:
      return launch(float{});
    case ElementType::kFloat16:
      return launch(__half{});
    case ElementType::kBFloat16:
      return launch(__nv_bfloat16{});
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace kiln::kernels::cuda
