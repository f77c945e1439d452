// Type and shape inference for the signal_misc op family: DFT, STFT, window functions and
// MelWeightMatrix here; the rest in signal_misc_*.cpp.
#include "signal_misc.h"

#include "data_type_attr.h"
#include "op_families.h"

namespace kiln {

std::optional<int64_t> knownScalarInput(const InferenceContext& ctx, size_t i, const char* what) {
  if (!ctx.hasInput(i)) return std::nullopt;
  const Tensor& t = ctx.input(i);
  if (t.dtype != DataType::kUndefined && !isInteger(t.dtype))
    ctx.fail(std::string(what) + " (input " + std::to_string(i) + ") must be an integer, got " +
             std::string(toString(t.dtype)));
  if (t.shape.isFullyKnown() && t.shape.elementCount() != 1)
    ctx.fail(std::string(what) + " (input " + std::to_string(i) + ") must hold one value, got shape " +
             t.shape.toString());
  const HostTensor* value = ctx.inputValue(i);
  if (!value) return std::nullopt;
  return value->toInt64Vector().at(0);
}

namespace {

Dim positiveDim(const InferenceContext& ctx, std::optional<int64_t> value, const char* what) {
  if (!value) return Dim::unknown();
  if (*value <= 0) ctx.fail(std::string(what) + " must be positive, got " + std::to_string(*value));
  return Dim(*value);
}

void requireFloatInput(const InferenceContext& ctx, size_t i, const char* what) {
  DataType t = ctx.inputType(i);
  if (t != DataType::kUndefined && (!isFloatingPoint(t) || t == DataType::kFloat8E4M3 || t == DataType::kFloat8E5M2))
    ctx.fail(std::string(what) + " must be float32, float64, float16 or bfloat16, got " + std::string(toString(t)));
}

// The last axis holds 1 (real) or 2 (complex) values.
void requireSignalChannels(const InferenceContext& ctx, const Shape& s, size_t minRank) {
  if (!s.hasRank()) return;
  if (s.rank() < minRank) ctx.fail("the signal needs rank " + std::to_string(minRank) + " or more, got shape " + s.toString());
  const Dim& last = s[s.rank() - 1];
  if (last.isKnown() && last.value() != 1 && last.value() != 2)
    ctx.fail("the signal's last dimension must be 1 (real) or 2 (complex), got " + s.toString());
}

void inferDft(InferenceContext& ctx) {
  requireFloatInput(ctx, 0, "the input");
  const Shape& in = ctx.inputShape(0);
  requireSignalChannels(ctx, in, 2);
  std::optional<int64_t> length = knownScalarInput(ctx, 1, "dft_length");
  if (length && *length <= 0) ctx.fail("dft_length must be positive, got " + std::to_string(*length));
  bool onesided = ctx.layer().attrInt("onesided", 0) != 0;
  if (!in.hasRank()) {
    ctx.setOutput(0, ctx.inputType(0), Shape::unknownRank());
    return;
  }
  int64_t rank = int64_t(in.rank());
  int64_t axis = ctx.normalizeAxis(ctx.layer().attrInt("axis", 1), rank);
  if (axis == rank - 1) ctx.fail("axis must not be the last axis, which holds the real and imaginary parts");
  std::vector<Dim> dims = in.dims();
  Dim n = ctx.hasInput(1) ? (length ? Dim(*length) : Dim::unknown()) : dims[size_t(axis)];
  dims[size_t(axis)] = onesided ? (n.isKnown() ? Dim(n.value() / 2 + 1) : Dim::unknown()) : n;
  dims.back() = 2;
  ctx.setOutput(0, ctx.inputType(0), Shape(std::move(dims)));
}

void inferStft(InferenceContext& ctx) {
  requireFloatInput(ctx, 0, "the signal");
  const Shape& in = ctx.inputShape(0);
  requireSignalChannels(ctx, in, 3);
  if (in.hasRank() && in.rank() != 3) ctx.fail("the signal must be [batch, length, 1 or 2], got " + in.toString());
  Dim step = positiveDim(ctx, knownScalarInput(ctx, 1, "frame_step"), "frame_step");
  Dim frameLength = positiveDim(ctx, knownScalarInput(ctx, 3, "frame_length"), "frame_length");
  if (ctx.hasInput(2)) {
    const Shape& window = ctx.inputShape(2);
    if (window.hasRank() && window.rank() != 1) ctx.fail("window must be 1-D, got shape " + window.toString());
    if (window.hasRank() && window[0].isKnown()) {
      if (frameLength.isKnown() && frameLength.value() != window[0].value())
        ctx.fail("window has " + window[0].toString() + " values but frame_length is " + frameLength.toString());
      frameLength = window[0];
    }
  } else if (!ctx.hasInput(3)) {
    ctx.fail("STFT needs a window or a frame_length");
  }
  Dim batch = in.hasRank() ? in[0] : Dim::unknown();
  Dim signalLength = in.hasRank() ? in[1] : Dim::unknown();
  Dim frames = Dim::unknown();
  if (signalLength.isKnown() && frameLength.isKnown() && step.isKnown()) {
    if (frameLength.value() > signalLength.value())
      ctx.fail("frame length " + frameLength.toString() + " is longer than the signal (" + signalLength.toString() + ")");
    frames = (signalLength.value() - frameLength.value()) / step.value() + 1;
  }
  bool onesided = ctx.layer().attrInt("onesided", 1) != 0;
  Dim bins = frameLength.isKnown() ? Dim(onesided ? frameLength.value() / 2 + 1 : frameLength.value()) : Dim::unknown();
  ctx.setOutput(0, ctx.inputType(0), Shape{batch, frames, bins, 2});
}

void inferWindow(InferenceContext& ctx) {
  Dim size = Dim::unknown();
  if (auto value = knownScalarInput(ctx, 0, "size")) {
    if (*value < 0) ctx.fail("size must not be negative, got " + std::to_string(*value));
    size = *value;
  }
  ctx.setOutput(0, onnxDataTypeAttr(ctx, "output_datatype", DataType::kFloat32), Shape{size});
}

void inferMelWeightMatrix(InferenceContext& ctx) {
  Dim melBins = positiveDim(ctx, knownScalarInput(ctx, 0, "num_mel_bins"), "num_mel_bins");
  Dim dftLength = positiveDim(ctx, knownScalarInput(ctx, 1, "dft_length"), "dft_length");
  positiveDim(ctx, knownScalarInput(ctx, 2, "sample_rate"), "sample_rate");
  requireFloatInput(ctx, 3, "lower_edge_hertz");
  requireFloatInput(ctx, 4, "upper_edge_hertz");
  Dim bins = dftLength.isKnown() ? Dim(dftLength.value() / 2 + 1) : Dim::unknown();
  ctx.setOutput(0, onnxDataTypeAttr(ctx, "output_datatype", DataType::kFloat32), Shape{bins, melBins});
}

}  // namespace

void registerSignalMiscSchemas(OpSchemaRegistry& registry) {
  registry.add({"", "DFT", inferDft, 1, 2});
  registry.add({"", "STFT", inferStft, 2, 4});
  for (const char* window : {"HannWindow", "HammingWindow", "BlackmanWindow"}) registry.add({"", window, inferWindow, 1, 1});
  registry.add({"", "MelWeightMatrix", inferMelWeightMatrix, 5, 5});
  registerDetectionSchemas(registry);
  registerTextSchemas(registry);
  registerRandomSchemas(registry);
}

}  // namespace kiln
