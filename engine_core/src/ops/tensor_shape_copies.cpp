// Schemas of the ops that rearrange data into a new dense tensor: Transpose, Concat, Split, Slice,
// Expand, Tile, Pad, CenterCropPad, DepthToSpace, SpaceToDepth, Trilu, ReverseSequence.
#include "tensor_shape_common.h"

#include <limits>

namespace kiln::tensor_shape {
namespace {

// Rank of input 0, failing when it is known and below `minRank`; -1 when unknown.
int64_t rankOf(const InferenceContext& ctx, size_t minRank = 0) {
  const Shape& in = ctx.inputShape(0);
  if (!in.hasRank()) return -1;
  if (in.rank() < minRank)
    ctx.fail("the input must have rank >= " + std::to_string(minRank) + ", got shape " + in.toString());
  return int64_t(in.rank());
}

void inferTranspose(InferenceContext& ctx) {
  const Shape& in = ctx.inputShape(0);
  if (!in.hasRank()) {
    ctx.setOutput(0, ctx.inputType(0), Shape::unknownRank());
    return;
  }
  std::vector<Dim> out;
  for (int64_t axis : transposePermutation(ctx.layer(), int64_t(in.rank()))) out.push_back(in[size_t(axis)]);
  ctx.setOutput(0, ctx.inputType(0), Shape(std::move(out)));
}

void inferConcat(InferenceContext& ctx) {
  DataType type = ctx.inputType(0);
  if (!ctx.layer().hasAttr("axis")) ctx.fail("the 'axis' attribute is required");
  int64_t rank = -1;
  for (size_t i = 0; i < ctx.inputCount(); ++i) {
    if (ctx.inputType(i) != type)
      ctx.fail("all inputs must have the same type; input " + std::to_string(i) + " is " +
               std::string(toString(ctx.inputType(i))) + ", input 0 is " + std::string(toString(type)));
    const Shape& s = ctx.inputShape(i);
    if (!s.hasRank()) continue;
    if (rank >= 0 && int64_t(s.rank()) != rank)
      ctx.fail("all inputs must have the same rank; input " + std::to_string(i) + " has shape " + s.toString() +
               ", an earlier one has rank " + std::to_string(rank));
    rank = int64_t(s.rank());
  }
  if (rank < 0) {
    ctx.setOutput(0, type, Shape::unknownRank());
    return;
  }
  int64_t axis = ctx.normalizeAxis(ctx.layer().attrInt("axis"), rank);
  std::vector<Dim> out(static_cast<size_t>(rank));
  int64_t axisTotal = 0;
  bool axisKnown = true;
  for (size_t i = 0; i < ctx.inputCount(); ++i) {
    const Shape& s = ctx.inputShape(i);
    if (!s.hasRank()) {
      axisKnown = false;
      continue;
    }
    for (size_t d = 0; d < s.rank(); ++d) {
      if (int64_t(d) == axis) {
        if (s[d].isKnown()) axisTotal += s[d].value();
        else axisKnown = false;
      } else if (s[d].isKnown()) {
        if (out[d].isKnown() && out[d].value() != s[d].value())
          ctx.fail("input " + std::to_string(i) + " has shape " + s.toString() + ", which differs from the others in dim " +
                   std::to_string(d) + " (" + std::to_string(out[d].value()) + "); only the concat axis " +
                   std::to_string(axis) + " may differ");
        out[d] = s[d];
      } else if (!out[d].isKnown() && !out[d].isSymbol()) {
        out[d] = s[d];
      }
    }
  }
  out[size_t(axis)] = axisKnown ? Dim(axisTotal) : Dim::unknown();
  ctx.setOutput(0, type, Shape(std::move(out)));
}

void inferSplit(InferenceContext& ctx) {
  const Shape& in = ctx.inputShape(0);
  DataType type = ctx.inputType(0);
  int64_t rank = rankOf(ctx, 1);
  if (rank < 0) {
    for (size_t i = 0; i < ctx.outputCount(); ++i) ctx.setOutput(i, type, Shape::unknownRank());
    return;
  }
  int64_t axis = ctx.normalizeAxis(ctx.layer().attrInt("axis", 0), rank);
  std::optional<std::vector<int64_t>> sizes;
  if (in[size_t(axis)].isKnown()) sizes = splitSizesFor(ctx.layer(), in[size_t(axis)].value(), valuesOf(ctx));
  for (size_t i = 0; i < ctx.outputCount(); ++i) {
    Shape out = in;
    out[size_t(axis)] = sizes ? Dim((*sizes)[i]) : Dim::unknown();
    ctx.setOutput(i, type, std::move(out));
  }
}

void inferSlice(InferenceContext& ctx) {
  const Shape& in = ctx.inputShape(0);
  DataType type = ctx.inputType(0);
  SliceInputs inputs = sliceInputs(ctx.layer(), valuesOf(ctx));
  if (!in.hasRank()) {
    ctx.setOutput(0, type, Shape::unknownRank());
    return;
  }
  if (!inputs.known()) {
    ctx.setOutput(0, type, Shape::ofRank(in.rank()));
    return;
  }
  // Resolve with unknown dims stood in by a huge size; a slice over the whole of such an axis keeps
  // its (symbolic) dim, any other slice of it gives an unknown dim.
  constexpr int64_t kStandIn = std::numeric_limits<int64_t>::max() / 4;
  std::vector<int64_t> dims;
  for (const Dim& d : in.dims()) dims.push_back(d.isKnown() ? d.value() : kStandIn);
  auto axes = resolveSlice(ctx.layer(), dims, inputs);
  std::vector<Dim> out;
  for (size_t d = 0; d < in.rank(); ++d) {
    const SliceAxis& a = axes[d];
    if (in[d].isKnown()) out.push_back(a.count);
    else out.push_back(a.start == 0 && a.step == 1 && a.count == kStandIn ? in[d] : Dim::unknown());
  }
  ctx.setOutput(0, type, Shape(std::move(out)));
}

void inferExpand(InferenceContext& ctx) {
  DataType type = ctx.inputType(0);
  if (const HostTensor* shape = ctx.inputValue(1)) {
    auto dims = shape->toInt64Vector();
    for (int64_t d : dims)
      if (d < 0) ctx.fail("the target shape " + dimsToString(dims) + " has a negative dim");
    ctx.setOutput(0, type, broadcastShapes(ctx, ctx.inputShape(0), Shape::fromDims(dims)));
  } else if (auto length = knownLength(ctx, 1); length && ctx.inputShape(0).hasRank()) {
    ctx.setOutput(0, type, Shape::ofRank(std::max(size_t(*length), ctx.inputShape(0).rank())));
  } else {
    ctx.setOutput(0, type, Shape::unknownRank());
  }
}

void inferTile(InferenceContext& ctx) {
  const Shape& in = ctx.inputShape(0);
  DataType type = ctx.inputType(0);
  const HostTensor* repeats = ctx.inputValue(1);
  if (!in.hasRank() || !repeats) {
    ctx.setOutput(0, type, in.hasRank() ? Shape::ofRank(in.rank()) : Shape::unknownRank());
    return;
  }
  auto reps = repeats->toInt64Vector();
  if (reps.size() != in.rank())
    ctx.fail("repeats " + dimsToString(reps) + " must have one entry per input axis (input shape " + in.toString() + ")");
  std::vector<Dim> out;
  for (size_t d = 0; d < in.rank(); ++d) {
    if (reps[d] < 0) ctx.fail("repeats " + dimsToString(reps) + " must be >= 0");
    out.push_back(reps[d] == 1 ? in[d] : in[d].isKnown() ? Dim(in[d].value() * reps[d]) : Dim::unknown());
  }
  ctx.setOutput(0, type, Shape(std::move(out)));
}

void inferPad(InferenceContext& ctx) {
  const Shape& in = ctx.inputShape(0);
  DataType type = ctx.inputType(0);
  std::string mode = ctx.layer().attrString("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap")
    ctx.fail("mode '" + mode + "' is not one of constant, reflect, edge, wrap");
  if (!in.hasRank()) {
    ctx.setOutput(0, type, Shape::unknownRank());
    return;
  }
  int64_t rank = int64_t(in.rank());
  auto pads = padAmounts(ctx.layer(), rank, valuesOf(ctx));
  if (!pads) {
    ctx.setOutput(0, type, Shape::ofRank(in.rank()));
    return;
  }
  std::vector<Dim> out;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t extra = (*pads)[size_t(d)] + (*pads)[size_t(d + rank)];
    const Dim& dim = in[size_t(d)];
    if (extra == 0) {
      out.push_back(dim);
    } else if (!dim.isKnown()) {
      out.push_back(Dim::unknown());
    } else {
      if (dim.value() + extra < 0)
        ctx.fail("pads " + dimsToString(*pads) + " crop more than the " + std::to_string(dim.value()) +
                 " elements of axis " + std::to_string(d));
      if (mode != "constant" && dim.value() == 0)
        ctx.fail("axis " + std::to_string(d) + " is empty, so " + mode + " padding has nothing to repeat");
      out.push_back(dim.value() + extra);
    }
  }
  ctx.setOutput(0, type, Shape(std::move(out)));
}

void inferCenterCropPad(InferenceContext& ctx) {
  const Shape& in = ctx.inputShape(0);
  DataType type = ctx.inputType(0);
  if (!in.hasRank()) {
    ctx.setOutput(0, type, Shape::unknownRank());
    return;
  }
  int64_t rank = int64_t(in.rank());
  std::vector<int64_t> axes = ctx.layer().attrInts("axes");
  if (axes.empty())
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  axes = normalizeAxes(ctx.layer(), axes, rank);
  Shape out = in;
  const HostTensor* shape = ctx.inputValue(1);
  std::vector<int64_t> sizes = shape ? shape->toInt64Vector() : std::vector<int64_t>{};
  if (shape && sizes.size() != axes.size())
    ctx.fail("shape " + dimsToString(sizes) + " must have one entry per axis in 'axes' (" + std::to_string(axes.size()) + ")");
  for (size_t i = 0; i < axes.size(); ++i) {
    if (shape && sizes[i] < 0) ctx.fail("shape " + dimsToString(sizes) + " must not be negative");
    out[size_t(axes[i])] = shape ? Dim(sizes[i]) : Dim::unknown();
  }
  ctx.setOutput(0, type, std::move(out));
}

// DepthToSpace (toSpace) and SpaceToDepth on NCHW.
void inferBlockRearrange(InferenceContext& ctx, bool toSpace) {
  const Shape& in = ctx.inputShape(0);
  int64_t block = ctx.layer().attrInt("blocksize", 0);
  if (block <= 0) ctx.fail("the 'blocksize' attribute must be a positive integer");
  std::string mode = ctx.layer().attrString("mode", "DCR");
  if (toSpace && mode != "DCR" && mode != "CRD") ctx.fail("mode '" + mode + "' must be DCR or CRD");
  if (in.hasRank() && in.rank() != 4) ctx.fail("the input must be 4-D (NCHW), got shape " + in.toString());
  if (!in.hasRank()) {
    ctx.setOutput(0, ctx.inputType(0), Shape::ofRank(4));
    return;
  }
  int64_t area = block * block;
  auto divided = [&](const Dim& d, int64_t by, const char* what) -> Dim {
    if (!d.isKnown()) return Dim::unknown();
    if (d.value() % by != 0)
      ctx.fail(std::string(what) + " " + std::to_string(d.value()) + " of input " + in.toString() +
               " is not divisible by " + std::to_string(by));
    return d.value() / by;
  };
  auto multiplied = [](const Dim& d, int64_t by) { return d.isKnown() ? Dim(d.value() * by) : Dim::unknown(); };
  Shape out = toSpace ? Shape{in[0], divided(in[1], area, "channel count"), multiplied(in[2], block), multiplied(in[3], block)}
                      : Shape{in[0], multiplied(in[1], area), divided(in[2], block, "height"), divided(in[3], block, "width")};
  ctx.setOutput(0, ctx.inputType(0), std::move(out));
}

void inferTrilu(InferenceContext& ctx) {
  rankOf(ctx, 2);
  if (const HostTensor* k = ctx.inputValue(1); k && k->elementCount() != 1)
    ctx.fail("k must be a scalar, got shape " + dimsToString(k->dims()));
  inferSameAsInput(ctx);
}

void inferReverseSequence(InferenceContext& ctx) {
  rankOf(ctx, 2);
  int64_t batchAxis = ctx.layer().attrInt("batch_axis", 1), timeAxis = ctx.layer().attrInt("time_axis", 0);
  if (!((batchAxis == 0 && timeAxis == 1) || (batchAxis == 1 && timeAxis == 0)))
    ctx.fail("batch_axis and time_axis must be 0 and 1 in some order, got " + std::to_string(batchAxis) + " and " +
             std::to_string(timeAxis));
  inferSameAsInput(ctx);
}

}  // namespace

void registerCopySchemas(OpSchemaRegistry& registry) {
  registry.add({"", "Transpose", inferTranspose, 1, 1});
  registry.add({"", "Concat", inferConcat, 1, -1});
  registry.add({"", "Split", inferSplit, 1, 2});
  registry.add({"", "Slice", inferSlice, 1, 5});
  registry.add({"", "Expand", inferExpand, 2, 2});
  registry.add({"", "Tile", inferTile, 2, 2});
  registry.add({"", "Pad", inferPad, 1, 4});
  registry.add({"", "CenterCropPad", inferCenterCropPad, 2, 2});
  registry.add({"", "DepthToSpace", [](InferenceContext& ctx) { inferBlockRearrange(ctx, true); }, 1, 1});
  registry.add({"", "SpaceToDepth", [](InferenceContext& ctx) { inferBlockRearrange(ctx, false); }, 1, 1});
  registry.add({"", "Trilu", inferTrilu, 1, 2});
  registry.add({"", "ReverseSequence", inferReverseSequence, 2, 2});
}

}  // namespace kiln::tensor_shape
