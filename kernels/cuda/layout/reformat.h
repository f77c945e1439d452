#pragma once
// Reformat between NCHW and NHWC (channels-last) for 4-D tensors, including the channel-padded
// NHWC that fp16 tensor-core kernels want (channels rounded up to a multiple of 8, the padding
// zero). Any dtype, moved by size; asynchronous; no allocation; empty tensors are a no-op.
#include "transpose_tiles.h"

#include <kernels/cuda/common/element_type.h>

#include <cuda_runtime.h>

#include <cstdint>

namespace kiln::kernels::cuda {

// Channels rounded up to a multiple of `multiple` (8: 16 bytes of fp16).
constexpr int64_t paddedChannelCount(int64_t channels, int64_t multiple = 8) {
  return (channels + multiple - 1) / multiple * multiple;
}

// src [n, c, h, w] -> dst [n, h, w, paddedChannels]; channels c.. of dst are zero.
// paddedChannels 0 means c (plain NHWC); otherwise it must be >= c.
cudaError_t nchwToNhwc(const void* src, void* dst, int64_t n, int64_t c, int64_t h, int64_t w, ElementType type,
                       cudaStream_t stream, int64_t paddedChannels = 0);
// The one-pixel-a-thread path nchwToNhwc takes where a pixel's padded channels are 16 bytes (up to
// 8 fp16 / bf16 or 4 fp32 channels) and dst is 16-byte aligned.
bool nchwToNhwcTakesPixelVectors(int64_t c, int64_t paddedChannels, ElementType type);
cudaError_t nchwToPixelVectors(const void* src, void* dst, int64_t n, int64_t c, int64_t spatial, ElementType type,
                               cudaStream_t stream);

// src [n, h, w, paddedChannels] -> dst [n, c, h, w], dropping the padding channels.
cudaError_t nhwcToNchw(const void* src, void* dst, int64_t n, int64_t c, int64_t h, int64_t w, ElementType type,
                       cudaStream_t stream, int64_t paddedChannels = 0);

// The tiled transposes behind them (host side, tested without a GPU). `spatial` is h * w.
TransposeTiles nchwToNhwcTiles(int64_t n, int64_t c, int64_t spatial, int64_t paddedChannels);
TransposeTiles nhwcToNchwTiles(int64_t n, int64_t c, int64_t spatial, int64_t paddedChannels);

}  // namespace kiln::kernels::cuda
