#pragma once
// Pooling geometry shared by the kernels and the host tests. Every pool runs as a 3-D window (1-D
// and 2-D pools fill the leading axes with size 1, as kernels/cpu/common/spatial_window.h does, so a
// PoolWindow carries the same fields as a SpatialWindow), over channels-first (N, C, D, H, W) or
// channels-last (N, D, H, W, C) tensors. poolAt is the whole computation of one output; the GPU
// runs it per thread, the host tests per element against the CPU kernels.
#include <kernels/cuda/common/host_device.h>

#include <math.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

namespace kiln::kernels::cuda {

constexpr int kPoolSpatialRank = 3;

struct PoolWindow {
  int64_t in[kPoolSpatialRank] = {1, 1, 1};   // input D, H, W
  int64_t out[kPoolSpatialRank] = {1, 1, 1};  // output D, H, W
  int64_t kernel[kPoolSpatialRank] = {1, 1, 1};
  int64_t stride[kPoolSpatialRank] = {1, 1, 1};
  int64_t dilation[kPoolSpatialRank] = {1, 1, 1};
  int64_t padBegin[kPoolSpatialRank] = {0, 0, 0};
  int64_t padEnd[kPoolSpatialRank] = {0, 0, 0};  // only AveragePool with count_include_pad reads it

  KILN_HD int64_t inSize() const { return in[0] * in[1] * in[2]; }
  KILN_HD int64_t outSize() const { return out[0] * out[1] * out[2]; }
  // Input coordinate on axis a of output position o and kernel tap k (may lie in the padding).
  KILN_HD int64_t inputCoord(int a, int64_t o, int64_t k) const {
    return o * stride[a] - padBegin[a] + k * dilation[a];
  }
};

enum class AutoPad { kNotSet, kSameUpper, kSameLower, kValid };

// ONNX's output size and padding of one spatial axis (the rules of the engine's windowOutputDim):
// SAME_* pads to ceil(in / stride) outputs, the odd pixel at the end (UPPER) or the start (LOWER);
// ceil_mode rounds the output up but never starts a window in the end padding. Returns false when
// the window does not fit the padded input or an argument is out of range.
bool poolAxis(int64_t in, int64_t kernel, int64_t stride, int64_t dilation, AutoPad autoPad, bool ceilMode,
              int64_t& padBegin, int64_t& padEnd, int64_t& out);

// The window of a 1-, 2- or 3-D pool: per spatial axis the input size, kernel_shape, strides and
// dilations (empty: 1), and ONNX pads (begins, then ends; empty: 0). nullopt when poolAxis refuses.
std::optional<PoolWindow> makePoolWindow(const std::vector<int64_t>& inSpatial, const std::vector<int64_t>& kernel,
                                         const std::vector<int64_t>& strides, const std::vector<int64_t>& dilations,
                                         const std::vector<int64_t>& pads, AutoPad autoPad, bool ceilMode);

enum class PoolLayout { kChannelsFirst, kChannelsLast };  // N C D H W, or N D H W C
enum class PoolKind { kMax, kAverage, kLp };

struct PoolParams {
  PoolWindow w;
  int64_t batch = 1, channels = 1;
  PoolLayout layout = PoolLayout::kChannelsFirst;
  PoolKind kind = PoolKind::kMax;
  bool countIncludePad = false;     // AveragePool
  bool columnMajorIndices = false;  // MaxPool storage_order = 1
  float p = 2;                      // LpPool

  KILN_HD int64_t count() const { return batch * channels * w.outSize(); }
};

template <class Acc>
struct Pooled {
  Acc value;
  bool any;       // some tap lay inside the image
  int64_t index;  // MaxPool: flat NC(D)HW index of the chosen input element
};

// Taps of output position o on axis a inside the image or, with countPadding, inside the padded
// extent [-padBegin, in + padEnd).
KILN_HD int64_t poolTapCount(const PoolWindow& w, int a, int64_t o, bool countPadding) {
  const int64_t lo = countPadding ? -w.padBegin[a] : 0, hi = countPadding ? w.in[a] + w.padEnd[a] : w.in[a];
  int64_t count = 0;
  for (int64_t k = 0; k < w.kernel[a]; ++k) {
    const int64_t c = w.inputCoord(a, o, k);
    count += c >= lo && c < hi;
  }
  return count;
}

// Output `linear` (in the layout's order) pooled over its in-image taps in kd, kh, kw order, as the
// CPU kernels do: max keeps the first maximum, average divides by the tap count, Lp is
// (sum |x|^p)^(1/p). load(offset) reads input element `offset` as Acc.
template <class Acc, class Load>
KILN_HD Pooled<Acc> poolAt(const PoolParams& P, int64_t linear, Load&& load) {
  const PoolWindow& w = P.w;
  int64_t o[kPoolSpatialRank], n, c;
  const bool last = P.layout == PoolLayout::kChannelsLast;
  if (last) c = linear % P.channels, linear /= P.channels;
  for (int a = kPoolSpatialRank - 1; a >= 0; --a) o[a] = linear % w.out[a], linear /= w.out[a];
  if (last) {
    n = linear;
  } else {
    c = linear % P.channels;
    n = linear / P.channels;
  }
  const int64_t plane = n * P.channels + c;
  Pooled<Acc> r{P.kind == PoolKind::kMax ? std::numeric_limits<Acc>::lowest() : Acc(0), false, 0};
  int64_t bestAt = 0;  // row-major offset within the plane
  const Acc power = Acc(P.p);
  for (int64_t kd = 0; kd < w.kernel[0]; ++kd) {
    const int64_t id = w.inputCoord(0, o[0], kd);
    if (id < 0 || id >= w.in[0]) continue;
    for (int64_t kh = 0; kh < w.kernel[1]; ++kh) {
      const int64_t ih = w.inputCoord(1, o[1], kh);
      if (ih < 0 || ih >= w.in[1]) continue;
      for (int64_t kw = 0; kw < w.kernel[2]; ++kw) {
        const int64_t iw = w.inputCoord(2, o[2], kw);
        if (iw < 0 || iw >= w.in[2]) continue;
        const int64_t within = (id * w.in[1] + ih) * w.in[2] + iw;
        const Acc v = load(last ? (n * w.inSize() + within) * P.channels + c : plane * w.inSize() + within);
        switch (P.kind) {
          case PoolKind::kMax:
            if (!r.any || v > r.value) r.value = v, bestAt = within;
            break;
          case PoolKind::kAverage: r.value += v; break;
          case PoolKind::kLp: r.value += pow(fabs(v), power); break;
        }
        r.any = true;
      }
    }
  }
  if (P.kind == PoolKind::kAverage) {
    const int64_t count = poolTapCount(w, 0, o[0], P.countIncludePad) * poolTapCount(w, 1, o[1], P.countIncludePad) *
                          poolTapCount(w, 2, o[2], P.countIncludePad);
    r.value = count > 0 ? r.value / Acc(count) : Acc(0);
  } else if (P.kind == PoolKind::kLp) {
    r.value = pow(r.value, Acc(1) / power);
  } else {
    const int64_t bw = bestAt % w.in[2], bh = bestAt / w.in[2] % w.in[1], bd = bestAt / w.in[2] / w.in[1];
    r.index = plane * w.inSize() + (P.columnMajorIndices ? bd + (bh + bw * w.in[1]) * w.in[0] : bestAt);
  }
  return r;
}

}  // namespace kiln::kernels::cuda
