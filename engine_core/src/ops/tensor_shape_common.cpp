#include "tensor_shape_common.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kiln::tensor_shape {

void failOn(const Layer& layer, const std::string& why) {
  throw Error(ErrorCode::kInvalidModel, layer.describe() + ": " + why);
}

ValueOf valuesOf(const InferenceContext& ctx) {
  return [&ctx](size_t i) { return ctx.inputValue(i); };
}

IntsParam intsParam(const Layer& layer, const char* attr, size_t inputIndex, int64_t firstInputOpset,
                    const ValueOf& valueOf) {
  IntsParam param;
  if (layer.opsetVersion < firstInputOpset) {
    param.given = layer.hasAttr(attr);
    if (param.given) param.values = layer.attrInts(attr);
    return param;
  }
  param.given = layer.hasInput(inputIndex);
  if (const HostTensor* value = param.given ? valueOf(inputIndex) : nullptr) param.values = value->toInt64Vector();
  return param;
}

std::optional<int64_t> knownLength(const InferenceContext& ctx, size_t i) {
  if (!ctx.hasInput(i)) return std::nullopt;
  const Shape& shape = ctx.inputShape(i);
  if (shape.hasRank() && shape.rank() == 1 && shape[0].isKnown()) return shape[0].value();
  return std::nullopt;
}

std::vector<int64_t> normalizeAxes(const Layer& layer, std::vector<int64_t> axes, int64_t rank, const char* what) {
  std::vector<bool> seen(size_t(std::max<int64_t>(rank, 0)), false);
  for (int64_t& axis : axes) {
    if (axis < -rank || axis >= rank)
      failOn(layer, std::string(what) + " value " + std::to_string(axis) + " is out of range for rank " +
                        std::to_string(rank) + "; use an axis in [" + std::to_string(-rank) + ", " +
                        std::to_string(rank - 1) + "]");
    if (axis < 0) axis += rank;
    if (seen[size_t(axis)]) failOn(layer, std::string(what) + " lists axis " + std::to_string(axis) + " twice");
    seen[size_t(axis)] = true;
  }
  return axes;
}

Dim productDim(const std::vector<Dim>& dims, size_t begin, size_t end) {
  int64_t product = 1;
  const Dim* symbolic = nullptr;
  size_t unknownCount = 0;
  for (size_t d = begin; d < end; ++d) {
    if (dims[d].isKnown()) {
      product *= dims[d].value();
    } else {
      symbolic = &dims[d];
      ++unknownCount;
    }
  }
  if (unknownCount == 0) return product;
  if (product == 0) return 0;
  if (unknownCount == 1 && product == 1) return *symbolic;
  return Dim::unknown();
}

std::vector<Dim> reshapeDims(const Layer& layer, const Shape& input, const std::vector<int64_t>& target,
                             bool allowZero) {
  std::vector<Dim> out(target.size());
  int64_t inferred = -1;
  // Input dims copied by a 0 cancel out of the element-count balance, so -1 can be inferred even
  // when they are symbolic (e.g. [batch, seq, 768] -> [0, 0, 12, -1]).
  std::vector<bool> copied(input.hasRank() ? input.rank() : 0, false);
  for (size_t i = 0; i < target.size(); ++i) {
    int64_t t = target[i];
    if (t == -1) {
      if (inferred >= 0) failOn(layer, "the shape " + dimsToString(target) + " has more than one -1; at most one dim can be inferred");
      inferred = int64_t(i);
    } else if (t == 0 && !allowZero) {
      if (input.hasRank() && i >= input.rank())
        failOn(layer, "the shape " + dimsToString(target) + " copies dim " + std::to_string(i) +
                          " (a 0) but the input " + input.toString() + " has only " + std::to_string(input.rank()) +
                          " dims");
      if (!input.hasRank()) continue;  // unknown dim
      out[i] = input[i];
      copied[i] = true;
    } else if (t < 0) {
      failOn(layer, "the shape " + dimsToString(target) + " has the invalid dim " + std::to_string(t) +
                        "; dims must be >= 0, or -1 to infer one");
    } else {
      out[i] = t;
    }
  }
  if (allowZero && inferred >= 0 && std::count(target.begin(), target.end(), 0) > 0)
    failOn(layer, "the shape " + dimsToString(target) + " has both 0 and -1, which allowzero=1 forbids");
  if (!input.hasRank()) {
    if (inferred >= 0) out[size_t(inferred)] = Dim::unknown();
    return out;
  }
  // Elements of the input not accounted for by copied dims.
  std::vector<Dim> rest;
  for (size_t d = 0; d < input.rank(); ++d)
    if (!copied[d]) rest.push_back(input[d]);
  Dim remaining = productDim(rest, 0, rest.size());
  int64_t knownNonCopied = 1;
  for (size_t i = 0; i < target.size(); ++i)
    if (int64_t(i) != inferred && !(target[i] == 0 && !allowZero)) knownNonCopied *= target[i];
  auto sizeMismatch = [&](const std::string& detail) {
    failOn(layer, "cannot reshape the input of shape " + input.toString() + " to " + dimsToString(target) + ": " +
                      detail + "; the shape must keep the element count");
  };
  if (inferred >= 0) {
    if (remaining.isKnown()) {
      if (knownNonCopied == 0 || remaining.value() % knownNonCopied != 0)
        sizeMismatch(std::to_string(remaining.value()) + " elements cannot be split into dims of product " +
                     std::to_string(knownNonCopied));
      out[size_t(inferred)] = remaining.value() / knownNonCopied;
    } else if (knownNonCopied == 1) {
      out[size_t(inferred)] = remaining;  // a single symbolic dim moves to the -1 position
    } else {
      out[size_t(inferred)] = Dim::unknown();
    }
  } else if (remaining.isKnown() && remaining.value() != knownNonCopied) {
    sizeMismatch("the input has " + std::to_string(remaining.value()) + " elements, the shape " +
                 std::to_string(knownNonCopied));
  }
  return out;
}

