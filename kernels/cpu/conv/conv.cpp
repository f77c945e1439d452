#include "conv.h"

#include "../common/parallel.h"
#include "../common/single_threaded_blas.h"
#include "../fused/epilogue.h"
#include "direct_conv.h"
#include "im2col.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <stdexcept>
#include <type_traits>
#include <vector>

namespace kiln::kernels {
namespace {

// GEMMs with less work than this are not worth splitting across threads.
constexpr int64_t kSplitGemmWork = 65536 * 4;

// C[m, n] = op(A) B + beta C, row-major with leading dimensions; op(A) = A[m, k], or A stored as
// [k, m] when transA.
void gemm(bool transA, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
          float* c, int64_t ldc, float beta) {
  cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans, CblasNoTrans, int(m), int(n), int(k), 1.0f, a,
              int(lda), b, int(ldb), beta, c, int(ldc));
}
void gemm(bool transA, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda, const double* b, int64_t ldb,
          double* c, int64_t ldc, double beta) {
  cblas_dgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans, CblasNoTrans, int(m), int(n), int(k), 1.0, a,
              int(lda), b, int(ldb), beta, c, int(ldc));
}
// Exact int32 GEMM (no BLAS has one); A is never transposed here.
void gemm(bool, int64_t m, int64_t n, int64_t k, const int32_t* a, int64_t lda, const int32_t* b, int64_t ldb,
          int32_t* c, int64_t ldc, int32_t beta) {
  for (int64_t i = 0; i < m; ++i) {
    int32_t* out = c + i * ldc;
    if (beta == 0) std::fill(out, out + n, 0);
    for (int64_t p = 0; p < k; ++p) {
      const int32_t scale = a[i * lda + p];
      if (scale == 0) continue;
      const int32_t* row = b + p * ldb;
      for (int64_t j = 0; j < n; ++j) out[j] += scale * row[j];
    }
  }
}

// Called with each finished block [row, row + rows) x [column, column + columns) of a GEMM's C.
using BlockDone = std::function<void(int64_t row, int64_t rows, int64_t column, int64_t columns)>;

// C[m, n] = op(A) B + beta C on all pool threads: wide outputs are split into column blocks (each
// thread reads all of A and its own slice of B), narrow ones into row blocks. Inside a parallel
// region it runs on the calling thread. `done` (may be empty) sees each block while it is in cache.
template <class T>
void parallelGemm(bool transA, int64_t m, int64_t n, int64_t k, const T* a, const T* b, T* c, T beta,
                  const BlockDone& done = {}) {
  const int64_t lda = transA ? m : k;
  const int64_t threads = cpuThreadCount();
  if (threads <= 1 || m * n * k <= kSplitGemmWork) {
    gemm(transA, m, n, k, a, lda, b, n, c, n, beta);
    if (done) done(0, m, 0, n);
    return;
  }
  const bool byColumns = n >= 64 * threads;
  const int64_t extent = byColumns ? n : m;
  const int64_t align = byColumns ? 16 : 4;  // keep blocks a multiple of the BLAS micro-tile
  const int64_t block = ((extent + threads - 1) / threads + align - 1) / align * align;
  parallelFor((extent + block - 1) / block, 1, [&](int64_t first, int64_t last) {
    for (int64_t part = first; part < last; ++part) {
      const int64_t begin = part * block, size = std::min(extent, begin + block) - begin;
      if (byColumns) {
        gemm(transA, m, size, k, a, lda, b + begin, n, c + begin, n, beta);
        if (done) done(0, m, begin, size);
      } else {
        gemm(transA, size, n, k, transA ? a + begin : a + begin * lda, lda, b, n, c + begin * n, n, beta);
        if (done) done(begin, size, 0, n);
      }
    }
  });
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
// bounds hoisted out (`taps`) so it vectorises.
template <class T>
void depthwisePlane(const SpatialWindow& w, const std::vector<WidthTap>& taps, const T* image, const T* filter, T* out) {
  const int64_t s = w.stride[2];
  for (int64_t od = 0; od < w.out[0]; ++od) {
    for (int64_t oh = 0; oh < w.out[1]; ++oh) {
      T* dst = out + (od * w.out[1] + oh) * w.out[2];
      forEachInImageRow(w, od, oh, [&](int64_t kd, int64_t kh, int64_t inputRow) {
        const T* line = image + inputRow;
        const T* weights = filter + (kd * w.kernel[1] + kh) * w.kernel[2];
        for (int64_t kw = 0; kw < w.kernel[2]; ++kw) {
          const T weight = weights[kw];
          const WidthTap& t = taps[size_t(kw)];
          if (s == 1) {
            for (int64_t o = t.begin; o < t.end; ++o) dst[o] += weight * line[o + t.offset];
          } else {
            for (int64_t o = t.begin; o < t.end; ++o) dst[o] += weight * line[o * s + t.offset];
          }
        }
      });
    }
  }
}

template <class T>
void depthwise(const ConvShape& s, const T* x, const T* w, T* y) {
  const SpatialWindow& win = s.window;
  const std::vector<WidthTap> taps = widthTaps(win);
  const int64_t multiplier = s.outChannels / s.group;
  const int64_t grain = std::max<int64_t>(1, 4096 / std::max<int64_t>(1, win.outSize() * win.kernelSize()));
  parallelFor(s.batch * s.outChannels, grain, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      int64_t n = p / s.outChannels, m = p % s.outChannels;
      const T* image = x + (n * s.inChannels + m / multiplier) * win.inSize();
      depthwisePlane(win, taps, image, w + m * win.kernelSize(), y + p * win.outSize());
    }
  });
}

