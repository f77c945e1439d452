#include "conv.h"

#include "../common/parallel.h"
#include "im2col.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

namespace kiln::kernels {
namespace {

// OpenBLAS runs GEMMs with m*n*k at or below this in the calling thread; such small GEMMs are run
// concurrently (one per batch item / group) instead.
constexpr int64_t kBlasSingleThreadWork = 65536 * 4;

// C[m, n] = op(A) B + beta C, row-major; op(A) = A[m, k], or A stored as [k, m] when transA.
void gemm(bool transA, int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c, float beta) {
  cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans, CblasNoTrans, int(m), int(n), int(k), 1.0f, a,
              transA ? int(m) : int(k), b, int(n), beta, c, int(n));
}
void gemm(bool transA, int64_t m, int64_t n, int64_t k, const double* a, const double* b, double* c, double beta) {
  cblas_dgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans, CblasNoTrans, int(m), int(n), int(k), 1.0, a,
              transA ? int(m) : int(k), b, int(n), beta, c, int(n));
}
// Exact int32 GEMM (no BLAS has one); rows of C are independent, so they are split across threads.
void gemm(bool, int64_t m, int64_t n, int64_t k, const int32_t* a, const int32_t* b, int32_t* c, int32_t beta) {
  parallelFor(m, 1, [&](int64_t rowBegin, int64_t rowEnd) {
    for (int64_t i = rowBegin; i < rowEnd; ++i) {
      int32_t* out = c + i * n;
      if (beta == 0) std::fill(out, out + n, 0);
      for (int64_t p = 0; p < k; ++p) {
        const int32_t scale = a[i * k + p];
        if (scale == 0) continue;
        const int32_t* row = b + p * n;
        for (int64_t j = 0; j < n; ++j) out[j] += scale * row[j];
      }
    }
  });
}

template <class T>
std::unique_ptr<T[]> uninitialized(int64_t count) {
  return std::unique_ptr<T[]>(new T[size_t(std::max<int64_t>(count, 1))]);
}

// Y[n, m, :] = bias[m] (or 0): the GEMMs then accumulate into Y.
template <class T>
void fillWithBias(int64_t batch, int64_t channels, int64_t planeSize, const T* bias, T* y) {
  parallelFor(batch * channels, std::max<int64_t>(1, 32768 / std::max<int64_t>(1, planeSize)),
              [&](int64_t begin, int64_t end) {
                for (int64_t p = begin; p < end; ++p)
                  std::fill(y + p * planeSize, y + (p + 1) * planeSize, bias ? bias[p % channels] : T{});
              });
}

bool isDepthwise(const ConvShape& s) { return s.group > 1 && s.group == s.inChannels; }

// One output plane of a depthwise convolution: direct loops, the innermost one along W with the
// bounds hoisted out so it vectorises.
template <class T>
void depthwisePlane(const SpatialWindow& w, const T* image, const T* filter, T* out) {
  std::vector<int64_t> begins(size_t(w.kernel[2])), ends(size_t(w.kernel[2]));
  for (int64_t kw = 0; kw < w.kernel[2]; ++kw) validOutputRange(w, kw, begins[size_t(kw)], ends[size_t(kw)]);
  const int64_t s = w.stride[2];
  for (int64_t od = 0; od < w.out[0]; ++od) {
    for (int64_t oh = 0; oh < w.out[1]; ++oh) {
      T* dst = out + (od * w.out[1] + oh) * w.out[2];
      for (int64_t kd = 0; kd < w.kernel[0]; ++kd) {
        int64_t id = w.inputCoord(0, od, kd);
        if (id < 0 || id >= w.in[0]) continue;
        for (int64_t kh = 0; kh < w.kernel[1]; ++kh) {
          int64_t ih = w.inputCoord(1, oh, kh);
          if (ih < 0 || ih >= w.in[1]) continue;
          const T* plane = image + (id * w.in[1] + ih) * w.in[2];
          const T* taps = filter + (kd * w.kernel[1] + kh) * w.kernel[2];
          for (int64_t kw = 0; kw < w.kernel[2]; ++kw) {
            const T tap = taps[kw];
            const int64_t offset = kw * w.dilation[2] - w.padBegin[2];
            const int64_t begin = begins[size_t(kw)], end = ends[size_t(kw)];
            if (s == 1) {
              for (int64_t o = begin; o < end; ++o) dst[o] += tap * plane[o + offset];
            } else {
              for (int64_t o = begin; o < end; ++o) dst[o] += tap * plane[o * s + offset];
            }
          }
        }
      }
    }
  }
}

template <class T>
void depthwise(const ConvShape& s, const T* x, const T* w, T* y) {
  const SpatialWindow& win = s.window;
  const int64_t multiplier = s.outChannels / s.group;
  const int64_t grain = std::max<int64_t>(1, 4096 / std::max<int64_t>(1, win.outSize() * win.kernelSize()));
  parallelFor(s.batch * s.outChannels, grain, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      int64_t n = p / s.outChannels, m = p % s.outChannels;
      const T* image = x + (n * s.inChannels + m / multiplier) * win.inSize();
      depthwisePlane(win, image, w + m * win.kernelSize(), y + p * win.outSize());
    }
  });
}

