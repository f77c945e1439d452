#include "strided_views.h"

#include <algorithm>

namespace kiln::passes {
namespace {

using Piece = StridedView::Piece;

bool keepsElementOrder(const Layer& layer) {
  for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"})
    if (isOp(layer, op)) return true;
  return false;
}

bool isLayoutOnly(const Layer& layer) {
  return keepsElementOrder(layer) || isOp(layer, "Transpose") || isOp(layer, "Split") || isOp(layer, "Gather");
}

// The same elements in the same order regrouped into `dims`: the pieces are
// dealt out from the innermost, a piece split where an output dim ends inside
// it.
std::optional<StridedView> reshaped(const StridedView& in, const std::vector<int64_t>& dims) {
  std::vector<Piece> pieces;
  for (const auto& dim : in.dims)
    for (const Piece& piece : dim)
      if (piece.size != 1) pieces.push_back(piece);
  for (const Piece& piece : pieces)
    if (piece.size == 0) return std::nullopt;  // empty tensors: nothing to read in place
  StridedView out;
  out.offset = in.offset;
  out.dims.resize(dims.size());
  for (size_t o = dims.size(); o-- > 0;) {
    int64_t need = dims[o];
    if (need <= 0) return std::nullopt;
    std::vector<Piece> taken;
    while (need > 1) {
      if (pieces.empty()) return std::nullopt;
      Piece& last = pieces.back();
      if (need % last.size == 0) {
        need /= last.size;
        taken.push_back(last);
        pieces.pop_back();
      } else if (last.size % need == 0) {
        taken.push_back({need, last.stride});
        last = {last.size / need, last.stride * need};
        need = 1;
      } else {
        return std::nullopt;
      }
    }
    std::reverse(taken.begin(), taken.end());
    out.dims[o] = std::move(taken);
  }
  if (!pieces.empty()) return std::nullopt;
  return out;
}

size_t normalizedAxis(int64_t axis, size_t rank) { return size_t(axis < 0 ? axis + int64_t(rank) : axis); }

// Slicing dim `axis` needs it to be one piece (a run of pieces cannot step by a
// whole index).
bool onePiece(const StridedView& view, size_t axis) { return view.dims[axis].size() == 1; }

}  // namespace

StridedView StridedView::dense(const std::vector<int64_t>& dims) {
  StridedView view;
  view.dims.resize(dims.size());
  int64_t stride = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    view.dims[i] = {{dims[i], stride}};
    stride *= dims[i];
  }
  return view;
}

StridedView StridedView::permuted(const std::vector<int64_t>& dims, const std::vector<int64_t>& perm) {
  const StridedView base = dense(dims);
  StridedView view;
  for (int64_t axis : perm) view.dims.push_back(base.dims[size_t(axis)]);
  return view;
}

std::vector<int64_t> StridedView::sizes() const {
  std::vector<int64_t> out;
  for (const auto& dim : dims) {
    int64_t n = 1;
    for (const Piece& piece : dim) n *= piece.size;
    out.push_back(n);
  }
  return out;
}

std::optional<std::vector<int64_t>> StridedView::strides() const {
  std::vector<int64_t> out;
  for (const auto& dim : dims) {
    if (dim.empty()) {
      out.push_back(0);
      continue;
    }
    for (size_t i = 0; i + 1 < dim.size(); ++i)
      if (dim[i].stride != dim[i + 1].stride * dim[i + 1].size) return std::nullopt;
    out.push_back(dim.back().stride);
  }
  return out;
}

std::optional<StridedView> viewThrough(const Network& network, const Layer& layer, const StridedView& in,
                                       size_t output) {
  if (!layer.hasOutput(output)) return std::nullopt;
  const auto outDims = knownDims(network, layer.outputs[output]);
  if (!outDims) return std::nullopt;
  const size_t rank = in.dims.size();
  if (keepsElementOrder(layer)) return reshaped(in, *outDims);
  if (isOp(layer, "Transpose")) {
    std::vector<int64_t> perm = layer.attrInts("perm");
    if (perm.empty())
      for (size_t i = rank; i-- > 0;) perm.push_back(int64_t(i));
    if (perm.size() != rank) return std::nullopt;
    StridedView out;
    out.offset = in.offset;
    for (int64_t axis : perm) {
      if (axis < 0 || size_t(axis) >= rank) return std::nullopt;
      out.dims.push_back(in.dims[size_t(axis)]);
    }
    return out;
  }
  if (isOp(layer, "Split")) {  // output `output` starts where the earlier
                               // outputs end along the axis
    const size_t axis = normalizedAxis(layer.attrInt("axis", 0), rank);
    if (axis >= rank || !onePiece(in, axis)) return std::nullopt;
    int64_t start = 0;
    for (size_t o = 0; o < output; ++o) {
      const auto dims = layer.hasOutput(o) ? knownDims(network, layer.outputs[o]) : std::nullopt;
      if (!dims || dims->size() != rank) return std::nullopt;
      start += (*dims)[axis];
    }
    StridedView out = in;
    out.offset += start * in.dims[axis][0].stride;
    out.dims[axis][0].size = (*outDims)[axis];
    return out;
  }
  if (isOp(layer, "Gather")) {  // one constant index: that slice, its dim
                                // dropped (or kept at 1)
    const HostTensor* value = layer.inputs.size() > 1 ? constantValue(network, layer.inputs[1]) : nullptr;
    const auto indices = value ? constantInts(network, layer.inputs[1]) : std::nullopt;
    const size_t axis = normalizedAxis(layer.attrInt("axis", 0), rank);
    if (!indices || indices->size() != 1 || value->rank() > 1 || axis >= rank || !onePiece(in, axis))
      return std::nullopt;
    const Piece piece = in.dims[axis][0];
    int64_t at = (*indices)[0];
    if (at < 0) at += piece.size;
    if (at < 0 || at >= piece.size) return std::nullopt;
    StridedView out = in;
    out.offset += at * piece.stride;
    if (value->rank() == 0)
      out.dims.erase(out.dims.begin() + std::ptrdiff_t(axis));
    else
      out.dims[axis] = {{1, piece.stride}};
    return out;
  }
  return std::nullopt;
}

ViewChain viewChainTo(const GraphIndex& index, const std::string& tensor) {
  ViewChain chain;
  chain.base = tensor;
  while (auto producer = index.producer(chain.base)) {
    const Layer& layer = index.layer(*producer);
    if (!isLayoutOnly(layer) || !layer.hasInput(0)) break;
    const auto output = std::find(layer.outputs.begin(), layer.outputs.end(), chain.base) - layer.outputs.begin();
    chain.steps.push_back({*producer, size_t(output)});
    chain.base = layer.inputs[0];
  }
  std::reverse(chain.steps.begin(), chain.steps.end());
  return chain;
}

std::optional<StridedView> viewAlong(const Network& network, const GraphIndex& index, const ViewChain& chain,
                                     const StridedView& base) {
  std::optional<StridedView> view = base;
  for (const ViewChain::Step& step : chain.steps) {
    view = viewThrough(network, index.layer(step.layer), *view, step.output);
    if (!view) return std::nullopt;
  }
  return view;
}

}  // namespace kiln::passes
