// Signal ops on the GPU (kernels/cuda/spectral), with the CPU's semantics
// (backends/cpu/ops/signal_misc.cpp): DFT along an axis (onesided, inverse, dft_length), STFT
// (frame_step, an optional window, frame_length, onesided), the Hann / Hamming / Blackman window
// generators (periodic, output_datatype) and MelWeightMatrix. The scalars shape inference reads
// (lengths, steps, sizes, bin counts) are host values; the window and the band's edges are read on
// the device.
#include "cuda_data_step.h"

#include <kiln/error.h>

#include <algorithm>

#include <kernels/cuda/spectral/spectral.h>

namespace kiln::cuda {
namespace {

namespace k = kernels::cuda;

class SignalStep : public DataStep {
 public:
  using DataStep::DataStep;

 protected:
  [[noreturn]] void fail(const std::string& why) const {
    throw Error(ErrorCode::kInvalidArgument, layer_.describe() + ": " + why);
  }
  // A positive scalar host input, as the CPU's positiveScalar.
  int64_t positiveScalar(const HostValues& values, size_t i, const char* what) const {
    const int64_t v = values.at(i).toInt64Vector().at(0);
    if (v <= 0) fail(std::string(what) + " must be positive, got " + std::to_string(v));
    return v;
  }
};

class DftStep : public SignalStep {
 public:
  using SignalStep::SignalStep;
  void enqueue(const StepArgs& args, Stream& stream) const override {
    const TensorView &in = args.inputs[0], &out = args.outputs[0];
    const int64_t rank = int64_t(in.dims.size());
    if (rank < 2 || (in.dims.back() != 1 && in.dims.back() != 2))
      fail("the input must end in a dimension of 1 (real) or 2 (complex), got shape " + dimsToString(in.dims));
    int64_t axis = layer_.attrInt("axis", 1);
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank - 1)
      fail("axis " + std::to_string(layer_.attrInt("axis", 1)) + " does not name a signal axis of shape " +
           dimsToString(in.dims));
    const HostValues values(*this, args);
    kernels::DftLayout layout;
    layout.inputLength = in.dims[size_t(axis)];
    layout.channels = in.dims.back();
    layout.dftLength = values(1) ? positiveScalar(values, 1, "dft_length") : layout.inputLength;
    if (layout.dftLength <= 0) fail("the signal axis is empty; give a positive dft_length");
    layout.inverse = layer_.attrInt("inverse", 0) != 0;
    layout.outputLength = layer_.attrInt("onesided", 0) != 0 ? layout.dftLength / 2 + 1 : layout.dftLength;
    for (int64_t d = 0; d < axis; ++d) layout.outer *= in.dims[size_t(d)];
    for (int64_t d = axis + 1; d < rank - 1; ++d) layout.inner *= in.dims[size_t(d)];
    check(k::dft(input(args, 0), out.data, layout, elementType(in), streamOf(stream)));
  }
};

class StftStep : public SignalStep {
 public:
  using SignalStep::SignalStep;
  void enqueue(const StepArgs& args, Stream& stream) const override {
    const TensorView &signal = args.inputs[0], &out = args.outputs[0];
    if (signal.dims.size() != 3 || (signal.dims[2] != 1 && signal.dims[2] != 2))
      fail("the signal must be [batch, length, 1 or 2], got shape " + dimsToString(signal.dims));
    const HostValues values(*this, args);
    const bool hasWindow = layer_.hasInput(2);
    const TensorView* window = hasWindow ? &args.inputs[2] : nullptr;
    if (window && window->dims.size() != 1) fail("window must be 1-D, got shape " + dimsToString(window->dims));
    if (!window && !layer_.hasInput(3)) fail("STFT needs a window or a frame_length");
    k::StftShape shape;
    shape.step = positiveScalar(values, 1, "frame_step");
    shape.frameLength = layer_.hasInput(3) ? positiveScalar(values, 3, "frame_length") : window->dims[0];
    if (window && window->dims[0] != shape.frameLength)
      fail("window has " + std::to_string(window->dims[0]) + " values but frame_length is " +
           std::to_string(shape.frameLength));
    shape.batch = signal.dims[0];
    shape.length = signal.dims[1];
    shape.channels = signal.dims[2];
    if (shape.frameLength > shape.length)
      fail("frame length " + std::to_string(shape.frameLength) + " is longer than the signal (" +
           std::to_string(shape.length) + ")");
    shape.frames = (shape.length - shape.frameLength) / shape.step + 1;
    shape.outputLength = layer_.attrInt("onesided", 1) != 0 ? shape.frameLength / 2 + 1 : shape.frameLength;
    if (window && window->dtype != signal.dtype)
      fail("the window is " + std::string(toString(window->dtype)) + " but the signal is " +
           std::string(toString(signal.dtype)));
    check(k::stft(input(args, 0), window ? input(args, 2) : nullptr, out.data, shape, elementType(signal),
                  streamOf(stream)));
  }
};

class WindowStep : public SignalStep {
 public:
  WindowStep(const Layer& layer, const Tactic& tactic, const LayerSignature& signature, CudaDevice& device)
      : SignalStep(layer, tactic, signature, device),
        kind_(layer.opType == "HannWindow"      ? kernels::WindowKind::kHann
              : layer.opType == "HammingWindow" ? kernels::WindowKind::kHamming
                                                : kernels::WindowKind::kBlackman) {}

