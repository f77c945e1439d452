#pragma once
// im2col / col2im over a 3-D spatial window (see spatial_window.h).
// The column matrix has one row per (channel, kd, kh, kw) and one column per output position, so a
// convolution becomes weights[M, C*K] x columns[C*K, outSize].
#include "../common/spatial_window.h"

namespace kiln::kernels {

// Writes columns[channels * kernelSize, outSize]; taps that fall in the padding read as zero.
template <class T>
void im2col(const SpatialWindow& w, int64_t channels, const T* image, T* columns);

// The adjoint of im2col: adds every column entry into the image position it was read from
// (taps in the padding are dropped). The image must be initialised by the caller.
template <class T>
void col2imAdd(const SpatialWindow& w, int64_t channels, const T* columns, T* image);

}  // namespace kiln::kernels