std::vector<SliceAxis> resolveSlice(const Layer& layer, const std::vector<int64_t>& dims,
                                    const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                                    std::vector<int64_t> axes, std::vector<int64_t> steps) {
  int64_t rank = int64_t(dims.size());
  if (starts.size() != ends.size())
    failOn(layer, "starts has " + std::to_string(starts.size()) + " values but ends has " + std::to_string(ends.size()));
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(int64_t(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size())
    failOn(layer, "starts, ends, axes and steps must have the same length (" + std::to_string(starts.size()) + ", " +
                      std::to_string(ends.size()) + ", " + std::to_string(axes.size()) + ", " +
                      std::to_string(steps.size()) + ")");
  axes = normalizeAxes(layer, axes, rank);
  std::vector<SliceAxis> out(dims.size());
  for (size_t d = 0; d < dims.size(); ++d) out[d] = {0, 1, dims[d]};
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t dim = dims[size_t(axes[i])], step = steps[i];
    if (step == 0) failOn(layer, "steps must not be 0 (axis " + std::to_string(axes[i]) + ")");
    int64_t start = starts[i], end = ends[i];
    if (start < 0) start += dim;
    if (end < 0) end += dim;
    int64_t count;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      count = end > start ? (end - start + step - 1) / step : 0;
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      count = start > end ? (start - end - step - 1) / -step : 0;
    }
    out[size_t(axes[i])] = {count > 0 ? start : 0, step, count};
  }
  return out;
}

std::vector<int64_t> splitSizes(const Layer& layer, int64_t dim, size_t outputs,
                                const std::optional<std::vector<int64_t>>& explicitSizes) {
  if (explicitSizes) {
    int64_t sum = 0;
    for (int64_t s : *explicitSizes) {
      if (s < 0) failOn(layer, "split sizes must be >= 0, got " + dimsToString(*explicitSizes));
      sum += s;
    }
    if (explicitSizes->size() != outputs || sum != dim)
      failOn(layer, "split sizes " + dimsToString(*explicitSizes) + " must have one entry per output (" +
                        std::to_string(outputs) + ") and sum to the axis length " + std::to_string(dim));
    return *explicitSizes;
  }
  // Equal parts; since opset 18 the last part may be smaller.
  int64_t parts = int64_t(outputs);
  int64_t chunk = (dim + parts - 1) / parts;
  std::vector<int64_t> sizes(outputs, chunk);
  sizes.back() = dim - chunk * (parts - 1);
  if (sizes.back() < 0)
    failOn(layer, "an axis of length " + std::to_string(dim) + " cannot be split into " + std::to_string(parts) +
                      " parts; give explicit split sizes");
  return sizes;
}