  void enqueue(const StepArgs& args, Stream& stream) const override {
    const TensorView& out = args.outputs[0];
    const HostValues values(*this, args);
    const int64_t size = values.at(0).toInt64Vector().at(0);
    if (size < 0) fail("size must not be negative, got " + std::to_string(size));
    check(k::windowFunction(out.data, size, kind_, layer_.attrInt("periodic", 1) != 0, elementType(out),
                            streamOf(stream)));
  }

 private:
  kernels::WindowKind kind_;
};

// The band's edges arrive as device data, a host value or a weight, and reach the kernel as one
// double each in the workspace.
class MelWeightMatrixStep : public SignalStep {
 public:
  using SignalStep::SignalStep;

  uint64_t workspaceBytes(std::span<const TensorView>, std::span<const TensorView>) const override {
    return 4 * kCastScratchBytes;
  }

  void enqueue(const StepArgs& args, Stream& stream) const override {
    const TensorView& out = args.outputs[0];
    const HostValues values(*this, args);
    const int64_t melBins = positiveScalar(values, 0, "num_mel_bins");
    const int64_t dftLength = positiveScalar(values, 1, "dft_length");
    const int64_t sampleRate = positiveScalar(values, 2, "sample_rate");
    const cudaStream_t s = streamOf(stream);
    char* scratch = static_cast<char*>(args.workspace);
    const auto* lower = static_cast<const double*>(smallInput(args, 3, 1, DataType::kFloat64, stream, scratch));
    const auto* upper =
        static_cast<const double*>(smallInput(args, 4, 1, DataType::kFloat64, stream, scratch + 2 * kCastScratchBytes));
    check(k::melWeightMatrix(out.data, melBins, dftLength, sampleRate, lower, upper, elementType(out), s));
  }
};

SupportVerdict signalTensors(const Layer& layer, Precision, const LayerSignature& tensors) {
  return firstRefusal({ranksWithinLimit(tensors), floatData(layer, tensors)});
}

const std::initializer_list<DataType> kGeneratedTypes = {
    DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16, DataType::kFloat64, DataType::kInt8,
    DataType::kInt16,   DataType::kInt32,   DataType::kInt64,    DataType::kUInt8,   DataType::kUInt16,
    DataType::kUInt32,  DataType::kUInt64};

// Numeric outputs of any type; the band's edges (MelWeightMatrix) float.
SupportVerdict generatedTensors(const Layer& layer, Precision, const LayerSignature& tensors) {
  if (auto v = ranksWithinLimit(tensors); !v.supported) return v;
  for (const Tensor* t : tensors.outputs)
    if (t && std::find(kGeneratedTypes.begin(), kGeneratedTypes.end(), t->dtype) == kGeneratedTypes.end())
      return {false, layer.opType + " has no CUDA kernel for " + std::string(toString(t->dtype)) + " output"};
  for (size_t i = 3; i < tensors.inputs.size(); ++i)
    if (const Tensor* t = tensors.inputs[i];
        t && t->dtype != DataType::kFloat32 && t->dtype != DataType::kFloat16 && t->dtype != DataType::kBFloat16 &&
        t->dtype != DataType::kFloat64)
      return {false, layer.opType + "'s band edges must be float, not " + std::string(toString(t->dtype))};
  return {};
}

}  // namespace

void registerSpectralCudaOps(CudaOpRegistry& registry) {
  registry.add("DFT", stepOp<DftStep>(signalTensors));
  registry.add("STFT", stepOp<StftStep>(signalTensors));
  for (const char* name : {"HannWindow", "HammingWindow", "BlackmanWindow"})
    registry.add(name, stepOp<WindowStep>(generatedTensors));
  registry.add("MelWeightMatrix", stepOp<MelWeightMatrixStep>(generatedTensors));
}

}  // namespace kiln::cuda
