#include "dft.h"

#include <kernels/cpu/common/numeric_types.h>
#include <kernels/cpu/common/parallel.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <type_traits>

namespace kiln::kernels {
namespace {

using Complex = std::complex<double>;

bool isPowerOfTwo(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

int64_t nextPowerOfTwo(int64_t n) {
  int64_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

std::vector<Complex> forwardTwiddles(int64_t n) {
  std::vector<Complex> w(size_t(n / 2));
  for (int64_t k = 0; k < n / 2; ++k) w[size_t(k)] = std::polar(1.0, -2.0 * std::numbers::pi * double(k) / double(n));
  return w;
}

// Iterative radix-2 FFT, unscaled; `twiddles` are the forward ones for n.
void fftPowerOfTwo(Complex* a, int64_t n, const std::vector<Complex>& twiddles, bool inverse) {
  for (int64_t i = 1, j = 0; i < n; ++i) {
    int64_t bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) std::swap(a[i], a[j]);
  }
  for (int64_t len = 2; len <= n; len <<= 1) {
    int64_t half = len / 2, stride = n / len;
    for (int64_t start = 0; start < n; start += len)
      for (int64_t k = 0; k < half; ++k) {
        Complex w = twiddles[size_t(k * stride)];
        if (inverse) w = std::conj(w);
        Complex u = a[start + k], v = a[start + k + half] * w;
        a[start + k] = u + v;
        a[start + k + half] = u - v;
      }
  }
}

template <class T>
double toDouble(T v) {
  if constexpr (std::is_floating_point_v<T>) return double(v);
  else return double(toFloat(v));
}

template <class T>
T fromDouble(double v) {
  if constexpr (std::is_floating_point_v<T>) return T(v);
  else return fromFloat<T>(float(v));
}

}  // namespace

DftPlan::DftPlan(int64_t length, bool inverse) : length_(length), inverse_(inverse) {
  fftLength_ = isPowerOfTwo(length) ? length : nextPowerOfTwo(2 * length - 1);
  twiddles_ = forwardTwiddles(fftLength_);
  if (isPowerOfTwo(length)) return;
  // Bluestein: jk = (j² + k² - (k - j)²) / 2 turns the DFT into a convolution with a chirp.
  chirp_.resize(size_t(length));
  double sign = inverse ? 1.0 : -1.0;
  for (int64_t k = 0; k < length; ++k) {
    int64_t kk = (k * k) % (2 * length);  // keeps the angle exact for long signals
    chirp_[size_t(k)] = std::polar(1.0, sign * std::numbers::pi * double(kk) / double(length));
  }
  chirpFilter_.assign(size_t(fftLength_), Complex());
  chirpFilter_[0] = std::conj(chirp_[0]);
  for (int64_t k = 1; k < length; ++k)
    chirpFilter_[size_t(k)] = chirpFilter_[size_t(fftLength_ - k)] = std::conj(chirp_[size_t(k)]);
  fftPowerOfTwo(chirpFilter_.data(), fftLength_, twiddles_, false);
}

void DftPlan::transform(Complex* data, std::vector<Complex>& scratch) const {
  if (chirp_.empty()) {
    fftPowerOfTwo(data, length_, twiddles_, inverse_);
  } else {
    scratch.assign(size_t(fftLength_), Complex());
    for (int64_t k = 0; k < length_; ++k) scratch[size_t(k)] = data[k] * chirp_[size_t(k)];
    fftPowerOfTwo(scratch.data(), fftLength_, twiddles_, false);
    for (int64_t k = 0; k < fftLength_; ++k) scratch[size_t(k)] *= chirpFilter_[size_t(k)];
    fftPowerOfTwo(scratch.data(), fftLength_, twiddles_, true);
    double scale = 1.0 / double(fftLength_);
    for (int64_t k = 0; k < length_; ++k) data[k] = scratch[size_t(k)] * scale * chirp_[size_t(k)];
  }
  if (inverse_) {
    double scale = 1.0 / double(length_);
    for (int64_t k = 0; k < length_; ++k) data[k] *= scale;
  }
}

template <class T>
void dft(const DftLayout& layout, const T* input, T* output) {
  const DftPlan plan(layout.dftLength, layout.inverse);
  const int64_t n = layout.dftLength, inner = layout.inner, channels = layout.channels;
  const int64_t copied = std::min(layout.inputLength, n);
  parallelFor(layout.outer * inner, std::max<int64_t>(1, 4096 / n), [&](int64_t begin, int64_t end) {
    std::vector<Complex> samples(static_cast<size_t>(n)), scratch;
    for (int64_t line = begin; line < end; ++line) {
      int64_t o = line / inner, i = line % inner;
      for (int64_t k = 0; k < copied; ++k) {
        const T* s = input + ((o * layout.inputLength + k) * inner + i) * channels;
        samples[size_t(k)] = Complex(toDouble(s[0]), channels == 2 ? toDouble(s[1]) : 0.0);
      }
      std::fill(samples.begin() + copied, samples.end(), Complex());
      plan.transform(samples.data(), scratch);
      for (int64_t k = 0; k < layout.outputLength; ++k) {
        T* d = output + ((o * layout.outputLength + k) * inner + i) * 2;
        d[0] = fromDouble<T>(samples[size_t(k)].real());
        d[1] = fromDouble<T>(samples[size_t(k)].imag());
      }
    }
  });
}

template void dft<float>(const DftLayout&, const float*, float*);
template void dft<double>(const DftLayout&, const double*, double*);
template void dft<Float16>(const DftLayout&, const Float16*, Float16*);
template void dft<BFloat16>(const DftLayout&, const BFloat16*, BFloat16*);

std::vector<double> windowValues(WindowKind kind, int64_t size, bool periodic) {
  std::vector<double> w(size_t(std::max<int64_t>(size, 0)));
  double denominator = double(std::max<int64_t>(periodic ? size : size - 1, 1));
  for (int64_t k = 0; k < size; ++k) {
    double x = 2.0 * std::numbers::pi * double(k) / denominator;
    switch (kind) {
      case WindowKind::kHann: w[size_t(k)] = 0.5 - 0.5 * std::cos(x); break;
      case WindowKind::kHamming: w[size_t(k)] = 25.0 / 46.0 - 21.0 / 46.0 * std::cos(x); break;
      case WindowKind::kBlackman: w[size_t(k)] = 0.42 - 0.5 * std::cos(x) + 0.08 * std::cos(2.0 * x); break;
    }
  }
  return w;
}

std::vector<double> melWeightMatrix(int64_t melBins, int64_t dftLength, int64_t sampleRate, double lowerHertz,
                                    double upperHertz) {
  const int64_t spectrumBins = dftLength / 2 + 1;
  std::vector<double> out(size_t(spectrumBins * melBins), 0.0);
  auto toMel = [](double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); };
  double lowMel = toMel(lowerHertz), step = (toMel(upperHertz) - lowMel) / double(melBins + 2);
  std::vector<int64_t> edges(size_t(melBins + 2));
  for (int64_t i = 0; i < melBins + 2; ++i) {
    double hz = 700.0 * (std::pow(10.0, (double(i) * step + lowMel) / 2595.0) - 1.0);
    edges[size_t(i)] = int64_t(std::floor(double(dftLength + 1) * hz / double(sampleRate)));
  }
  auto set = [&](int64_t bin, int64_t mel, double value) {
    if (bin >= 0 && bin < spectrumBins) out[size_t(bin * melBins + mel)] = value;
  };
  for (int64_t m = 0; m < melBins; ++m) {
    int64_t low = edges[size_t(m)], center = edges[size_t(m + 1)], high = edges[size_t(m + 2)];
    if (center == low) set(center, m, 1.0);
    else
      for (int64_t j = low; j <= center; ++j) set(j, m, double(j - low) / double(center - low));
    for (int64_t j = center; j < high; ++j) set(j, m, double(high - j) / double(high - center));
  }
  return out;
}

}  // namespace kiln::kernels
