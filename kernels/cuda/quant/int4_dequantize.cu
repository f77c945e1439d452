#include "int4_dequantize.h"

#include <kernels/cpu/quant/int4_weight_format.h>
#include <kernels/cuda/common/device_types.cuh>
#include <kernels/cuda/common/launch.cuh>

#include <algorithm>
#include <climits>

namespace kiln::kernels::cuda {
namespace {

// A thread per packed byte: x over the columns n (the writes of W's rows are whole lines), y over
// the byte rows r (k = 2r and 2r + 1; group g's byte j holds k = g * G + 2j, so a column's bytes
// run along K for any even G). One 32-bit division a byte, none per element.
template <class T>
__global__ void dequantizeKernel(const __grid_constant__ Int4WeightsView w, int64_t groups, int64_t bytesPerColumn,
                                 T* __restrict__ out) {
  const int64_t n = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (n >= w.n) return;
  const uint32_t groupSize = uint32_t(w.groupSize);
  for (int64_t r = blockIdx.y; 2 * r < w.k; r += gridDim.y) {
    const int64_t k = 2 * r, cell = n * groups + uint32_t(k) / groupSize;  // K < 2^31 (checked at launch)
    const uint8_t byte = w.packed[n * bytesPerColumn + r];
    const int zero = w.zeros ? int(w.zeros[cell]) : 0;
    const float scale = w.scales[cell];
    out[k * w.n + n] = fromCompute<T>(dequantizeInt4(unpackInt4(byte, 0), zero, scale));
    if (k + 1 < w.k) out[(k + 1) * w.n + n] = fromCompute<T>(dequantizeInt4(unpackInt4(byte, 1), zero, scale));
  }
}

}  // namespace

cudaError_t dequantizeInt4Weights(const Int4WeightsView& w, void* out, ElementType outType, cudaStream_t stream) {
  if (w.k <= 0 || w.n <= 0) return cudaSuccess;
  if (w.groupSize <= 0 || w.groupSize % 2 != 0 || w.groupSize > INT32_MAX || w.k > INT32_MAX)
    return cudaErrorInvalidValue;
  const int64_t groups = int4GroupCount(w.k, w.groupSize);
  const int threads = int(std::min<int64_t>(kThreadsPerBlock, (w.n + 31) / 32 * 32));
  const int64_t columnBlocks = (w.n + threads - 1) / threads;
  if (columnBlocks > INT32_MAX) return cudaErrorInvalidValue;
  const dim3 grid{unsigned(columnBlocks), unsigned(std::min<int64_t>((w.k + 1) / 2, 65535))};
  auto launch = [&](auto tag) -> cudaError_t {
    using T = decltype(tag);
    dequantizeKernel<T><<<grid, threads, 0, stream>>>(w, groups, groups * (w.groupSize / 2), static_cast<T*>(out));
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
