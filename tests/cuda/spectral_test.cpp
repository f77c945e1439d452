// The CUDA signal kernels (kernels/cuda/spectral) against the CPU's (kernels/cpu/signal): DFT along
// inner and outer axes, real and complex, cut and zero-padded, one-sided and inverse; STFT with and
// without a window; the window generators; MelWeightMatrix. References run in double on the
// inputs rounded to the tested type.
#include "cuda/layout_test_support.h"

#include <kernels/cpu/signal/dft.h>
#include <kernels/cuda/spectral/spectral.h>

using namespace kiln::kernels::cuda;
using namespace kiln::test;
namespace cpu = kiln::kernels;

namespace {

const std::vector<ElementType> kFloatTypes{ElementType::kFloat32, ElementType::kFloat16, ElementType::kFloat64};

std::vector<double> roundedRandom(ElementType type, int64_t count, uint32_t seed) {
  return valuesOf(randomElements(type, count, seed), type);
}

double looseToleranceFor(ElementType type) { return type == ElementType::kFloat16 ? 3e-3 : toleranceFor(type); }

TEST(SpectralKernels, DftMatchesTheCpu) {
  KILN_REQUIRE_GPU();
  struct Case {
    int64_t outer, inner, inputLength, channels, dftLength;
    bool onesided, inverse;
  };
  const std::vector<Case> cases{
      {1, 10, 10, 1, 10, false, false}, {1, 1, 10, 1, 10, false, false}, {1, 10, 10, 2, 10, false, true},
      {3, 2, 7, 2, 7, true, false},     {2, 3, 5, 1, 8, true, false},    {1, 1, 9, 2, 4, false, true},
      {1, 1, 1, 1, 1, false, false},    {2, 1, 13, 1, 13, true, true},
  };
  for (const Case& c : cases)
    for (ElementType type : kFloatTypes) {
      SCOPED_TRACE(std::string(toString(type)) + " outer " + std::to_string(c.outer) + " inner " +
                   std::to_string(c.inner) + " n " + std::to_string(c.inputLength) + "->" + std::to_string(c.dftLength));
      cpu::DftLayout layout;
      layout.outer = c.outer, layout.inner = c.inner, layout.inputLength = c.inputLength, layout.channels = c.channels;
      layout.dftLength = c.dftLength, layout.inverse = c.inverse;
      layout.outputLength = c.onesided ? c.dftLength / 2 + 1 : c.dftLength;
      const auto in = roundedRandom(type, c.outer * c.inputLength * c.inner * c.channels, 11);
      std::vector<double> want(size_t(c.outer * layout.outputLength * c.inner * 2));
      cpu::dft<double>(layout, in.data(), want.data());
      DeviceBuffer dIn(fromValues(in, type)), dOut(byteSize(type, int64_t(want.size())));
      EXPECT_TRUE(launchOverPoison(dOut, [&] { return dft(dIn.get(), dOut.get(), layout, type, nullptr); }));
      EXPECT_TRUE(closeValues(valuesOf(dOut.download(), type), want, looseToleranceFor(type)));
    }
}

TEST(SpectralKernels, StftMatchesFramesThroughTheCpuDft) {
  KILN_REQUIRE_GPU();
  struct Case {
    int64_t batch, length, channels, frameLength, step;
    bool window, onesided;
  };
  const std::vector<Case> cases{{1, 128, 1, 16, 8, false, true}, {1, 128, 1, 16, 8, true, true},
                                {2, 37, 2, 9, 5, true, false},   {1, 10, 1, 10, 3, true, true},
                                {3, 20, 1, 7, 7, false, false}};
  for (const Case& c : cases)
    for (ElementType type : kFloatTypes) {
      SCOPED_TRACE(std::string(toString(type)) + " length " + std::to_string(c.length) + " frame " +
                   std::to_string(c.frameLength) + " step " + std::to_string(c.step));
      const int64_t frames = (c.length - c.frameLength) / c.step + 1;
      const int64_t bins = c.onesided ? c.frameLength / 2 + 1 : c.frameLength;
      const auto signal = roundedRandom(type, c.batch * c.length * c.channels, 12);
      const auto window = valuesOf(fromValues(cpu::windowValues(cpu::WindowKind::kHann, c.frameLength, true), type), type);
      // The CPU's STFT: frames windowed and rounded to the type, then one DFT per frame.
      std::vector<double> framed(size_t(c.batch * frames * c.frameLength * c.channels));
      for (int64_t b = 0; b < c.batch; ++b)
        for (int64_t f = 0; f < frames; ++f)
          for (int64_t k = 0; k < c.frameLength; ++k)
            for (int64_t ch = 0; ch < c.channels; ++ch)
              framed[size_t(((b * frames + f) * c.frameLength + k) * c.channels + ch)] =
                  signal[size_t((b * c.length + f * c.step + k) * c.channels + ch)] * (c.window ? window[size_t(k)] : 1.0);
      framed = valuesOf(fromValues(framed, type), type);
      cpu::DftLayout layout;
      layout.outer = c.batch * frames, layout.inputLength = layout.dftLength = c.frameLength;
      layout.channels = c.channels, layout.outputLength = bins;
      std::vector<double> want(size_t(c.batch * frames * bins * 2));
      cpu::dft<double>(layout, framed.data(), want.data());
      StftShape shape;
      shape.batch = c.batch, shape.length = c.length, shape.channels = c.channels, shape.frames = frames;
      shape.frameLength = c.frameLength, shape.step = c.step, shape.outputLength = bins;
      DeviceBuffer dSignal(fromValues(signal, type)), dWindow(fromValues(window, type));
      DeviceBuffer dOut(byteSize(type, int64_t(want.size())));
      EXPECT_TRUE(launchOverPoison(dOut, [&] {
        return stft(dSignal.get(), c.window ? dWindow.get() : nullptr, dOut.get(), shape, type, nullptr);
      }));
      EXPECT_TRUE(closeValues(valuesOf(dOut.download(), type), want, looseToleranceFor(type)));
    }
}

TEST(SpectralKernels, WindowsMatchTheCpu) {
  KILN_REQUIRE_GPU();
  for (cpu::WindowKind kind : {cpu::WindowKind::kHann, cpu::WindowKind::kHamming, cpu::WindowKind::kBlackman})
    for (bool periodic : {true, false})
      for (int64_t size : {1, 2, 10, 17})
        for (ElementType type : {ElementType::kFloat32, ElementType::kFloat16, ElementType::kFloat64, ElementType::kInt32}) {
          SCOPED_TRACE(std::string(toString(type)) + " kind " + std::to_string(int(kind)) + " size " +
                       std::to_string(size) + (periodic ? " periodic" : " symmetric"));
          const auto want = cpu::windowValues(kind, size, periodic);
          DeviceBuffer out(byteSize(type, size));
          EXPECT_TRUE(launchOverPoison(out, [&] { return windowFunction(out.get(), size, kind, periodic, type, nullptr); }));
          // Integers truncate, as the CPU's castFromDouble does.
          if (type == ElementType::kInt32)
            EXPECT_TRUE(sameElements(out.download(), fromValues(want, type), elementBytes(type)));
          else
            EXPECT_TRUE(closeValues(valuesOf(out.download(), type), valuesOf(fromValues(want, type), type),
                                    toleranceFor(type)));
        }
}

TEST(SpectralKernels, MelWeightMatrixMatchesTheCpu) {
  KILN_REQUIRE_GPU();
  struct Case {
    int64_t melBins, dftLength, sampleRate;
    double lower, upper;
  };
  for (const Case& c : std::vector<Case>{{8, 16, 8192, 0, 4096}, {5, 31, 16000, 20, 7000}, {1, 8, 1000, 0, 500},
                                         {12, 64, 22050, 100.5, 11025}})
    for (ElementType type : {ElementType::kFloat32, ElementType::kFloat64}) {
      SCOPED_TRACE(std::string(toString(type)) + " mel bins " + std::to_string(c.melBins) + " dft " +
                   std::to_string(c.dftLength));
      const auto want = cpu::melWeightMatrix(c.melBins, c.dftLength, c.sampleRate, c.lower, c.upper);
      DeviceBuffer lower(std::vector<double>{c.lower}), upper(std::vector<double>{c.upper});
      DeviceBuffer out(byteSize(type, int64_t(want.size())));
      EXPECT_TRUE(launchOverPoison(out, [&] {
        return melWeightMatrix(out.get(), c.melBins, c.dftLength, c.sampleRate, lower.as<double>(), upper.as<double>(),
                               type, nullptr);
      }));
      EXPECT_TRUE(closeValues(valuesOf(out.download(), type), want, toleranceFor(type)));
    }
}

TEST(SpectralKernels, RefuseBadArguments) {
  cpu::DftLayout layout;
  layout.dftLength = 0;
  EXPECT_EQ(dft(nullptr, nullptr, layout, ElementType::kFloat32, nullptr), cudaErrorInvalidValue);
  layout.dftLength = 4, layout.channels = 3;
  EXPECT_EQ(dft(nullptr, nullptr, layout, ElementType::kFloat32, nullptr), cudaErrorInvalidValue);
  layout.channels = 1;
  EXPECT_EQ(dft(nullptr, nullptr, layout, ElementType::kInt32, nullptr), cudaErrorInvalidValue);
  StftShape shape;
  shape.batch = 1, shape.length = 10, shape.frameLength = 4, shape.step = 3, shape.frames = 4, shape.outputLength = 3;
  EXPECT_EQ(stft(nullptr, nullptr, nullptr, shape, ElementType::kFloat32, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(windowFunction(nullptr, -1, cpu::WindowKind::kHann, true, ElementType::kFloat32, nullptr),
            cudaErrorInvalidValue);
}

}  // namespace