// im2col + GEMM per (batch item, group). Big GEMMs run one after another, each threaded by BLAS;
// small ones run concurrently, one task per (batch item, group).
template <class T>
void gemmConvolution(const ConvShape& s, const T* x, const T* w, T* y) {
  const SpatialWindow& win = s.window;
  const int64_t cPerGroup = s.inChannels / s.group, mPerGroup = s.outChannels / s.group;
  const int64_t rows = cPerGroup * win.kernelSize(), outSize = win.outSize();
  const bool pointwise = win.isPointwise();
  auto runTask = [&](int64_t task, T* columns) {
    int64_t n = task / s.group, g = task % s.group;
    const T* image = x + (n * s.inChannels + g * cPerGroup) * win.inSize();
    if (!pointwise) {
      im2col(win, cPerGroup, image, columns);
      image = columns;
    }
    gemm(false, mPerGroup, outSize, rows, w + g * mPerGroup * rows, image,
         y + (n * s.outChannels + g * mPerGroup) * outSize, T(1));
  };
  const int64_t tasks = s.batch * s.group;
  const int64_t columnsSize = pointwise ? 0 : rows * outSize;
  if (tasks > 1 && mPerGroup * outSize * rows <= kBlasSingleThreadWork) {
    parallelFor(tasks, 1, [&](int64_t begin, int64_t end) {
      auto columns = uninitialized<T>(columnsSize);
      for (int64_t t = begin; t < end; ++t) runTask(t, columns.get());
    });
  } else {
    auto columns = uninitialized<T>(columnsSize);
    for (int64_t t = 0; t < tasks; ++t) runTask(t, columns.get());
  }
}

}  // namespace

template <class T>
void convolution(const ConvShape& s, const T* x, const T* w, const T* bias, T* y) {
  fillWithBias(s.batch, s.outChannels, s.window.outSize(), bias, y);
  if (isDepthwise(s))
    depthwise(s, x, w, y);
  else
    gemmConvolution(s, x, w, y);
}

void convolutionInt32(const ConvShape& s, const int32_t* x, const int32_t* w, int32_t* y) {
  fillWithBias<int32_t>(s.batch, s.outChannels, s.window.outSize(), nullptr, y);
  gemmConvolution(s, x, w, y);
}

template <class T>
void convTranspose(const ConvShape& s, const T* x, const T* w, const T* bias, T* y) {
  const SpatialWindow& win = s.window;
  const int64_t cPerGroup = s.inChannels / s.group, mPerGroup = s.outChannels / s.group;
  const int64_t rows = mPerGroup * win.kernelSize(), xSize = win.outSize(), ySize = win.inSize();
  fillWithBias(s.batch, s.outChannels, ySize, bias, y);
  auto columns = uninitialized<T>(rows * xSize);
  for (int64_t n = 0; n < s.batch; ++n) {
    for (int64_t g = 0; g < s.group; ++g) {
      // columns[M/g * K, xSize] = W_g^T X_g, then scattered back onto the output image.
      gemm(true, rows, xSize, cPerGroup, w + g * cPerGroup * rows, x + (n * s.inChannels + g * cPerGroup) * xSize,
           columns.get(), T(0));
      col2imAdd(win, mPerGroup, columns.get(), y + (n * s.outChannels + g * mPerGroup) * ySize);
    }
  }
}

template <class Q>
void requantize(int64_t batch, int64_t channels, int64_t plane, const int32_t* acc, const int32_t* bias,
                const float* multiplier, int32_t zeroPoint, Q* out) {
  const float lo = float(std::numeric_limits<Q>::min()), hi = float(std::numeric_limits<Q>::max());
  parallelFor(batch * channels, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, plane)), [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const int64_t m = p % channels;
      const int32_t b = bias ? bias[m] : 0;
      for (int64_t i = p * plane; i < (p + 1) * plane; ++i) {
        float v = std::nearbyint(float(acc[i] + b) * multiplier[m]) + float(zeroPoint);  // ties to even
        out[i] = Q(std::clamp(v, lo, hi));
      }
    }
  });
}

template void requantize<int8_t>(int64_t, int64_t, int64_t, const int32_t*, const int32_t*, const float*, int32_t,
                                 int8_t*);
template void requantize<uint8_t>(int64_t, int64_t, int64_t, const int32_t*, const int32_t*, const float*, int32_t,
                                  uint8_t*);
template void convolution<float>(const ConvShape&, const float*, const float*, const float*, float*);
template void convolution<double>(const ConvShape&, const double*, const double*, const double*, double*);
template void convTranspose<float>(const ConvShape&, const float*, const float*, const float*, float*);
template void convTranspose<double>(const ConvShape&, const double*, const double*, const double*, double*);

}  // namespace kiln::kernels
