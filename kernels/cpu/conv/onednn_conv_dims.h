#pragma once
// A ConvShape in oneDNN's terms, shared by the float32 (onednn_conv.cpp) and int8
// (quant/onednn_int8_conv.cpp) convolutions: the spatial rank oneDNN sees, the window's axes as
// oneDNN dims, and the plain layouts of Kiln's tensors.
#include "conv.h"

#include <dnnl.hpp>

namespace kiln::kernels::onednn {

// The spatial rank oneDNN sees: leading axes of size 1 with a 1-tap kernel and no padding dropped.
inline int spatialRank(const ConvShape& s) {
  int rank = kMaxSpatialRank;
  while (rank > 1 && s.window.in[kMaxSpatialRank - rank] == 1 && s.window.kernel[kMaxSpatialRank - rank] == 1 &&
         s.window.out[kMaxSpatialRank - rank] == 1 && s.window.padBegin[kMaxSpatialRank - rank] == 0 &&
         s.window.padEnd[kMaxSpatialRank - rank] == 0)
    --rank;
  return rank;
}

// The window's last `rank` axes of `field`, each less `minus` (oneDNN counts dilation from 0).
inline dnnl::memory::dims spatial(const int64_t (&field)[kMaxSpatialRank], int rank, int64_t minus = 0) {
  dnnl::memory::dims dims;
  for (int a = kMaxSpatialRank - rank; a < kMaxSpatialRank; ++a) dims.push_back(field[a] - minus);
  return dims;
}

inline dnnl::memory::format_tag plainActivationTag(int rank, bool channelsLast) {
  using Tag = dnnl::memory::format_tag;
  if (channelsLast) return rank == 1 ? Tag::nwc : rank == 2 ? Tag::nhwc : Tag::ndhwc;
  return rank == 1 ? Tag::ncw : rank == 2 ? Tag::nchw : Tag::ncdhw;
}
inline dnnl::memory::format_tag plainWeightsTag(int rank, bool grouped) {
  using Tag = dnnl::memory::format_tag;
  if (grouped) return rank == 1 ? Tag::goiw : rank == 2 ? Tag::goihw : Tag::goidhw;
  return rank == 1 ? Tag::oiw : rank == 2 ? Tag::oihw : Tag::oidhw;
}

// The dims of X [N, C, spatial...], Y [N, M, spatial...] and W ([G, M/G, C/G, kernel...] when grouped).
struct ConvDims {
  dnnl::memory::dims src, dst, weights;
};
inline ConvDims convDims(const ConvShape& shape, int rank) {
  ConvDims d{{shape.batch, shape.inChannels}, {shape.batch, shape.outChannels}, {}};
  for (auto v : spatial(shape.window.in, rank)) d.src.push_back(v);
  for (auto v : spatial(shape.window.out, rank)) d.dst.push_back(v);
  if (shape.group > 1)
    d.weights = {shape.group, shape.outChannels / shape.group, shape.inChannels / shape.group};
  else
    d.weights = {shape.outChannels, shape.inChannels};
  for (auto v : spatial(shape.window.kernel, rank)) d.weights.push_back(v);
  return d;
}

}  // namespace kiln::kernels::onednn
