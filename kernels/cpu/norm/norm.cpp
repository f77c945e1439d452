#include "norm.h"

#include "../common/numeric_types.h"
#include "../common/parallel.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

namespace kiln::kernels {
namespace {

template <class T>
using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <class T>
inline Acc<T> widen(T v) {
  if constexpr (std::is_same_v<T, double>) return v;
  else return toFloat(v);
}
template <class T>
inline T narrow(Acc<T> v) {
  if constexpr (std::is_same_v<T, double>) return v;
  else return fromFloat<T>(v);
}

int64_t rowGrain(int64_t rowSize) { return std::max<int64_t>(1, 16384 / std::max<int64_t>(1, rowSize)); }

// Sum of f(x[i * stride]) for i < n in double, over eight independent accumulators: a single
// chain would wait on the add latency at every element.
template <class T, class F>
double sumOf(const T* x, int64_t n, int64_t stride, F f) {
  double partial[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int64_t k = 0; k < 8; ++k) partial[k] += f(double(widen(x[(i + k) * stride])));
  double total = 0;
  for (; i < n; ++i) total += f(double(widen(x[i * stride])));
  for (double p : partial) total += p;
  return total;
}

// Mean and biased variance of n values at x[0], x[stride], ... (two passes: stable for large means).
template <class T>
void moments(const T* x, int64_t n, int64_t stride, double& mean, double& variance) {
  if (n == 0) {
    mean = variance = 0;
    return;
  }
  if (stride == 1) {  // the common case, spelled out so the loops vectorise
    mean = sumOf(x, n, 1, [](double v) { return v; }) / double(n);
    variance = sumOf(x, n, 1, [m = mean](double v) { return (v - m) * (v - m); }) / double(n);
  } else {
    mean = sumOf(x, n, stride, [](double v) { return v; }) / double(n);
    variance = sumOf(x, n, stride, [m = mean](double v) { return (v - m) * (v - m); }) / double(n);
  }
}

// y = x * a + b over n contiguous values.
template <class T>
inline void scaleShift(const T* x, int64_t n, Acc<T> a, Acc<T> b, T* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = narrow<T>(widen(x[i]) * a + b);
}

}  // namespace

template <class T>
void batchNormalization(int64_t batch, int64_t channels, int64_t spatial, const T* x, const float* scale,
                        const float* bias, const float* mean, const float* variance, float epsilon, T* y) {
  parallelFor(batch * channels, rowGrain(spatial), [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const int64_t c = p % channels;
      const Acc<T> a = Acc<T>(scale[c]) / std::sqrt(Acc<T>(variance[c]) + Acc<T>(epsilon));
      const Acc<T> b = Acc<T>(bias[c]) - Acc<T>(mean[c]) * a;
      scaleShift(x + p * spatial, spatial, a, b, y + p * spatial);
    }
  });
}

template <class T>
void channelMoments(int64_t batch, int64_t channels, int64_t spatial, const T* x, float* mean, float* variance) {
  parallelFor(channels, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      double sum = 0, squares = 0;
      for (int64_t n = 0; n < batch; ++n) {
        const T* plane = x + (n * channels + c) * spatial;
        for (int64_t i = 0; i < spatial; ++i) sum += widen(plane[i]);
      }
      const double count = double(batch * spatial), m = count > 0 ? sum / count : 0.0;
      for (int64_t n = 0; n < batch; ++n) {
        const T* plane = x + (n * channels + c) * spatial;
        for (int64_t i = 0; i < spatial; ++i) squares += (widen(plane[i]) - m) * (widen(plane[i]) - m);
      }
      mean[c] = float(m);
      variance[c] = float(count > 0 ? squares / count : 0.0);
    }
  });
}

template <class T>
void normalizeRows(int64_t rows, int64_t rowSize, const T* x, const RowAffine& affine, float epsilon, T* y,
                   float* rowMean, float* rowInvStdDev) {
  parallelFor(rows, rowGrain(rowSize), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const T* in = x + r * rowSize;
      T* out = y + r * rowSize;
      double mean, variance;
      moments(in, rowSize, 1, mean, variance);
      const Acc<T> invStd = Acc<T>(1.0 / std::sqrt(variance + double(epsilon)));
      if (rowMean) rowMean[r] = float(mean);
      if (rowInvStdDev) rowInvStdDev[r] = float(invStd);
      const int64_t first = (r % affine.rowsPerCycle) * affine.channelsPerRow;
      const float* scale = affine.scale + first;
      const float* bias = affine.bias ? affine.bias + first : nullptr;
      if (affine.elementsPerChannel == 1) {  // a scale per element (LayerNormalization)
        for (int64_t j = 0; j < rowSize; ++j) {
          Acc<T> v = (widen(in[j]) - Acc<T>(mean)) * invStd * Acc<T>(scale[j]);
          out[j] = narrow<T>(bias ? v + Acc<T>(bias[j]) : v);
        }
        continue;
      }
      for (int64_t ch = 0; ch < affine.channelsPerRow; ++ch) {
        const Acc<T> a = invStd * Acc<T>(scale[ch]);
        const Acc<T> b = (bias ? Acc<T>(bias[ch]) : Acc<T>(0)) - Acc<T>(mean) * a;
        const int64_t offset = ch * affine.elementsPerChannel;
        scaleShift(in + offset, affine.elementsPerChannel, a, b, out + offset);
      }
    }
  });
}

