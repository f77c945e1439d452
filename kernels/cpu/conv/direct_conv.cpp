#include "direct_conv.h"

#include "../common/parallel.h"
#include "../elementwise/float_lanes.h"

#include <algorithm>
#include <cstring>

namespace kiln::kernels {
namespace {

#if KILN_FLOAT8_LANES
using Lane = lanes::Float8;
#else
using Lane = float;
#endif
constexpr int kLaneWidth = int(sizeof(Lane) / sizeof(float));
constexpr int kLanesPerBlock = int(kDirectConvChannelBlock) / kLaneWidth;
// Outputs along W per register block: 6 x 2 accumulators + 2 weights + 1 input fill 15 of the 16
// AVX2 registers.
constexpr int kColumnBlock = 6;

// The input image as the inner loops read it: the original one, or a zero-bordered copy whose
// extents cover every tap, so input coordinate = output * stride + tap * dilation on each axis.
struct PaddedGeometry {
  int64_t extent[kMaxSpatialRank];
  bool copyNeeded = false;
  int64_t size() const { return extent[0] * extent[1] * extent[2]; }
};

PaddedGeometry paddedGeometry(const SpatialWindow& w) {
  PaddedGeometry g;
  for (int a = 0; a < kMaxSpatialRank; ++a) {
    const int64_t lastTap = (w.out[a] - 1) * w.stride[a] + (w.kernel[a] - 1) * w.dilation[a] + 1;
    g.extent[a] = std::max(w.padBegin[a] + w.in[a], lastTap);
    g.copyNeeded = g.copyNeeded || w.padBegin[a] > 0 || g.extent[a] > w.in[a];
  }
  return g;
}

// Copies channels of one image into the zero-bordered layout.
void padImage(const SpatialWindow& w, const PaddedGeometry& g, int64_t channels, const float* image, float* padded) {
  parallelFor(channels, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      float* dst = padded + c * g.size();
      std::fill(dst, dst + g.size(), 0.0f);
      const float* src = image + c * w.inSize();
      for (int64_t d = 0; d < w.in[0]; ++d)
        for (int64_t h = 0; h < w.in[1]; ++h)
          std::memcpy(dst + ((w.padBegin[0] + d) * g.extent[1] + w.padBegin[1] + h) * g.extent[2] + w.padBegin[2],
                      src + (d * w.in[1] + h) * w.in[2], size_t(w.in[2]) * sizeof(float));
    }
  });
}

// What one register block reads: `channels` input planes `planeSize` apart, the (kd, kh) row
// offsets, the kernel width and the W stride / dilation.
struct BlockInputs {
  int64_t channels, planeSize, taps;  // taps: kernel size (rows * kernel width)
  const int64_t* rowOffsets;          // one per (kd, kh)
  int64_t rowTaps, kernelWidth, strideW, dilationW;
};

// tile[kColumns][16] = sum over channels and taps of input * packed weights, for kColumns outputs
// along W starting at `origin` (the input position of the first output's first tap).
template <int kColumns>
void directBlock(const BlockInputs& in, const float* origin, const float* weights, float* tile) {
  Lane acc[kColumns][kLanesPerBlock];
  for (auto& column : acc)
    for (auto& lane : column) lane = Lane(0.0f);
  const float* wp = weights;
  for (int64_t c = 0; c < in.channels; ++c) {
    const float* plane = origin + c * in.planeSize;
    for (int64_t r = 0; r < in.rowTaps; ++r) {
      const float* row = plane + in.rowOffsets[r];
      for (int64_t kw = 0; kw < in.kernelWidth; ++kw, wp += kDirectConvChannelBlock) {
        Lane wv[kLanesPerBlock];
        for (int l = 0; l < kLanesPerBlock; ++l) wv[l] = lanes::load(wp + l * kLaneWidth, Lane{});
        const float* tap = row + kw * in.dilationW;
        for (int j = 0; j < kColumns; ++j) {
          const Lane xv(tap[j * in.strideW]);
          for (int l = 0; l < kLanesPerBlock; ++l) acc[j][l] = lanes::mulAdd(xv, wv[l], acc[j][l]);
        }
      }
    }
  }
  for (int j = 0; j < kColumns; ++j)
    for (int l = 0; l < kLanesPerBlock; ++l) lanes::store(tile + j * kDirectConvChannelBlock + l * kLaneWidth, acc[j][l]);
}

void directBlockOf(int columns, const BlockInputs& in, const float* origin, const float* weights, float* tile) {
  switch (columns) {
    case 1: return directBlock<1>(in, origin, weights, tile);
    case 2: return directBlock<2>(in, origin, weights, tile);
    case 3: return directBlock<3>(in, origin, weights, tile);
    case 4: return directBlock<4>(in, origin, weights, tile);
    case 5: return directBlock<5>(in, origin, weights, tile);
    default: return directBlock<kColumnBlock>(in, origin, weights, tile);
  }
}

int64_t channelBlocks(int64_t channelsPerGroup) {
  return (channelsPerGroup + kDirectConvChannelBlock - 1) / kDirectConvChannelBlock;
}

}  // namespace