std::vector<int64_t> fullPads(const Layer& layer, const std::vector<int64_t>& pads,
                              const std::optional<std::vector<int64_t>>& axes, int64_t rank) {
  std::vector<int64_t> axisList;
  if (axes) {
    axisList = normalizeAxes(layer, *axes, rank);
  } else {
    for (int64_t d = 0; d < rank; ++d) axisList.push_back(d);
  }
  size_t n = axisList.size();
  if (pads.size() != 2 * n)
    failOn(layer, "pads has " + std::to_string(pads.size()) + " values; it needs 2 per padded axis (" +
                      std::to_string(2 * n) + ")");
  std::vector<int64_t> full(size_t(2 * rank), 0);
  for (size_t i = 0; i < n; ++i) {
    full[size_t(axisList[i])] = pads[i];
    full[size_t(axisList[i] + rank)] = pads[i + n];
  }
  return full;
}

std::vector<int64_t> transposePermutation(const Layer& layer, int64_t rank) {
  std::vector<int64_t> perm = layer.attrInts("perm");
  if (perm.empty() && rank > 0)
    for (int64_t d = rank - 1; d >= 0; --d) perm.push_back(d);
  if (int64_t(perm.size()) != rank)
    failOn(layer, "perm " + dimsToString(perm) + " must list each of the input's " + std::to_string(rank) +
                      " axes once");
  return normalizeAxes(layer, perm, rank, "perm");
}

SliceInputs sliceInputs(const Layer& layer, const ValueOf& valueOf) {
  SliceInputs in;
  in.starts = intsParam(layer, "starts", 1, 10, valueOf);
  in.ends = intsParam(layer, "ends", 2, 10, valueOf);
  in.axes = intsParam(layer, "axes", 3, 10, valueOf);
  in.steps = intsParam(layer, "steps", 4, 10, valueOf);
  if (!in.starts.given || !in.ends.given) failOn(layer, "starts and ends are required");
  return in;
}

std::vector<SliceAxis> resolveSlice(const Layer& layer, const std::vector<int64_t>& dims, const SliceInputs& inputs) {
  return resolveSlice(layer, dims, *inputs.starts.values, *inputs.ends.values, inputs.axes.values.value_or(std::vector<int64_t>{}),
                      inputs.steps.values.value_or(std::vector<int64_t>{}));
}

std::optional<std::vector<int64_t>> splitSizesFor(const Layer& layer, int64_t dim, const ValueOf& valueOf) {
  size_t outputs = layer.outputs.size();
  if (layer.hasAttr("num_outputs") && layer.attrInt("num_outputs") != int64_t(outputs))
    failOn(layer, "num_outputs is " + std::to_string(layer.attrInt("num_outputs")) + " but the node has " +
                      std::to_string(outputs) + " outputs");
  IntsParam split = intsParam(layer, "split", 1, 13, valueOf);
  if (!split.known()) return std::nullopt;
  return splitSizes(layer, dim, outputs, split.values);
}

std::optional<std::vector<int64_t>> padAmounts(const Layer& layer, int64_t rank, const ValueOf& valueOf) {
  IntsParam pads = intsParam(layer, "pads", 1, 11, valueOf);
  if (!pads.given) failOn(layer, "pads are required (the 'pads' attribute before opset 11, input 1 since)");
  std::optional<std::vector<int64_t>> axes;
  if (layer.opsetVersion >= 18 && layer.hasInput(3)) {
    const HostTensor* value = valueOf(3);
    if (!value) return std::nullopt;
    axes = value->toInt64Vector();
  }
  if (!pads.values) return std::nullopt;
  return fullPads(layer, *pads.values, axes, rank);
}

namespace {

// A float-list parameter of Resize/Upsample: nullopt when not given (empty counts as not given),
// `unknown` set when given but not known yet.
std::optional<std::vector<double>> floatsInput(const Layer& layer, size_t i, const ValueOf& valueOf, bool& unknown) {
  if (!layer.hasInput(i)) return std::nullopt;
  const HostTensor* value = valueOf(i);
  if (!value) {
    unknown = true;
    return std::nullopt;
  }
  if (value->elementCount() == 0) return std::nullopt;
  return value->toDoubleVector();
}

}  // namespace

