#include "conv_pool_window.h"

#include <kiln/error.h>

namespace kiln {
namespace {

[[noreturn]] void failWindow(const Layer& layer, const std::string& why) {
  throw Error(ErrorCode::kInvalidModel, layer.describe() + ": " + why);
}

std::vector<int64_t> readPerAxis(const Layer& layer, const char* name, size_t count, int64_t fallback,
                                 int64_t minimum) {
  std::vector<int64_t> values = layer.attrInts(name, std::vector<int64_t>(count, fallback));
  if (values.size() != count)
    failWindow(layer, std::string("attribute '") + name + "' has " + std::to_string(values.size()) +
                          " values; it needs " + std::to_string(count) +
                          (std::string(name) == "pads" ? " (begins, then ends of the spatial axes)" : " (one per spatial axis)"));
  for (int64_t v : values)
    if (v < minimum)
      failWindow(layer, std::string("attribute '") + name + "' has value " + std::to_string(v) + "; values must be >= " +
                            std::to_string(minimum));
  return values;
}

int64_t effectiveKernel(const WindowAttributes& a, size_t axis) { return (a.kernel[axis] - 1) * a.dilations[axis] + 1; }

int64_t ceilDiv(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

}  // namespace

WindowAttributes readWindowAttributes(const Layer& layer, size_t spatialRank,
                                      const std::vector<int64_t>& kernelFromWeights) {
  WindowAttributes a;
  if (layer.hasAttr("kernel_shape")) {
    a.kernel = readPerAxis(layer, "kernel_shape", spatialRank, 1, 1);
    for (size_t i = 0; i < kernelFromWeights.size() && i < spatialRank; ++i)
      if (kernelFromWeights[i] >= 0 && kernelFromWeights[i] != a.kernel[i])
        failWindow(layer, "attribute 'kernel_shape' says " + std::to_string(a.kernel[i]) + " on spatial axis " +
                              std::to_string(i) + " but the weights have " + std::to_string(kernelFromWeights[i]) +
                              "; make them agree or drop kernel_shape");
  } else if (kernelFromWeights.size() == spatialRank) {
    a.kernel = kernelFromWeights;
  } else {
    failWindow(layer, "attribute 'kernel_shape' is required");
  }
  a.strides = readPerAxis(layer, "strides", spatialRank, 1, 1);
  a.dilations = readPerAxis(layer, "dilations", spatialRank, 1, 1);
  a.autoPad = layer.attrString("auto_pad", "NOTSET");
  if (a.autoPad != "NOTSET" && a.autoPad != "SAME_UPPER" && a.autoPad != "SAME_LOWER" && a.autoPad != "VALID")
    failWindow(layer, "attribute 'auto_pad' is '" + a.autoPad + "'; use NOTSET, SAME_UPPER, SAME_LOWER or VALID");
  a.pads = readPerAxis(layer, "pads", 2 * spatialRank, 0, 0);
  a.ceilMode = layer.attrInt("ceil_mode", 0) != 0;
  return a;
}

Dim windowOutputDim(const Layer& layer, const WindowAttributes& a, size_t axis, const Dim& input, int64_t* padBegin,
                    int64_t* padEnd) {
  if (!input.isKnown() || a.kernel[axis] < 0) return Dim::unknown();
  const int64_t in = input.value(), stride = a.strides[axis], k = effectiveKernel(a, axis);
  int64_t begin = a.pads[axis], end = a.pads[axis + a.rank()], out;
  if (a.autoPad == "SAME_UPPER" || a.autoPad == "SAME_LOWER") {
    out = ceilDiv(in, stride);
    int64_t total = std::max<int64_t>(0, (out - 1) * stride + k - in);
    begin = a.autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
    end = total - begin;
  } else {
    if (a.autoPad == "VALID") begin = end = 0;
    int64_t span = in + begin + end - k;
    if (span < 0)
      failWindow(layer, "the window (" + std::to_string(k) + " with dilation) is larger than spatial axis " +
                            std::to_string(axis) + " of the padded input (" + std::to_string(in + begin + end) +
                            "); use a smaller kernel or more padding");
    out = (a.ceilMode ? ceilDiv(span, stride) : span / stride) + 1;
    if (a.ceilMode && (out - 1) * stride >= in + begin) --out;  // the last window must start inside the input
  }
  if (padBegin) *padBegin = begin;
  if (padEnd) *padEnd = end;
  return Dim(out);
}

Dim convTransposeOutputDim(const Layer& layer, const WindowAttributes& a, size_t axis, const Dim& input,
                           int64_t* padBegin) {
  const std::vector<int64_t> outputShape = layer.attrInts("output_shape");
  const std::vector<int64_t> outputPadding = layer.attrInts("output_padding", std::vector<int64_t>(a.rank(), 0));
  if (outputPadding.size() != a.rank())
    failWindow(layer, "attribute 'output_padding' needs one value per spatial axis (" + std::to_string(a.rank()) + ")");
  if (!outputShape.empty() && outputShape.size() != a.rank() && outputShape.size() != a.rank() + 2)
    failWindow(layer, "attribute 'output_shape' needs one value per spatial axis (" + std::to_string(a.rank()) + ")");
  if (!input.isKnown() || a.kernel[axis] < 0) {
    if (!outputShape.empty()) return Dim(outputShape[outputShape.size() - a.rank() + axis]);
    return Dim::unknown();
  }
  const int64_t in = input.value(), stride = a.strides[axis];
  // The size the transposed convolution covers without any padding removed.
  const int64_t full = stride * (in - 1) + outputPadding[axis] + effectiveKernel(a, axis);
  int64_t out, begin;
  const bool same = a.autoPad == "SAME_UPPER" || a.autoPad == "SAME_LOWER";
  if (!outputShape.empty() || same) {
    out = !outputShape.empty() ? outputShape[outputShape.size() - a.rank() + axis] : in * stride;
    const int64_t total = full - out;  // negative: extra rows at the end, like output_padding
    begin = a.autoPad == "SAME_LOWER" ? total - total / 2 : total / 2;  // the odd pixel goes to the end
  } else {
    begin = a.autoPad == "VALID" ? 0 : a.pads[axis];
    const int64_t end = a.autoPad == "VALID" ? 0 : a.pads[axis + a.rank()];
    out = full - begin - end;
  }
  if (out <= 0)
    failWindow(layer, "the output of spatial axis " + std::to_string(axis) + " would have size " + std::to_string(out) +
                          "; check pads, strides and output_shape");
  if (padBegin) *padBegin = begin;
  return Dim(out);
}

int64_t maxUnpoolOutputSize(const WindowAttributes& a, size_t axis, int64_t input) {
  return (input - 1) * a.strides[axis] + a.kernel[axis] - a.pads[axis] - a.pads[axis + a.rank()];
}

kernels::SpatialWindow makeSpatialWindow(const Layer& layer, const WindowAttributes& a,
                                         const std::vector<int64_t>& inputSpatial) {
  kernels::SpatialWindow w;
  const size_t rank = a.rank();
  if (rank > size_t(kernels::kMaxSpatialRank) || inputSpatial.size() != rank)
    failWindow(layer, "supports 1 to 3 spatial axes, got " + std::to_string(inputSpatial.size()));
  const size_t first = size_t(kernels::kMaxSpatialRank) - rank;  // 1-D / 2-D fill the trailing axes
  for (size_t i = 0; i < rank; ++i) {
    int64_t begin = 0, end = 0;
    w.out[first + i] = windowOutputDim(layer, a, i, Dim(inputSpatial[i]), &begin, &end).value();
    w.in[first + i] = inputSpatial[i];
    w.kernel[first + i] = a.kernel[i];
    w.stride[first + i] = a.strides[i];
    w.dilation[first + i] = a.dilations[i];
    w.padBegin[first + i] = begin;
    w.padEnd[first + i] = end;
  }
  return w;
}

}  // namespace kiln
