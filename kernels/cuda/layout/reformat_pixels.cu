// NCHW -> channel-padded NHWC for images of few channels (an RGB stem's input): a thread writes one
// pixel's padded channels, 16 bytes in one store, reading each channel plane at that pixel (loads
// coalesced across the warp). The tiled transpose would use a quarter of each 32-wide tile there.
#include "reformat.h"

#include <kernels/cuda/common/launch.cuh>

namespace kiln::kernels::cuda {
namespace {

template <class T>
__global__ void nchwToPixelVectorsKernel(const T* __restrict__ src, uint4* __restrict__ dst, int64_t n, int64_t c,
                                         int64_t spatial) {
  KILN_GRID_STRIDE_LOOP(pixel, n * spatial) {
    const int64_t image = pixel / spatial, at = pixel - image * spatial;
    const T* plane = src + image * c * spatial + at;
    uint4 packed = make_uint4(0, 0, 0, 0);
    T* channels = reinterpret_cast<T*>(&packed);
    for (int64_t ch = 0; ch < c; ++ch) channels[ch] = plane[ch * spatial];
    dst[pixel] = packed;
  }
}

}  // namespace

bool nchwToNhwcTakesPixelVectors(int64_t c, int64_t paddedChannels, ElementType type) {
  const int64_t bytes = int64_t(elementBytes(type));
  return (bytes == 2 || bytes == 4) && c >= 1 && paddedChannels * bytes == 16;
}

cudaError_t nchwToPixelVectors(const void* src, void* dst, int64_t n, int64_t c, int64_t spatial, ElementType type,
                               cudaStream_t stream) {
  const int64_t pixels = n * spatial;
  if (pixels == 0) return cudaSuccess;
  if (elementBytes(type) == 2)
    nchwToPixelVectorsKernel<uint16_t><<<gridFor(pixels), kThreadsPerBlock, 0, stream>>>(
        static_cast<const uint16_t*>(src), static_cast<uint4*>(dst), n, c, spatial);
  else
    nchwToPixelVectorsKernel<uint32_t><<<gridFor(pixels), kThreadsPerBlock, 0, stream>>>(
        static_cast<const uint32_t*>(src), static_cast<uint4*>(dst), n, c, spatial);
  return launchStatus();
}

}  // namespace kiln::kernels::cuda