std::optional<ResizeGeometry> resizeGeometry(const Layer& layer, const std::vector<int64_t>& inDims,
                                             const ValueOf& valueOf) {
  int64_t rank = int64_t(inDims.size());
  bool isUpsample = layer.opType == "Upsample";
  bool unknown = false;
  std::optional<std::vector<double>> scales, sizes, roi;
  if (isUpsample && layer.opsetVersion < 9) {
    auto attr = layer.attrFloats("scales");
    scales = std::vector<double>(attr.begin(), attr.end());
  } else if (isUpsample || layer.opsetVersion < 11) {
    scales = floatsInput(layer, 1, valueOf, unknown);
  } else {
    roi = floatsInput(layer, 1, valueOf, unknown);
    scales = floatsInput(layer, 2, valueOf, unknown);
    sizes = floatsInput(layer, 3, valueOf, unknown);
  }
  if (unknown) return std::nullopt;
  if (scales.has_value() == sizes.has_value())
    failOn(layer, "give exactly one of scales and sizes (the other empty or omitted)");
  std::vector<int64_t> axes = layer.attrInts("axes");
  if (axes.empty())
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  axes = normalizeAxes(layer, axes, rank);
  const std::vector<double>& given = scales ? *scales : *sizes;
  if (given.size() != axes.size())
    failOn(layer, std::string(scales ? "scales" : "sizes") + " has " + std::to_string(given.size()) +
                      " values; it needs one per resized axis (" + std::to_string(axes.size()) + ")");
  if (roi && roi->size() != 2 * axes.size())
    failOn(layer, "roi has " + std::to_string(roi->size()) + " values; it needs " + std::to_string(2 * axes.size()));

  ResizeGeometry g;
  g.outDims = inDims;
  g.scales.assign(size_t(rank), 1.0);
  g.roiStart.assign(size_t(rank), 0.0);
  g.roiEnd.assign(size_t(rank), 1.0);
  std::string policy = layer.attrString("keep_aspect_ratio_policy", "stretch");
  if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller")
    failOn(layer, "keep_aspect_ratio_policy '" + policy + "' is not one of stretch, not_larger, not_smaller");
  // not_larger / not_smaller resize every axis by one scale chosen from the sizes.
  std::optional<double> commonScale;
  if (sizes && policy != "stretch") {
    for (size_t i = 0; i < axes.size(); ++i) {
      int64_t in = inDims[size_t(axes[i])];
      if (in <= 0) {  // the common scale is not known
        for (int64_t axis : axes) g.outDims[size_t(axis)] = -1;
        return g;
      }
      double s = given[i] / double(in);
      commonScale = !commonScale ? s : policy == "not_larger" ? std::min(*commonScale, s) : std::max(*commonScale, s);
    }
  }
  for (size_t i = 0; i < axes.size(); ++i) {
    size_t axis = size_t(axes[i]);
    int64_t in = inDims[axis];
    if (roi) {
      g.roiStart[axis] = (*roi)[i];
      g.roiEnd[axis] = (*roi)[i + axes.size()];
    }
    if (scales) {
      if (given[i] <= 0) failOn(layer, "scales must be positive, got " + std::to_string(given[i]));
      g.scales[axis] = given[i];
      g.outDims[axis] = in < 0 ? -1 : int64_t(std::floor(double(in) * given[i]));
    } else if (commonScale) {
      g.scales[axis] = *commonScale;
      g.outDims[axis] = int64_t(std::round(*commonScale * double(in)));
    } else {
      if (given[i] < 0) failOn(layer, "sizes must not be negative, got " + std::to_string(int64_t(given[i])));
      g.outDims[axis] = int64_t(given[i]);
      g.scales[axis] = in > 0 ? given[i] / double(in) : 1.0;
    }
  }
  return g;
}

std::pair<int64_t, int64_t> shapeWindow(const Layer& layer, int64_t rank) {
  auto clampToRank = [rank](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
  int64_t start = clampToRank(layer.attrInt("start", 0));
  int64_t end = layer.hasAttr("end") ? clampToRank(layer.attrInt("end")) : rank;
  return {start, std::max(start, end)};
}

int64_t rangeLength(const Layer& layer, const HostTensor& start, const HostTensor& limit, const HostTensor& delta) {
  for (const HostTensor* t : {&start, &limit, &delta})
    if (t->elementCount() != 1)
      failOn(layer, "start, limit and delta must be scalars; got a tensor of shape " + dimsToString(t->dims()));
  if (isFloatingPoint(start.dtype())) {
    double s = start.toDoubleVector()[0], l = limit.toDoubleVector()[0], d = delta.toDoubleVector()[0];
    if (d == 0) failOn(layer, "delta must not be 0");
    return std::max<int64_t>(0, int64_t(std::ceil((l - s) / d)));
  }
  int64_t s = start.toInt64Vector()[0], l = limit.toInt64Vector()[0], d = delta.toInt64Vector()[0];
  if (d == 0) failOn(layer, "delta must not be 0");
  int64_t span = l - s;
  int64_t count = span / d + ((span % d != 0 && (span > 0) == (d > 0)) ? 1 : 0);
  return std::max<int64_t>(0, count);
}

}  // namespace kiln::tensor_shape
