#pragma once
// The sliding-window geometry shared by convolutions and pools. Every op is run as a 3-D window:
// 1-D and 2-D ops fill the leading axes with size 1 (kernel 1, stride 1, no padding), so one set of
// loops serves all ranks and the innermost loop always runs along the contiguous W axis.
#include <cstdint>

namespace kiln::kernels {

constexpr int kMaxSpatialRank = 3;

struct SpatialWindow {
  int64_t in[kMaxSpatialRank] = {1, 1, 1};        // input D, H, W
  int64_t out[kMaxSpatialRank] = {1, 1, 1};       // output D, H, W
  int64_t kernel[kMaxSpatialRank] = {1, 1, 1};
  int64_t stride[kMaxSpatialRank] = {1, 1, 1};
  int64_t dilation[kMaxSpatialRank] = {1, 1, 1};
  int64_t padBegin[kMaxSpatialRank] = {0, 0, 0};
  int64_t padEnd[kMaxSpatialRank] = {0, 0, 0};  // only AveragePool with count_include_pad reads it

  int64_t inSize() const { return in[0] * in[1] * in[2]; }
  int64_t outSize() const { return out[0] * out[1] * out[2]; }
  int64_t kernelSize() const { return kernel[0] * kernel[1] * kernel[2]; }
  bool isPointwise() const {  // 1x1 kernel, stride 1, no padding: the image is its own im2col
    for (int a = 0; a < kMaxSpatialRank; ++a)
      if (kernel[a] != 1 || stride[a] != 1 || padBegin[a] != 0 || in[a] != out[a]) return false;
    return true;
  }
  // Input coordinate on axis `a` of output position `o` and kernel tap `k` (may lie in padding).
  int64_t inputCoord(int a, int64_t o, int64_t k) const {
    return o * stride[a] - padBegin[a] + k * dilation[a];
  }
};

// The output positions [begin, end) along W whose input coordinate for kernel tap `k` is inside the
// image; lets inner loops run without bounds checks.
inline void validOutputRange(const SpatialWindow& w, int64_t k, int64_t& begin, int64_t& end) {
  const int64_t s = w.stride[2];
  const int64_t offset = k * w.dilation[2] - w.padBegin[2];  // input coord = o * s + offset
  begin = offset >= 0 ? 0 : (-offset + s - 1) / s;
  const int64_t lastValid = w.in[2] - 1 - offset;  // o * s <= lastValid
  end = lastValid < 0 ? 0 : lastValid / s + 1;
  if (end > w.out[2]) end = w.out[2];
  if (begin > end) begin = end;
}

}  // namespace kiln::kernels