// A buffer kept between calls on the calling thread, for scratch the caller did not provide: a
// fresh multi-megabyte allocation each run would be page-faulted in again every time.
template <class T>
T* reusedScratch(int64_t count) {
  thread_local std::vector<T> scratch;
  if (scratch.size() < size_t(count)) scratch.resize(size_t(count));
  return scratch.data();
}

// How gemmConvolution runs its (batch item, group) tasks: with enough tasks (or small ones) each
// thread takes whole tasks, one im2col buffer ("slot") per thread; otherwise the tasks run one
// after another, each GEMM split across the threads, with a single slot.
struct GemmPlan {
  int64_t tasks, slots, columnsSize;  // columnsSize: elements of one slot (0 without im2col)
};

GemmPlan planGemm(const ConvShape& s, bool im2colNeeded) {
  const SpatialWindow& win = s.window;
  const int64_t rows = s.inChannels / s.group * win.kernelSize(), mPerGroup = s.outChannels / s.group;
  const int64_t tasks = s.batch * s.group;
  const bool taskParallel = tasks >= cpuThreadCount() || (tasks > 1 && mPerGroup * win.outSize() * rows <= kSplitGemmWork);
  return {tasks, taskParallel ? std::min<int64_t>(tasks, cpuThreadCount()) : 1, im2colNeeded ? rows * win.outSize() : 0};
}

// im2col (unless `im2colNeeded` is false: the image is its own column matrix) + GEMM per (batch
// item, group): Y = W X_columns + beta Y. `columns` holds plan.slots * plan.columnsSize elements.
// `done(first, rows, columns)` (may be empty) sees each finished block of Y: `rows` rows of
// `columns` elements each, the first at Y + first, rows one output plane apart.
template <class T>
void gemmConvolution(const ConvShape& s, const T* x, const T* w, T* y, T beta, bool im2colNeeded, T* columns,
                     const std::function<void(int64_t first, int64_t rows, int64_t columns)>& done = {}) {
  const SpatialWindow& win = s.window;
  const int64_t cPerGroup = s.inChannels / s.group, mPerGroup = s.outChannels / s.group;
  const int64_t rows = cPerGroup * win.kernelSize(), outSize = win.outSize();
  const GemmPlan plan = planGemm(s, im2colNeeded);
  auto runTask = [&](int64_t task, int64_t slot) {
    int64_t n = task / s.group, g = task % s.group;
    const T* image = x + (n * s.inChannels + g * cPerGroup) * win.inSize();
    if (im2colNeeded) {
      T* slotColumns = columns + slot * plan.columnsSize;
      im2col(win, cPerGroup, image, slotColumns);
      image = slotColumns;
    }
    const int64_t outFirst = (n * s.outChannels + g * mPerGroup) * outSize;
    BlockDone blockDone;
    if (done)
      blockDone = [&](int64_t row, int64_t rowCount, int64_t column, int64_t columnCount) {
        done(outFirst + row * outSize + column, rowCount, columnCount);
      };
    parallelGemm(false, mPerGroup, outSize, rows, w + g * mPerGroup * rows, image, y + outFirst, beta, blockDone);
  };
  if (plan.slots > 1) {
    const int64_t perSlot = (plan.tasks + plan.slots - 1) / plan.slots;
    parallelFor(plan.slots, 1, [&](int64_t begin, int64_t end) {
      for (int64_t slot = begin; slot < end; ++slot)
        for (int64_t t = slot * perSlot; t < std::min(plan.tasks, (slot + 1) * perSlot); ++t) runTask(t, slot);
    });
  } else {
    for (int64_t t = 0; t < plan.tasks; ++t) runTask(t, 0);
  }
}

// gemmConvolution with the auto choice of im2col and scratch kept on the calling thread.
template <class T>
void autoGemmConvolution(const ConvShape& s, const T* x, const T* w, T* y, T beta) {
  const bool im2colNeeded = !s.window.isPointwise();
  const GemmPlan plan = planGemm(s, im2colNeeded);
  gemmConvolution(s, x, w, y, beta, im2colNeeded, reusedScratch<T>(plan.slots * plan.columnsSize));
}

// Y filled with the bias, then the convolution added onto it.
template <class T>
void convolutionOntoBias(const ConvShape& s, const T* x, const T* w, const T* bias, T* y) {
  fillWithBias(s.batch, s.outChannels, s.window.outSize(), bias, y);
  if (isDepthwise(s)) {
    depthwise(s, x, w, y);
  } else {
    SingleThreadedBlas blasGuard;
    autoGemmConvolution(s, x, w, y, T(1));
  }
}

