#pragma once
// Normalisations. T is float, double, Float16 or BFloat16; reduced-precision types compute in float.
// Per-channel parameters (scale, bias, mean, variance) come as float arrays.
#include <cstdint>
#include <vector>

namespace kiln::kernels {

// BatchNormalization with given statistics over x[batch, channels, spatial].
template <class T>
void batchNormalization(int64_t batch, int64_t channels, int64_t spatial, const T* x, const float* scale,
                        const float* bias, const float* mean, const float* variance, float epsilon, T* y);

// Per-channel mean and biased variance over the batch and spatial axes (training-mode statistics).
template <class T>
void channelMoments(int64_t batch, int64_t channels, int64_t spatial, const T* x, float* mean, float* variance);

// Which scale/bias entry element j of normalised row r uses:
//   (r % rowsPerCycle) * channelsPerRow + j / elementsPerChannel.
// InstanceNormalization: rows = N*C, rowsPerCycle = C, channelsPerRow = 1, elementsPerChannel = spatial.
// GroupNormalization: rows = N*G, rowsPerCycle = G, channelsPerRow = C/G, elementsPerChannel = spatial.
// LayerNormalization: rows = outer, rowsPerCycle = 1, channelsPerRow = inner, elementsPerChannel = 1.
struct RowAffine {
  const float* scale = nullptr;
  const float* bias = nullptr;  // may be null
  int64_t rowsPerCycle = 1;
  int64_t channelsPerRow = 1;
  int64_t elementsPerChannel = 1;
};

// Normalises each of `rows` contiguous rows of `rowSize` to zero mean and unit variance, then applies
// `affine`. rowMean / rowInvStdDev (may be null) receive each row's mean and 1/sqrt(var + epsilon).
template <class T>
void normalizeRows(int64_t rows, int64_t rowSize, const T* x, const RowAffine& affine, float epsilon, T* y,
                   float* rowMean = nullptr, float* rowInvStdDev = nullptr);

// LRN across channels of x[batch, channels, spatial].
template <class T>
void localResponseNormalization(int64_t batch, int64_t channels, int64_t spatial, const T* x, int64_t size,
                                float alpha, float beta, float bias, T* y);

// Divides x[outer, axis, inner] by its L1 (p = 1) or L2 (p = 2) norm along the middle axis.
template <class T>
void lpNormalization(int64_t outer, int64_t axis, int64_t inner, const T* x, int64_t p, T* y);

// MeanVarianceNormalization: y = (x - mean) / (sqrt(variance) + 1e-9), statistics over the axes
// where reduced[axis] is true.
template <class T>
void meanVarianceNormalization(const std::vector<int64_t>& dims, const std::vector<bool>& reduced, const T* x, T* y);

}  // namespace kiln::kernels
