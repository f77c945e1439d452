#include "spectral.h"

#include <kernels/cuda/common/device_types.cuh>
#include <kernels/cuda/common/launch.cuh>

#include <cmath>
#include <type_traits>

namespace kiln::kernels::cuda {
namespace {

constexpr double kTwoPi = 6.283185307179586476925;

// double -> T as the CPU's castFromDouble: floats round through float32, integers truncate.
template <class T>
__device__ __forceinline__ T fromDouble(double v) {
  if constexpr (std::is_same_v<T, double>) return v;
  else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>)
    return fromCompute<T>(float(v));
  else return static_cast<T>(v);
}

template <class T>
__global__ void windowKernel(T* dst, int64_t size, WindowKind kind, double denominator) {
  KILN_GRID_STRIDE_LOOP(k, size) {
    const double x = kTwoPi * double(k) / denominator;
    double w = 0;
    switch (kind) {
      case WindowKind::kHann: w = 0.5 - 0.5 * cos(x); break;
      case WindowKind::kHamming: w = 25.0 / 46.0 - 21.0 / 46.0 * cos(x); break;
      case WindowKind::kBlackman: w = 0.42 - 0.5 * cos(x) + 0.08 * cos(2.0 * x); break;
    }
    dst[k] = fromDouble<T>(w);
  }
}

__device__ __forceinline__ int64_t melEdge(int64_t i, double lowMel, double step, int64_t dftLength, int64_t sampleRate) {
  const double hz = 700.0 * (pow(10.0, (double(i) * step + lowMel) / 2595.0) - 1.0);
  return int64_t(floor(double(dftLength + 1) * hz / double(sampleRate)));
}

// Element (bin j, filter m) as the CPU's writes leave it: the falling edge [center, high) last,
// over the rising edge [low, center] (a single 1 at center when low == center).
__device__ __forceinline__ double toMel(double hz) { return 2595.0 * log10(1.0 + hz / 700.0); }

template <class T>
__global__ void melKernel(T* dst, int64_t melBins, int64_t bins, int64_t dftLength, int64_t sampleRate,
                          const double* lowerHertz, const double* upperHertz) {
  const double lowMel = toMel(*lowerHertz), step = (toMel(*upperHertz) - lowMel) / double(melBins + 2);
  KILN_GRID_STRIDE_LOOP(index, bins * melBins) {
    const int64_t j = index / melBins, m = index % melBins;
    const int64_t low = melEdge(m, lowMel, step, dftLength, sampleRate);
    const int64_t center = melEdge(m + 1, lowMel, step, dftLength, sampleRate);
    const int64_t high = melEdge(m + 2, lowMel, step, dftLength, sampleRate);
    double v = 0;
    if (j >= center && j < high) v = double(high - j) / double(high - center);
    else if (center == low && j == center) v = 1.0;
    else if (center != low && j >= low && j <= center) v = double(j - low) / double(center - low);
    dst[index] = fromDouble<T>(v);
  }
}

}  // namespace

cudaError_t windowFunction(void* dst, int64_t size, WindowKind kind, bool periodic, ElementType type,
                           cudaStream_t stream) {
  if (size < 0) return cudaErrorInvalidValue;
  return dispatchNumeric(type, [&](auto tag) {
    using T = decltype(tag);
    if (size == 0) return cudaSuccess;
    const int64_t denominator = periodic ? size : size - 1;
    windowKernel<T><<<gridFor(size), kThreadsPerBlock, 0, stream>>>(static_cast<T*>(dst), size, kind,
                                                                     double(denominator < 1 ? 1 : denominator));
    return launchStatus();
  });
}

cudaError_t melWeightMatrix(void* dst, int64_t melBins, int64_t dftLength, int64_t sampleRate,
                            const double* lowerHertz, const double* upperHertz, ElementType type, cudaStream_t stream) {
  if (melBins <= 0 || dftLength <= 0 || sampleRate <= 0) return cudaErrorInvalidValue;
  const int64_t bins = dftLength / 2 + 1;
  return dispatchNumeric(type, [&](auto tag) {
    using T = decltype(tag);
    melKernel<T><<<gridFor(bins * melBins), kThreadsPerBlock, 0, stream>>>(static_cast<T*>(dst), melBins, bins,
                                                                            dftLength, sampleRate, lowerHertz, upperHertz);
    return launchStatus();
  });
}

}  // namespace kiln::kernels::cuda
