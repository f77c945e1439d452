#pragma once
// Discrete Fourier transforms along one axis (ONNX DFT and STFT). Lengths that are powers of two use
// a radix-2 FFT; other lengths use Bluestein's algorithm over a power-of-two FFT, so every length
// costs O(n log n). Arithmetic is in double.
#include <complex>
#include <cstdint>
#include <vector>

namespace kiln::kernels {

// A transform of one length and direction, reusable across signals (twiddles precomputed).
class DftPlan {
 public:
  DftPlan(int64_t length, bool inverse);
  int64_t length() const { return length_; }
  // In place on `data` (length() values); `scratch` is resized as needed. Inverse transforms are
  // scaled by 1/length.
  void transform(std::complex<double>* data, std::vector<std::complex<double>>& scratch) const;

 private:
  int64_t length_;
  bool inverse_;
  int64_t fftLength_;                             // power of two used underneath
  std::vector<std::complex<double>> twiddles_;    // of the power-of-two FFT (forward)
  std::vector<std::complex<double>> chirp_;       // Bluestein: exp(∓iπk²/n)
  std::vector<std::complex<double>> chirpFilter_; // Bluestein: FFT of the conjugate chirp
};

// The signal as [outer, inputLength, inner, channels] with channels 1 (real) or 2 (complex); the
// result as [outer, outputLength, inner, 2]. Each signal is cut or zero-padded to dftLength and the
// first outputLength bins are written (dftLength/2 + 1 for one-sided output).
struct DftLayout {
  int64_t outer = 1, inner = 1, inputLength = 0, channels = 1;
  int64_t dftLength = 0, outputLength = 0;
  bool inverse = false;
};

template <class T>
void dft(const DftLayout& layout, const T* input, T* output);

// Window functions (ONNX HannWindow, HammingWindow, BlackmanWindow): periodic windows divide by
// size, symmetric ones by size - 1.
enum class WindowKind { kHann, kHamming, kBlackman };
std::vector<double> windowValues(WindowKind kind, int64_t size, bool periodic);

// ONNX MelWeightMatrix: [dftLength / 2 + 1, melBins] triangular filters, following the ONNX
// reference (bin edges spaced evenly in mel over melBins + 2 points).
std::vector<double> melWeightMatrix(int64_t melBins, int64_t dftLength, int64_t sampleRate, double lowerHertz,
                                    double upperHertz);

}  // namespace kiln::kernels