template <class T>
void localResponseNormalization(int64_t batch, int64_t channels, int64_t spatial, const T* x, int64_t size,
                                float alpha, float beta, float bias, T* y) {
  const int64_t before = (size - 1) / 2, after = size - 1 - before;  // floor / ceil of (size - 1) / 2
  parallelFor(batch * channels, rowGrain(spatial * size), [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const int64_t n = p / channels, c = p % channels;
      const int64_t c0 = std::max<int64_t>(0, c - before), c1 = std::min(channels - 1, c + after);
      for (int64_t i = 0; i < spatial; ++i) {
        Acc<T> squares = 0;
        for (int64_t k = c0; k <= c1; ++k) {
          Acc<T> v = widen(x[(n * channels + k) * spatial + i]);
          squares += v * v;
        }
        Acc<T> denom = std::pow(Acc<T>(bias) + Acc<T>(alpha) / Acc<T>(size) * squares, Acc<T>(beta));
        y[p * spatial + i] = narrow<T>(widen(x[p * spatial + i]) / denom);
      }
    }
  });
}

template <class T>
void lpNormalization(int64_t outer, int64_t axis, int64_t inner, const T* x, int64_t p, T* y) {
  parallelFor(outer * inner, rowGrain(axis), [&](int64_t begin, int64_t end) {
    for (int64_t line = begin; line < end; ++line) {
      const int64_t base = line / inner * axis * inner + line % inner;
      Acc<T> norm = 0;
      for (int64_t i = 0; i < axis; ++i) {
        Acc<T> v = widen(x[base + i * inner]);
        norm += p == 1 ? std::abs(v) : v * v;
      }
      if (p == 2) norm = std::sqrt(norm);
      for (int64_t i = 0; i < axis; ++i) {
        Acc<T> v = widen(x[base + i * inner]);
        y[base + i * inner] = narrow<T>(norm != 0 ? v / norm : Acc<T>(0));
      }
    }
  });
}

template <class T>
void meanVarianceNormalization(const std::vector<int64_t>& dims, const std::vector<bool>& reduced, const T* x, T* y) {
  // Each element's statistics slot is its index in the shape with the reduced axes removed.
  const size_t rank = dims.size();
  std::vector<int64_t> slotStride(rank, 0);
  int64_t slots = 1, total = 1;
  for (size_t a = rank; a-- > 0;) {
    total *= dims[a];
    if (!reduced[a]) slotStride[a] = slots, slots *= dims[a];
  }
  auto forEachElement = [&](auto&& fn) {
    std::vector<int64_t> index(rank, 0);
    int64_t slot = 0;
    for (int64_t i = 0; i < total; ++i) {
      fn(i, slot);
      for (size_t a = rank; a-- > 0;) {  // odometer step, keeping `slot` in sync
        slot += slotStride[a];
        if (++index[a] < dims[a]) break;
        slot -= slotStride[a] * dims[a];
        index[a] = 0;
      }
    }
  };
  std::vector<double> sum(size_t(slots), 0.0), squares(size_t(slots), 0.0);
  forEachElement([&](int64_t i, int64_t slot) {
    double v = widen(x[i]);
    sum[size_t(slot)] += v;
    squares[size_t(slot)] += v * v;
  });
  const double count = double(total / std::max<int64_t>(slots, 1));
  for (int64_t s = 0; s < slots; ++s) {
    double mean = sum[size_t(s)] / count;
    sum[size_t(s)] = mean;
    squares[size_t(s)] = std::sqrt(std::max(0.0, squares[size_t(s)] / count - mean * mean)) + 1e-9;
  }
  forEachElement([&](int64_t i, int64_t slot) {
    y[i] = narrow<T>(Acc<T>((double(widen(x[i])) - sum[size_t(slot)]) / squares[size_t(slot)]));
  });
}

#define KILN_NORM_INSTANTIATIONS(T)                                                                             \
  template void batchNormalization<T>(int64_t, int64_t, int64_t, const T*, const float*, const float*,          \
                                      const float*, const float*, float, T*);                                   \
  template void channelMoments<T>(int64_t, int64_t, int64_t, const T*, float*, float*);                         \
  template void normalizeRows<T>(int64_t, int64_t, const T*, const RowAffine&, float, T*, float*, float*);      \
  template void localResponseNormalization<T>(int64_t, int64_t, int64_t, const T*, int64_t, float, float, float, \
                                              T*);                                                              \
  template void lpNormalization<T>(int64_t, int64_t, int64_t, const T*, int64_t, T*);                           \
  template void meanVarianceNormalization<T>(const std::vector<int64_t>&, const std::vector<bool>&, const T*, T*);
KILN_NORM_INSTANTIATIONS(float)
KILN_NORM_INSTANTIATIONS(double)
KILN_NORM_INSTANTIATIONS(Float16)
KILN_NORM_INSTANTIATIONS(BFloat16)
#undef KILN_NORM_INSTANTIATIONS

}  // namespace kiln::kernels
