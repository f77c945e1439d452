#include "spectral.h"

#include <kernels/cuda/common/device_types.cuh>
#include <kernels/cuda/common/launch.cuh>

#include <cmath>
#include <type_traits>

namespace kiln::kernels::cuda {
namespace {

template <class T>
__device__ __forceinline__ double load(const T* p, int64_t i) {
  return double(toCompute(p[i]));
}

template <class T>
__device__ __forceinline__ T store(double v) {
  if constexpr (std::is_same_v<T, double>) return v;
  else return fromCompute<T>(float(v));
}

// e^(sign·2πi·m/n) for m = k·j mod n, so large k·j keeps its precision.
__device__ __forceinline__ void twiddle(int64_t k, int64_t j, int64_t n, double sign, double& re, double& im) {
  const int64_t m = (k % n) * (j % n) % n;
  const double angle = sign * 6.283185307179586476925 * double(m) / double(n);
  re = cos(angle);
  im = sin(angle);
}

template <class T>
__global__ void dftKernel(const T* in, T* out, DftLayout l) {
  const int64_t total = l.outer * l.outputLength * l.inner;
  const int64_t copied = l.inputLength < l.dftLength ? l.inputLength : l.dftLength;
  const double sign = l.inverse ? 1.0 : -1.0;
  KILN_GRID_STRIDE_LOOP(index, total) {
    const int64_t i = index % l.inner, k = index / l.inner % l.outputLength, o = index / (l.inner * l.outputLength);
    double re = 0, im = 0;
    for (int64_t j = 0; j < copied; ++j) {
      const int64_t at = ((o * l.inputLength + j) * l.inner + i) * l.channels;
      const double a = load(in, at), b = l.channels == 2 ? load(in, at + 1) : 0.0;
      double c, s;
      twiddle(k, j, l.dftLength, sign, c, s);
      re += a * c - b * s;
      im += a * s + b * c;
    }
    if (l.inverse) re /= double(l.dftLength), im /= double(l.dftLength);
    out[index * 2] = store<T>(re);
    out[index * 2 + 1] = store<T>(im);
  }
}

template <class T>
__global__ void stftKernel(const T* signal, const T* window, T* out, StftShape s) {
  const int64_t total = s.batch * s.frames * s.outputLength;
  KILN_GRID_STRIDE_LOOP(index, total) {
    const int64_t k = index % s.outputLength, f = index / s.outputLength % s.frames, b = index / (s.outputLength * s.frames);
    double re = 0, im = 0;
    for (int64_t j = 0; j < s.frameLength; ++j) {
      const int64_t at = (b * s.length + f * s.step + j) * s.channels;
      const double w = window ? load(window, j) : 1.0;
      // Rounded to T once windowed, as the CPU frames the signal in T before its DFT.
      const double a = double(toCompute(store<T>(load(signal, at) * w)));
      const double bi = s.channels == 2 ? double(toCompute(store<T>(load(signal, at + 1) * w))) : 0.0;
      double c, sn;
      twiddle(k, j, s.frameLength, -1.0, c, sn);
      re += a * c - bi * sn;
      im += a * sn + bi * c;
    }
    out[index * 2] = store<T>(re);
    out[index * 2 + 1] = store<T>(im);
  }
}

}  // namespace

cudaError_t dft(const void* input, void* output, const DftLayout& layout, ElementType type, cudaStream_t stream) {
  if (layout.dftLength <= 0 || layout.outer < 0 || layout.inner < 0 || layout.outputLength < 0 ||
      (layout.channels != 1 && layout.channels != 2))
    return cudaErrorInvalidValue;
  return dispatchFloat(type, [&](auto tag) {
    using T = decltype(tag);
    const int64_t total = layout.outer * layout.outputLength * layout.inner;
    if (total == 0) return cudaSuccess;
    dftKernel<T><<<gridFor(total), kThreadsPerBlock, 0, stream>>>(static_cast<const T*>(input), static_cast<T*>(output),
                                                                   layout);
    return launchStatus();
  });
}

cudaError_t stft(const void* signal, const void* window, void* output, const StftShape& shape, ElementType type,
                 cudaStream_t stream) {
  if (shape.frameLength <= 0 || shape.step <= 0 || shape.frames < 0 || shape.batch < 0 ||
      (shape.channels != 1 && shape.channels != 2) || shape.outputLength < 0 ||
      (shape.frames > 0 && (shape.frames - 1) * shape.step + shape.frameLength > shape.length))
    return cudaErrorInvalidValue;
  return dispatchFloat(type, [&](auto tag) {
    using T = decltype(tag);
    const int64_t total = shape.batch * shape.frames * shape.outputLength;
    if (total == 0) return cudaSuccess;
    stftKernel<T><<<gridFor(total), kThreadsPerBlock, 0, stream>>>(
        static_cast<const T*>(signal), static_cast<const T*>(window), static_cast<T*>(output), shape);
    return launchStatus();
  });
}

}  // namespace kiln::kernels::cuda