ConvAlgorithm resolve(ConvAlgorithm a, const ConvShape& s) {
  if (a != ConvAlgorithm::kAuto) return a;
  if (s.window.isPointwise()) return ConvAlgorithm::kPointwiseGemm;
  return isDepthwise(s) ? ConvAlgorithm::kDepthwise : ConvAlgorithm::kIm2colGemm;
}

// The GEMM algorithms with the bias folded into the epilogue, so the GEMMs write Y (beta 0)
// instead of adding to a filled one; the epilogue runs on each block while it is in cache.
void gemmConvolutionWithEpilogue(const ConvShape& s, const float* x, const float* w, const float* bias,
                                 const Epilogue& epilogue, float* y, bool im2colNeeded, float* columns) {
  const int64_t outSize = s.window.outSize();
  const Epilogue withBias = withChannelBias(epilogue, bias, s.outChannels, outSize);
  SingleThreadedBlas blasGuard;
  if (withBias.isIdentity()) return gemmConvolution(s, x, w, y, 0.0f, im2colNeeded, columns);
  gemmConvolution(s, x, w, y, 0.0f, im2colNeeded, columns, [&](int64_t first, int64_t rows, int64_t columnCount) {
    for (int64_t r = 0; r < rows; ++r) applyEpilogueSpan(y, first + r * outSize, columnCount, withBias);
  });
}

}  // namespace

bool convAlgorithmApplies(ConvAlgorithm a, const ConvShape& s) {
  switch (a) {
    case ConvAlgorithm::kPointwiseGemm: return s.window.isPointwise();
    case ConvAlgorithm::kDepthwise: return isDepthwise(s);
    default: return true;
  }
}

uint64_t convWorkspaceBytes(ConvAlgorithm a, const ConvShape& s) {
  switch (resolve(a, s)) {
    case ConvAlgorithm::kIm2colGemm: {
      const GemmPlan plan = planGemm(s, true);
      return uint64_t(plan.slots * plan.columnsSize) * sizeof(float);
    }
    case ConvAlgorithm::kDirect: return directConvWorkspaceBytes(s);
    default: return 0;
  }
}

template <class T>
void convolution(const ConvShape& s, const T* x, const T* w, const T* bias, T* y) {
  if constexpr (std::is_same_v<T, float>) convolution(s, x, w, bias, Epilogue{}, y);
  else convolutionOntoBias(s, x, w, bias, y);
}

void convolution(const ConvShape& s, const float* x, const float* w, const float* bias, const Epilogue& epilogue,
                 float* y) {
  convolution(s, x, w, bias, epilogue, y, ConvAlgorithm::kAuto, nullptr);
}

void convolution(const ConvShape& s, const float* x, const float* w, const float* bias, const Epilogue& epilogue,
                 float* y, ConvAlgorithm algorithm, void* workspace) {
  const ConvAlgorithm a = resolve(algorithm, s);
  if (!convAlgorithmApplies(a, s))
    throw std::invalid_argument("this convolution algorithm does not apply to the layer's shape");
  float* scratch = static_cast<float*>(workspace);
  if (!scratch) scratch = reusedScratch<float>(int64_t(convWorkspaceBytes(a, s) / sizeof(float)));
  switch (a) {
    case ConvAlgorithm::kDepthwise:
      convolutionOntoBias(s, x, w, bias, y);
      return applyEpilogue(y, s.batch * s.outChannels * s.window.outSize(), epilogue);
    case ConvAlgorithm::kDirect:
      return directConvolution(
          s, x, packDirectConvWeights(s.group, s.outChannels, s.inChannels / s.group, s.window.kernelSize(), w).data(),
          bias, epilogue, y, scratch);
    default:
      return gemmConvolutionWithEpilogue(s, x, w, bias, epilogue, y, a == ConvAlgorithm::kIm2colGemm, scratch);
  }
}

void convolutionInt32(const ConvShape& s, const int32_t* x, const int32_t* w, int32_t* y) {
  autoGemmConvolution(s, x, w, y, 0);
}

template <class T>
void convTranspose(const ConvShape& s, const T* x, const T* w, const T* bias, T* y) {
  const SpatialWindow& win = s.window;
  const int64_t cPerGroup = s.inChannels / s.group, mPerGroup = s.outChannels / s.group;
  const int64_t rows = mPerGroup * win.kernelSize(), xSize = win.outSize(), ySize = win.inSize();
  fillWithBias(s.batch, s.outChannels, ySize, bias, y);
  T* columns = reusedScratch<T>(rows * xSize);
  SingleThreadedBlas blasGuard;
  for (int64_t n = 0; n < s.batch; ++n) {
    for (int64_t g = 0; g < s.group; ++g) {
      // columns[M/g * K, xSize] = W_g^T X_g, then scattered back onto the output image.
      parallelGemm(true, rows, xSize, cPerGroup, w + g * cPerGroup * rows,
                   x + (n * s.inChannels + g * cPerGroup) * xSize, columns, T(0));
      col2imAdd(win, mPerGroup, columns, y + (n * s.outChannels + g * mPerGroup) * ySize);
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
