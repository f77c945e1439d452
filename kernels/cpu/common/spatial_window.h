#pragma once
// The sliding-window geometry shared by convolutions and pools. Every op is run as a 3-D window:
// 1-D and 2-D ops fill the leading axes with size 1 (kernel 1, stride 1, no padding), so one set of
// loops serves all ranks and the innermost loop always runs along the contiguous W axis.
#include <algorithm>
#include <cstdint>
#include <vector>

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

  bool operator==(const SpatialWindow&) const = default;

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
  // Offset of input row (d, h) within a plane.
  int64_t inputRow(int64_t d, int64_t h) const { return (d * in[1] + h) * in[2]; }
};

// One kernel column kw seen along W: the output positions [begin, end) whose tap lies inside the
// image, each reading input position o * stride + offset. Lets inner loops run without bounds checks.
struct WidthTap {
  int64_t begin, end, offset;
};

// The WidthTap of every kernel column, computed once per window.
inline std::vector<WidthTap> widthTaps(const SpatialWindow& w) {
  std::vector<WidthTap> taps(size_t(w.kernel[2]));
  const int64_t s = w.stride[2];
  for (int64_t kw = 0; kw < w.kernel[2]; ++kw) {
    WidthTap& t = taps[size_t(kw)];
    t.offset = kw * w.dilation[2] - w.padBegin[2];
    const int64_t lastValid = w.in[2] - 1 - t.offset;  // o * s <= lastValid
    t.end = lastValid < 0 ? 0 : std::min(lastValid / s + 1, w.out[2]);
    t.begin = std::min(t.offset >= 0 ? 0 : (-t.offset + s - 1) / s, t.end);
  }
  return taps;
}

namespace detail {
// Calls visit(i, j, inputRow) for the pairs i < countD, j < countH whose input row (coordD(i),
// coordH(j)) lies inside the image; inputRow is its offset within a plane.
template <class CoordD, class CoordH, class Visit>
inline void forEachPairInImage(const SpatialWindow& w, int64_t countD, CoordD coordD, int64_t countH, CoordH coordH,
                               Visit&& visit) {
  for (int64_t i = 0; i < countD; ++i) {
    const int64_t id = coordD(i);
    if (id < 0 || id >= w.in[0]) continue;
    for (int64_t j = 0; j < countH; ++j) {
      const int64_t ih = coordH(j);
      if (ih >= 0 && ih < w.in[1]) visit(i, j, w.inputRow(id, ih));
    }
  }
}
}  // namespace detail

// Calls visit(kd, kh, inputRow) for the kernel rows of output row (od, oh) whose D and H input
// coordinates lie inside the image; inputRow is that input row's offset within a plane.
template <class Visit>
inline void forEachInImageRow(const SpatialWindow& w, int64_t od, int64_t oh, Visit&& visit) {
  detail::forEachPairInImage(
      w, w.kernel[0], [&](int64_t kd) { return w.inputCoord(0, od, kd); }, w.kernel[1],
      [&](int64_t kh) { return w.inputCoord(1, oh, kh); }, visit);
}

// The transpose: calls visit(od, oh, inputRow) for the output rows whose kernel row (kd, kh) reads
// an input row inside the image.
template <class Visit>
inline void forEachOutputRowInImage(const SpatialWindow& w, int64_t kd, int64_t kh, Visit&& visit) {
  detail::forEachPairInImage(
      w, w.out[0], [&](int64_t od) { return w.inputCoord(0, od, kd); }, w.out[1],
      [&](int64_t oh) { return w.inputCoord(1, oh, kh); }, visit);
}

}  // namespace kiln::kernels
