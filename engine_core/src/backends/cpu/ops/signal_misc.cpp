// CPU reference kernels for the signal_misc op family: DFT, STFT, window functions and
// MelWeightMatrix here; detection/sampling, text and random ops in signal_misc_*.cpp.
#include "signal_misc.h"

#include "../../../ops/op_families.h"
#include "../dispatch.h"
#include "control_sequence_tensors.h"

#include <kernels/cpu/signal/dft.h>

#include <type_traits>

namespace kiln {
namespace {

template <class T>
double castToDouble(T v) {
  if constexpr (std::is_arithmetic_v<T>) return double(v);
  else return double(float(v));
}

template <class T>
T castFromDouble(double v) {
  if constexpr (std::is_arithmetic_v<T>) return static_cast<T>(v);
  else return kernels::fromFloat<T>(float(v));
}

// Writes double values into output 0 with its inferred element type.
void setOutputValues(KernelContext& ctx, const std::vector<double>& values, std::vector<int64_t> dims) {
  HostTensor& out = ctx.allocateOutput(0, ctx.inferredOutput(0).dtype, std::move(dims));
  dispatchNumeric(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* dst = out.data<T>();
    for (size_t i = 0; i < values.size(); ++i) dst[i] = castFromDouble<T>(values[i]);
  });
}

int64_t positiveScalar(const KernelContext& ctx, size_t i, const char* what) {
  int64_t v = scalarInput(ctx, i, what);
  if (v <= 0) ctx.fail(std::string(what) + " must be positive, got " + std::to_string(v));
  return v;
}

void dftKernel(KernelContext& ctx) {
  const HostTensor& in = ctx.input(0);
  int64_t rank = int64_t(in.rank());
  if (rank < 2 || (in.dims().back() != 1 && in.dims().back() != 2))
    ctx.fail("the input must end in a dimension of 1 (real) or 2 (complex), got shape " + dimsToString(in.dims()));
  int64_t axis = ctx.layer().attrInt("axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank - 1)
    ctx.fail("axis " + std::to_string(ctx.layer().attrInt("axis", 1)) + " does not name a signal axis of shape " +
             dimsToString(in.dims()));
  kernels::DftLayout layout;
  layout.inputLength = in.dim(size_t(axis));
  layout.channels = in.dims().back();
  layout.dftLength = ctx.hasInput(1) ? positiveScalar(ctx, 1, "dft_length") : layout.inputLength;
  if (layout.dftLength <= 0) ctx.fail("the signal axis is empty; give a positive dft_length");
  layout.inverse = ctx.layer().attrInt("inverse", 0) != 0;
  layout.outputLength = ctx.layer().attrInt("onesided", 0) != 0 ? layout.dftLength / 2 + 1 : layout.dftLength;
  for (int64_t d = 0; d < axis; ++d) layout.outer *= in.dim(size_t(d));
  for (int64_t d = axis + 1; d < rank - 1; ++d) layout.inner *= in.dim(size_t(d));
  std::vector<int64_t> dims = in.dims();
  dims[size_t(axis)] = layout.outputLength;
  dims.back() = 2;
  HostTensor& out = ctx.allocateOutput(0, in.dtype(), dims);
  dispatchFloat(in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    kernels::dft<T>(layout, in.data<T>(), out.data<T>());
  });
}

// Frames the signal (windowed) into [batch * frames, frameLength, channels], then one DFT per frame.
void stftKernel(KernelContext& ctx) {
  const HostTensor& signal = ctx.input(0);
  if (signal.rank() != 3 || (signal.dim(2) != 1 && signal.dim(2) != 2))
    ctx.fail("the signal must be [batch, length, 1 or 2], got shape " + dimsToString(signal.dims()));
  int64_t step = positiveScalar(ctx, 1, "frame_step");
  const HostTensor* window = ctx.hasInput(2) ? &ctx.input(2) : nullptr;
  if (window && window->rank() != 1) ctx.fail("window must be 1-D, got shape " + dimsToString(window->dims()));
  if (!window && !ctx.hasInput(3)) ctx.fail("STFT needs a window or a frame_length");
  int64_t frameLength = ctx.hasInput(3) ? positiveScalar(ctx, 3, "frame_length") : window->dim(0);
  if (window && window->dim(0) != frameLength)
    ctx.fail("window has " + std::to_string(window->dim(0)) + " values but frame_length is " + std::to_string(frameLength));
  int64_t batch = signal.dim(0), length = signal.dim(1), channels = signal.dim(2);
  if (frameLength > length)
    ctx.fail("frame length " + std::to_string(frameLength) + " is longer than the signal (" + std::to_string(length) + ")");
  int64_t frames = (length - frameLength) / step + 1;
  kernels::DftLayout layout;
  layout.outer = batch * frames;
  layout.inputLength = layout.dftLength = frameLength;
  layout.channels = channels;
  layout.outputLength = ctx.layer().attrInt("onesided", 1) != 0 ? frameLength / 2 + 1 : frameLength;
  HostTensor& out = ctx.allocateOutput(0, signal.dtype(), {batch, frames, layout.outputLength, 2});
  std::vector<double> weights(size_t(frameLength), 1.0);
  if (window) weights = window->toDoubleVector();
  dispatchFloat(signal.dtype(), [&](auto tag) {
    using T = decltype(tag);
    std::vector<T> framed(size_t(batch * frames * frameLength * channels));
    const T* src = signal.data<T>();
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t f = 0; f < frames; ++f)
        for (int64_t k = 0; k < frameLength; ++k)
          for (int64_t c = 0; c < channels; ++c) {
            double v = castToDouble(src[((b * length) + f * step + k) * channels + c]) * weights[size_t(k)];
            framed[size_t(((b * frames + f) * frameLength + k) * channels + c)] = castFromDouble<T>(v);
          }
    kernels::dft<T>(layout, framed.data(), out.data<T>());
  });
}

