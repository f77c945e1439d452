#include "im2col.h"

#include "../common/parallel.h"

#include <algorithm>
#include <cstring>

namespace kiln::kernels {
namespace {

// Visits every (column row, output row) pair: fn(row, image plane row pointer or nullptr when the
// tap lies in the padding, kw, output row offset). Rows are split across threads; each row of the
// column matrix belongs to one task, so writes never overlap.
template <class Fn>
void forEachColumnRow(const SpatialWindow& w, int64_t channels, int64_t imageStride, Fn&& fn) {
  const int64_t rows = channels * w.kernelSize();
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, w.outSize()));
  parallelFor(rows, grain, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      int64_t kw = row % w.kernel[2];
      int64_t kh = row / w.kernel[2] % w.kernel[1];
      int64_t kd = row / (w.kernel[2] * w.kernel[1]) % w.kernel[0];
      int64_t c = row / w.kernelSize();
      int64_t outRow = 0;
      for (int64_t od = 0; od < w.out[0]; ++od) {
        int64_t id = w.inputCoord(0, od, kd);
        for (int64_t oh = 0; oh < w.out[1]; ++oh, outRow += w.out[2]) {
          int64_t ih = w.inputCoord(1, oh, kh);
          bool inside = id >= 0 && id < w.in[0] && ih >= 0 && ih < w.in[1];
          int64_t planeOffset = c * imageStride + w.inputRow(id, ih);
          fn(row, inside ? planeOffset : -1, kw, outRow);
        }
      }
    }
  });
}

}  // namespace

template <class T>
void im2col(const SpatialWindow& w, int64_t channels, const T* image, T* columns) {
  const int64_t outSize = w.outSize(), ow = w.out[2], s = w.stride[2];
  const std::vector<WidthTap> taps = widthTaps(w);
  forEachColumnRow(w, channels, w.inSize(), [&](int64_t row, int64_t imageRow, int64_t kw, int64_t outRow) {
    T* dst = columns + row * outSize + outRow;
    if (imageRow < 0) {
      std::fill(dst, dst + ow, T{});
      return;
    }
    const WidthTap& t = taps[size_t(kw)];
    const T* plane = image + imageRow;
    std::fill(dst, dst + t.begin, T{});
    if (s == 1) {
      if (t.end > t.begin) std::memcpy(dst + t.begin, plane + t.begin + t.offset, size_t(t.end - t.begin) * sizeof(T));
    } else {
      for (int64_t o = t.begin; o < t.end; ++o) dst[o] = plane[o * s + t.offset];
    }
    std::fill(dst + t.end, dst + ow, T{});
  });
}

template <class T>
void col2imAdd(const SpatialWindow& w, int64_t channels, const T* columns, T* image) {
  const int64_t outSize = w.outSize(), s = w.stride[2];
  const int64_t kernelSize = w.kernelSize(), imageStride = w.inSize();
  const std::vector<WidthTap> taps = widthTaps(w);
  // Rows of different kernel taps add into the same pixels, so split the work by channel. Tap by
  // tap, so each row of the column matrix is read in order.
  parallelFor(channels, 1, [&](int64_t cBegin, int64_t cEnd) {
    for (int64_t c = cBegin; c < cEnd; ++c) {
      for (int64_t tap = 0; tap < kernelSize; ++tap) {
        const int64_t kw = tap % w.kernel[2], kh = tap / w.kernel[2] % w.kernel[1], kd = tap / (w.kernel[2] * w.kernel[1]);
        const WidthTap& t = taps[size_t(kw)];
        const T* src = columns + (c * kernelSize + tap) * outSize;
        forEachOutputRowInImage(w, kd, kh, [&](int64_t od, int64_t oh, int64_t inputRow) {
          T* line = image + c * imageStride + inputRow;
          const T* row = src + (od * w.out[1] + oh) * w.out[2];
          for (int64_t o = t.begin; o < t.end; ++o) line[o * s + t.offset] += row[o];
        });
      }
    }
  });
}

template void im2col<float>(const SpatialWindow&, int64_t, const float*, float*);
template void im2col<double>(const SpatialWindow&, int64_t, const double*, double*);
template void im2col<int32_t>(const SpatialWindow&, int64_t, const int32_t*, int32_t*);
template void col2imAdd<float>(const SpatialWindow&, int64_t, const float*, float*);
template void col2imAdd<double>(const SpatialWindow&, int64_t, const double*, double*);

}  // namespace kiln::kernels
