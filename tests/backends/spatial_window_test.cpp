// The sliding-window bounds that convolutions and pools share (kernels/cpu/common/spatial_window.h),
// checked against testing every tap's input coordinate, over many pads, strides and dilations.
#include <kernels/cpu/common/spatial_window.h>

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <tuple>

using namespace kiln::kernels;

namespace {

// A random 3-D window with output sizes that follow from the input, pads, stride and dilation.
SpatialWindow randomWindow(std::mt19937& rng) {
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  SpatialWindow w;
  for (int a = 0; a < kMaxSpatialRank; ++a) {
    w.in[a] = pick(1, 7);
    w.kernel[a] = pick(1, 4);
    w.stride[a] = pick(1, 3);
    w.dilation[a] = pick(1, 2);
    w.padBegin[a] = pick(0, 3);
    w.padEnd[a] = pick(0, 3);
    const int64_t span = (w.kernel[a] - 1) * w.dilation[a] + 1;
    w.out[a] = std::max<int64_t>(1, (w.in[a] + w.padBegin[a] + w.padEnd[a] - span) / w.stride[a] + 1);
  }
  return w;
}

bool inImage(const SpatialWindow& w, int a, int64_t coordinate) { return coordinate >= 0 && coordinate < w.in[a]; }

using Tap = std::tuple<int64_t, int64_t, int64_t>;  // (kd, kh, kw)
using Read = std::pair<Tap, int64_t>;               // the tap and the input offset it reads in a plane

// Every (output, tap) pair whose input coordinates are all inside the image, found one tap at a time.
std::set<std::pair<int64_t, Read>> bruteForceReads(const SpatialWindow& w) {
  std::set<std::pair<int64_t, Read>> reads;
  for (int64_t od = 0; od < w.out[0]; ++od)
    for (int64_t oh = 0; oh < w.out[1]; ++oh)
      for (int64_t ow = 0; ow < w.out[2]; ++ow)
        for (int64_t kd = 0; kd < w.kernel[0]; ++kd)
          for (int64_t kh = 0; kh < w.kernel[1]; ++kh)
            for (int64_t kw = 0; kw < w.kernel[2]; ++kw) {
              const int64_t d = w.inputCoord(0, od, kd), h = w.inputCoord(1, oh, kh), x = w.inputCoord(2, ow, kw);
              if (inImage(w, 0, d) && inImage(w, 1, h) && inImage(w, 2, x))
                reads.insert({(od * w.out[1] + oh) * w.out[2] + ow, {{kd, kh, kw}, (d * w.in[1] + h) * w.in[2] + x}});
            }
  return reads;
}

}  // namespace

TEST(SpatialWindow, RowsAndWidthTapsVisitExactlyTheInImageReads) {
  std::mt19937 rng(2024);
  for (int trial = 0; trial < 300; ++trial) {
    const SpatialWindow w = randomWindow(rng);
    const std::vector<WidthTap> taps = widthTaps(w);
    std::set<std::pair<int64_t, Read>> byOutputRow, byKernelRow;
    // Every read of the in-image row pair (od, oh) x (kd, kh) along W, by the width taps.
    auto addRowReads = [&](std::set<std::pair<int64_t, Read>>& reads, int64_t od, int64_t oh, int64_t kd, int64_t kh,
                           int64_t inputRow) {
      for (int64_t kw = 0; kw < w.kernel[2]; ++kw)
        for (int64_t ow = taps[size_t(kw)].begin; ow < taps[size_t(kw)].end; ++ow)
          reads.insert({(od * w.out[1] + oh) * w.out[2] + ow,
                        {{kd, kh, kw}, inputRow + ow * w.stride[2] + taps[size_t(kw)].offset}});
    };
    for (int64_t od = 0; od < w.out[0]; ++od)
      for (int64_t oh = 0; oh < w.out[1]; ++oh)
        forEachInImageRow(w, od, oh, [&](int64_t kd, int64_t kh, int64_t inputRow) {
          addRowReads(byOutputRow, od, oh, kd, kh, inputRow);
        });
    for (int64_t kd = 0; kd < w.kernel[0]; ++kd)
      for (int64_t kh = 0; kh < w.kernel[1]; ++kh)
        forEachOutputRowInImage(w, kd, kh, [&](int64_t od, int64_t oh, int64_t inputRow) {
          addRowReads(byKernelRow, od, oh, kd, kh, inputRow);
        });
    const auto expected = bruteForceReads(w);
    ASSERT_EQ(byOutputRow, expected) << "trial " << trial;
    ASSERT_EQ(byKernelRow, expected) << "trial " << trial;
  }
}

TEST(SpatialWindow, WidthTapsAreEmptyWhenTheColumnNeverReachesTheImage) {
  SpatialWindow w;
  w.in[2] = 2;
  w.kernel[2] = 5;
  w.padBegin[2] = 4;
  w.out[2] = 1;  // the single output's taps read coordinates -4 .. 0
  const auto taps = widthTaps(w);
  for (int64_t kw = 0; kw < 4; ++kw) EXPECT_EQ(taps[size_t(kw)].begin, taps[size_t(kw)].end) << kw;
  EXPECT_EQ(taps[4].begin, 0);
  EXPECT_EQ(taps[4].end, 1);
}
