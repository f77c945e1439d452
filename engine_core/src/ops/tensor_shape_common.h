#pragma once
// Helpers shared by the tensor_shape schemas (engine_core/src/ops/tensor_shape*.cpp) and their CPU
// kernels: resolving attribute-or-input parameters and the index arithmetic both sides need.
#include "op_schema.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace kiln::tensor_shape {

// The family's schema files (tensor_shape_<part>.cpp).
void registerViewSchemas(OpSchemaRegistry& registry);      // Shape, Reshape, Squeeze, generators, ...
void registerCopySchemas(OpSchemaRegistry& registry);      // Transpose, Concat, Slice, Pad, ...
void registerIndexingSchemas(OpSchemaRegistry& registry);  // Gather*, Scatter*, NonZero, Unique, ...
void registerResizeSchemas(OpSchemaRegistry& registry);    // Resize, Upsample

// Throws kiln::Error(kInvalidModel) naming the layer.
[[noreturn]] void failOn(const Layer& layer, const std::string& why);

// An input's value when known now, else nullptr (schemas: known constants; kernels: every input).
using ValueOf = std::function<const HostTensor*(size_t)>;
ValueOf valuesOf(const InferenceContext& ctx);

// A list of ints that an op took as an attribute before `firstInputOpset` and as input
// `inputIndex` from then on. `given` says whether the model supplies it at all.
struct IntsParam {
  bool given = false;
  std::optional<std::vector<int64_t>> values;  // nullopt while not known
  bool known() const { return !given || values.has_value(); }
};
IntsParam intsParam(const Layer& layer, const char* attr, size_t inputIndex, int64_t firstInputOpset,
                    const ValueOf& valueOf);
// The length of 1-D input i when its shape says so, else nullopt.
std::optional<int64_t> knownLength(const InferenceContext& ctx, size_t i);

// Axes made non-negative against `rank`; fails on out-of-range or repeated axes.
std::vector<int64_t> normalizeAxes(const Layer& layer, std::vector<int64_t> axes, int64_t rank,
                                   const char* what = "axes");

// Product of dims: known when all are known; a single non-1 symbolic dim passes through.
Dim productDim(const std::vector<Dim>& dims, size_t begin, size_t end);

// Reshape's target dims (0 copies the input dim unless allowZero, -1 is inferred).
std::vector<Dim> reshapeDims(const Layer& layer, const Shape& input, const std::vector<int64_t>& target,
                             bool allowZero);

// One axis of a Slice after clamping: `count` elements from `start` in steps of `step`.
struct SliceAxis {
  int64_t start = 0, step = 1, count = 0;
};
// Every axis of `dims` (unsliced axes take everything).
std::vector<SliceAxis> resolveSlice(const Layer& layer, const std::vector<int64_t>& dims,
                                    const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                                    std::vector<int64_t> axes, std::vector<int64_t> steps);

// Split sizes along an axis of length `dim` into `outputs` parts (explicit sizes when given).
std::vector<int64_t> splitSizes(const Layer& layer, int64_t dim, size_t outputs,
                                const std::optional<std::vector<int64_t>>& explicitSizes);

// Pad amounts [begin..., end...] for every axis of a rank-`rank` tensor, from the pads and the
// optional axes they apply to.
std::vector<int64_t> fullPads(const Layer& layer, const std::vector<int64_t>& pads,
                              const std::optional<std::vector<int64_t>>& axes, int64_t rank);

// Transpose's permutation (the 'perm' attribute, reversed axes by default), validated.
std::vector<int64_t> transposePermutation(const Layer& layer, int64_t rank);

// Slice's parameters: attributes before opset 10, inputs 1-4 since.
struct SliceInputs {
  IntsParam starts, ends, axes, steps;
  bool known() const { return starts.known() && ends.known() && axes.known() && steps.known(); }
};
SliceInputs sliceInputs(const Layer& layer, const ValueOf& valueOf);
std::vector<SliceAxis> resolveSlice(const Layer& layer, const std::vector<int64_t>& dims, const SliceInputs& inputs);

// Split sizes along an axis of length `dim`, from the 'split' attribute (before opset 13) or input 1.
// nullopt while the sizes input is not known.
std::optional<std::vector<int64_t>> splitSizesFor(const Layer& layer, int64_t dim, const ValueOf& valueOf);

// Pad amounts [begin..., end...] for every axis (pads from the attribute before opset 11, else
// input 1; axes from input 3 in opset 18); nullopt while not known.
std::optional<std::vector<int64_t>> padAmounts(const Layer& layer, int64_t rank, const ValueOf& valueOf);

// Resize / Upsample: output dims and, per axis, the scale and the tf_crop_and_resize region.
// inDims may hold -1 for unknown dims; outDims then holds -1 where it cannot be known.
struct ResizeGeometry {
  std::vector<int64_t> outDims;
  std::vector<double> scales, roiStart, roiEnd;
};
// nullopt while the scales / sizes are not known.
std::optional<ResizeGeometry> resizeGeometry(const Layer& layer, const std::vector<int64_t>& inDims,
                                             const ValueOf& valueOf);

// Shape's [start, end) window over a rank-`rank` shape (opset 15 start/end attributes), clamped.
std::pair<int64_t, int64_t> shapeWindow(const Layer& layer, int64_t rank);

// Element count of Range(start, limit, delta); fails on a zero delta.
int64_t rangeLength(const Layer& layer, const HostTensor& start, const HostTensor& limit, const HostTensor& delta);

}  // namespace kiln::tensor_shape