std::vector<float> packDirectConvWeights(int64_t group, int64_t outChannels, int64_t cPerGroup, int64_t taps,
                                         const float* w) {
  const int64_t mPerGroup = outChannels / group, blocks = channelBlocks(mPerGroup);
  std::vector<float> packed(size_t(group * blocks * cPerGroup * taps * kDirectConvChannelBlock), 0.0f);
  for (int64_t g = 0; g < group; ++g)
    for (int64_t b = 0; b < blocks; ++b)
      for (int64_t c = 0; c < cPerGroup; ++c)
        for (int64_t k = 0; k < taps; ++k) {
          float* dst = packed.data() + (((g * blocks + b) * cPerGroup + c) * taps + k) * kDirectConvChannelBlock;
          for (int64_t l = 0; l < kDirectConvChannelBlock && b * kDirectConvChannelBlock + l < mPerGroup; ++l)
            dst[l] = w[((g * mPerGroup + b * kDirectConvChannelBlock + l) * cPerGroup + c) * taps + k];
        }
  return packed;
}

uint64_t directConvWorkspaceBytes(const ConvShape& s) {
  const PaddedGeometry g = paddedGeometry(s.window);
  return g.copyNeeded ? uint64_t(s.inChannels * g.size()) * sizeof(float) : 0;
}

void directConvolution(const ConvShape& s, const float* x, const float* packedWeights, const float* bias,
                       const Epilogue& epilogue, float* y, float* workspace) {
  const SpatialWindow& win = s.window;
  const PaddedGeometry geometry = paddedGeometry(win);
  const int64_t cPerGroup = s.inChannels / s.group, mPerGroup = s.outChannels / s.group;
  const int64_t blocks = channelBlocks(mPerGroup), taps = win.kernelSize(), outSize = win.outSize();
  const int64_t planeSize = geometry.copyNeeded ? geometry.size() : win.inSize();
  const int64_t* extent = geometry.copyNeeded ? geometry.extent : win.in;
  std::vector<int64_t> rowOffsets;
  for (int64_t kd = 0; kd < win.kernel[0]; ++kd)
    for (int64_t kh = 0; kh < win.kernel[1]; ++kh)
      rowOffsets.push_back((kd * win.dilation[0] * extent[1] + kh * win.dilation[1]) * extent[2]);
  const BlockInputs inputs{cPerGroup, planeSize, taps, rowOffsets.data(), int64_t(rowOffsets.size()),
                           win.kernel[2], win.stride[2], win.dilation[2]};
  const Epilogue withBias = withChannelBias(epilogue, bias, s.outChannels, outSize);
  // Tasks: (group, channel block, output row); neighbours share a weight block.
  const int64_t rowsPerImage = win.out[0] * win.out[1];
  const int64_t tasks = s.group * blocks * rowsPerImage;
  const int64_t taskWork = win.out[2] * kDirectConvChannelBlock * cPerGroup * taps;
  const int64_t grain = std::max<int64_t>(1, 65536 / std::max<int64_t>(1, taskWork));
  for (int64_t n = 0; n < s.batch; ++n) {
    const float* image = x + n * s.inChannels * win.inSize();
    if (geometry.copyNeeded) {
      padImage(win, geometry, s.inChannels, image, workspace);
      image = workspace;
    }
    parallelFor(tasks, grain, [&](int64_t begin, int64_t end) {
      alignas(64) float tile[kColumnBlock * kDirectConvChannelBlock];
      for (int64_t task = begin; task < end; ++task) {
        const int64_t row = task % rowsPerImage, block = task / rowsPerImage % blocks, g = task / rowsPerImage / blocks;
        const int64_t od = row / win.out[1], oh = row % win.out[1];
        const int64_t firstChannel = g * mPerGroup + block * kDirectConvChannelBlock;
        const int64_t channels = std::min(kDirectConvChannelBlock, mPerGroup - block * kDirectConvChannelBlock);
        const float* weights = packedWeights + (g * blocks + block) * cPerGroup * taps * kDirectConvChannelBlock;
        const float* rowOrigin = image + g * cPerGroup * planeSize +
                                 (od * win.stride[0] * extent[1] + oh * win.stride[1]) * extent[2];
        float* out = y + (n * s.outChannels + firstChannel) * outSize + row * win.out[2];
        for (int64_t ow = 0; ow < win.out[2]; ow += kColumnBlock) {
          const int columns = int(std::min<int64_t>(kColumnBlock, win.out[2] - ow));
          directBlockOf(columns, inputs, rowOrigin + ow * win.stride[2], weights, tile);
          for (int64_t m = 0; m < channels; ++m)
            for (int j = 0; j < columns; ++j) out[m * outSize + ow + j] = tile[j * kDirectConvChannelBlock + m];
        }
        if (!withBias.isIdentity())
          for (int64_t m = 0; m < channels; ++m)
            applyEpilogueSpan(y, (n * s.outChannels + firstChannel + m) * outSize + row * win.out[2], win.out[2], withBias);
      }
    });
  }
}

}  // namespace kiln::kernels