void windowKernel(KernelContext& ctx, kernels::WindowKind kind) {
  int64_t size = scalarInput(ctx, 0, "size");
  if (size < 0) ctx.fail("size must not be negative, got " + std::to_string(size));
  bool periodic = ctx.layer().attrInt("periodic", 1) != 0;
  setOutputValues(ctx, kernels::windowValues(kind, size, periodic), {size});
}

void melWeightMatrixKernel(KernelContext& ctx) {
  int64_t melBins = positiveScalar(ctx, 0, "num_mel_bins");
  int64_t dftLength = positiveScalar(ctx, 1, "dft_length");
  int64_t sampleRate = positiveScalar(ctx, 2, "sample_rate");
  double lower = ctx.input(3).toDoubleVector().at(0), upper = ctx.input(4).toDoubleVector().at(0);
  if (lower < 0 || upper <= lower)
    ctx.fail("the band must satisfy 0 <= lower_edge_hertz < upper_edge_hertz, got " + std::to_string(lower) + " to " +
             std::to_string(upper));
  setOutputValues(ctx, kernels::melWeightMatrix(melBins, dftLength, sampleRate, lower, upper),
                  {dftLength / 2 + 1, melBins});
}

}  // namespace

void registerSignalMiscCpuKernels(CpuKernelRegistry& registry) {
  registry.add("DFT", dftKernel);
  registry.add("STFT", stftKernel);
  registry.add("HannWindow", [](KernelContext& ctx) { windowKernel(ctx, kernels::WindowKind::kHann); });
  registry.add("HammingWindow", [](KernelContext& ctx) { windowKernel(ctx, kernels::WindowKind::kHamming); });
  registry.add("BlackmanWindow", [](KernelContext& ctx) { windowKernel(ctx, kernels::WindowKind::kBlackman); });
  registry.add("MelWeightMatrix", melWeightMatrixKernel);
  registerDetectionCpuKernels(registry);
  registerTextCpuKernels(registry);
  registerRandomCpuKernels(registry);
}

}  // namespace kiln
