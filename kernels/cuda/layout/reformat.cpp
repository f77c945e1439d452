#include "reformat.h"

namespace kiln::kernels::cuda {
namespace {

StridedLayout batchLayout(int64_t n, int64_t stride) {
  StridedLayout layout;
  layout.rank = 1;
  layout.dims[0] = n;
  layout.strides[0] = stride;
  return layout;
}

bool validChannels(int64_t n, int64_t c, int64_t h, int64_t w, int64_t& padded) {
  if (padded == 0) padded = c;
  return n >= 0 && c >= 0 && h >= 0 && w >= 0 && padded >= c;
}

}  // namespace

// Output [n][spatial][padded]: i = spatial position (contiguous in NCHW), j = channel.
TransposeTiles nchwToNhwcTiles(int64_t n, int64_t c, int64_t spatial, int64_t paddedChannels) {
  TransposeTiles t;
  t.rows = t.validRows = spatial;
  t.cols = paddedChannels;
  t.validCols = c;
  t.srcColStride = spatial;
  t.dstRowStride = paddedChannels;
  t.batches = n;
  t.srcBatch = batchLayout(n, c * spatial);
  t.dstBatch = batchLayout(n, spatial * paddedChannels);
  return t;
}

// Output [n][c][spatial]: i = channel (contiguous in NHWC), j = spatial position.
TransposeTiles nhwcToNchwTiles(int64_t n, int64_t c, int64_t spatial, int64_t paddedChannels) {
  TransposeTiles t;
  t.rows = t.validRows = c;
  t.cols = t.validCols = spatial;
  t.srcColStride = paddedChannels;
  t.dstRowStride = spatial;
  t.batches = n;
  t.srcBatch = batchLayout(n, spatial * paddedChannels);
  t.dstBatch = batchLayout(n, c * spatial);
  return t;
}

cudaError_t nchwToNhwc(const void* src, void* dst, int64_t n, int64_t c, int64_t h, int64_t w, ElementType type,
                       cudaStream_t stream, int64_t paddedChannels) {
  if (!validChannels(n, c, h, w, paddedChannels)) return cudaErrorInvalidValue;
  if (nchwToNhwcTakesPixelVectors(c, paddedChannels, type) && reinterpret_cast<uintptr_t>(dst) % 16 == 0)
    return nchwToPixelVectors(src, dst, n, c, h * w, type, stream);
  return launchTransposeTiles(src, dst, nchwToNhwcTiles(n, c, h * w, paddedChannels), int(elementBytes(type)), stream);
}

cudaError_t nhwcToNchw(const void* src, void* dst, int64_t n, int64_t c, int64_t h, int64_t w, ElementType type,
                       cudaStream_t stream, int64_t paddedChannels) {
  if (!validChannels(n, c, h, w, paddedChannels)) return cudaErrorInvalidValue;
  return launchTransposeTiles(src, dst, nhwcToNchwTiles(n, c, h * w, paddedChannels), int(elementBytes(type)), stream);
}

}  // namespace kiln::kernels::cuda
