#include "tensor_parallel_shards.h"

#include <kiln/error.h>

#include "../ops/collective.h"
#include "../ops/fused.h"

#include <cstring>
#include <map>
#include <numeric>
#include <optional>
#include <unordered_set>

namespace kiln::tensor_parallel {
namespace {

using namespace passes;

// A tensor each rank holds a share of: along `axis`, each of `groups` (full extents side by side; a
// packed QKV product has three) is cut into worldSize equal parts, and a rank holds its part of each.
struct Shard {
  int64_t axis = 0;
  std::vector<int64_t> groups;
  int64_t extent() const { return std::accumulate(groups.begin(), groups.end(), int64_t(0)); }
};

// Thrown while planning: why the block cannot be split.
struct Unsplittable {
  std::string why;
  std::string wholeOperand;
};

bool isElementwise(const std::string& op) {
  static const std::unordered_set<std::string> ops = {
      "Add",       "Sub",       "Mul",         "Div",        "Pow",
      "Max",       "Min",       "Mean",        "Sum",        "Where",
      "Equal",     "Less",      "LessOrEqual", "Greater",    "GreaterOrEqual",
      "And",       "Or",        "Xor",         "Not",        "Mod",
      "PRelu",     "Cast",      "CastLike",    "Identity",   "Dropout",
      "Neg",       "Abs",       "Sqrt",        "Reciprocal", "Exp",
      "Log",       "Floor",     "Ceil",        "Round",      "Sign",
      "IsNaN",     "IsInf",     "Clip",        "Sin",        "Cos",
      "Relu",      "LeakyRelu", "Elu",         "Selu",       "Celu",
      "Gelu",      "Erf",       "Tanh",        "Sigmoid",    "HardSigmoid",
      "HardSwish", "Softplus",  "Softsign",    "Mish",       "ThresholdedRelu"};
  return ops.count(op) != 0;
}

// The elementwise ops that make a product chain an MLP (its activation, or a piece of GELU's).
bool isActivation(const std::string& op) {
  static const std::unordered_set<std::string> ops = {
      "Relu",      "LeakyRelu", "Elu",      "Selu",    "Celu",
      "Gelu",      "Erf",       "Tanh",     "Sigmoid", "HardSigmoid",
      "HardSwish", "Softplus",  "Softsign", "Mish",    "ThresholdedRelu",
      "Clip"};
  return ops.count(op) != 0;
}

bool isFloat(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat16 || t == DataType::kBFloat16 || t == DataType::kFloat64;
}

// The rank's share of `t` along `axis`: part `rank` of each group.
HostTensor rankShare(const HostTensor& t, size_t axis, const std::vector<int64_t>& groups, RankSplit split) {
  const size_t element = byteSize(t.dtype());
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= t.dim(d);
  for (size_t d = axis + 1; d < t.rank(); ++d) inner *= t.dim(d);
  std::vector<int64_t> dims = t.dims();
  dims[axis] /= split.worldSize;
  HostTensor share(t.dtype(), dims);
  const size_t rowBytes = size_t(inner) * element;
  const auto* from = static_cast<const uint8_t*>(t.rawData());
  auto* to = static_cast<uint8_t*>(share.rawData());
  for (int64_t o = 0; o < outer; ++o) {
    int64_t offset = 0;
    for (int64_t group : groups) {
      const int64_t part = group / split.worldSize;
      const size_t bytes = size_t(part) * rowBytes;
      if (bytes) std::memcpy(to, from + size_t(o * t.dim(axis) + offset + split.rank * part) * rowBytes, bytes);
      to += bytes;
      offset += group;
    }
  }
  return share;
}

// Input `input` of layer `at` reads a new constant made from the old one's value.
Edit replaceConstantInput(size_t at, size_t input, std::function<HostTensor(const HostTensor&)> make, int rank) {
  return [=](Network& network, std::set<size_t>&) {
    const std::string old = network.layers()[at].inputs[input];
    HostTensor value = make(*network.tensor(old).constant);
    const std::string name = uniqueTensorName(network, old + "/rank" + std::to_string(rank));
    network.addConstant(name, std::move(value));
    network.layers()[at].inputs[input] = name;
  };
}

std::vector<int64_t> divided(std::vector<int64_t> values, int64_t by) {
  for (int64_t& v : values) v /= by;
  return values;
}

class Planner {
 public:
  Planner(const Network& network, const GraphIndex& index, const std::vector<size_t>& order, RankSplit split)
      : network_(network), index_(index), split_(split), position_(network.layers().size()) {
    for (size_t i = 0; i < order.size(); ++i) position_[order[i]] = i;
  }

  BlockPlan plan(const std::vector<size_t>& columnProducts) {
    try {
      for (size_t at : columnProducts) splitColumns(at);
      while (!pending_.empty()) {  // in topological order: both operands of a product are known first
        const size_t at = pending_.begin()->second;
        pending_.erase(pending_.begin());
        follow(at);
      }
      if (plan_.rowProducts.empty())
        throw Unsplittable{"its split never reaches a product with constant weights that could sum it", ""};
    } catch (const Unsplittable& u) {
      plan_.failure = u.why;
      plan_.wholeOperand = u.wholeOperand;
      plan_.edits.clear();
    }
    return std::move(plan_);
  }

 private:
  const Layer& layer(size_t at) const { return network_.layers()[at]; }
  const Shard* shardOf(const std::string& tensor) const {
    auto it = shards_.find(tensor);
    return it == shards_.end() ? nullptr : &it->second;
  }
  [[noreturn]] void fail(size_t at, const std::string& why, const std::string& wholeOperand = "") const {
    const Layer& l = layer(at);
    throw Unsplittable{"'" + l.name + "' (" + (l.domain.empty() ? "" : l.domain + ".") + l.opType + ") " + why,
                       wholeOperand};
  }
  const Shape& shapeOf(size_t at, const std::string& tensor) const {
    const Tensor* t = network_.findTensor(tensor);
    if (!t || !t->shape.hasRank()) fail(at, "has a tensor '" + tensor + "' of unknown rank");
    return t->shape;
  }
  int64_t rankOf(size_t at, const std::string& tensor) const { return int64_t(shapeOf(at, tensor).rank()); }
  int64_t dimOf(size_t at, const std::string& tensor, int64_t axis) const {
    const Dim& d = shapeOf(at, tensor)[size_t(axis)];
    return d.isKnown() ? d.value() : -1;
  }
  int64_t axisAttr(size_t at, const std::string& key, int64_t fallback, int64_t rank) const {
    const int64_t axis = layer(at).attrInt(key, fallback);
    return axis < 0 ? axis + rank : axis;
  }
  void require(int64_t extent, const std::string& what) {
    if (extent % split_.worldSize != 0 && plan_.indivisible.empty())
      plan_.indivisible = what + " (" + std::to_string(extent) + ")";
  }
  void edit(Edit e) { plan_.edits.push_back(std::move(e)); }

  // Marks `tensor` as held in shares and queues its readers.
  void shard(size_t at, const std::string& tensor, Shard s) {
    if (index_.isGraphOutput(tensor))
      fail(at, "writes '" + tensor + "', a graph output, which would hold one rank's share");
    if (index_.isReadBySubgraph(tensor)) fail(at, "writes '" + tensor + "', which a subgraph reads");
    shards_[tensor] = std::move(s);
    for (size_t reader : index_.consumers(tensor))
      if (!plan_.layers.count(reader)) pending_.insert({position_[reader], reader});
  }

  void follow(size_t at) {
    if (!plan_.layers.insert(at).second) return;
    const Layer& l = layer(at);
    const std::string& op = l.opType;
    if (!l.domain.empty()) fail(at, "reads a split tensor; the split does not go through this op");
    if (isElementwise(op)) return elementwise(at);
    if (op == "Transpose") return transpose(at);
    if (op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze") return reshape(at);
    if (op == "Split") return splitLayer(at);
    if (op == "Softmax" || op == "LogSoftmax") return softmax(at);
    if (op == "MatMul") return matMul(at);
    if (op == "Gemm") return gemm(at);
    if (op == "Shape" || op == "Size") return;  // dims only: along the split axis, the rank's
    fail(at, "reads a split tensor; the split does not go through " + op);
  }

  // Q, K, V or fc1: the weights' columns (and the bias) cut to the rank's share.
  void splitColumns(size_t at) {
    const Layer& l = layer(at);
    plan_.columnProducts.push_back(at);
    plan_.layers.insert(at);
    const bool gemm = isOp(l, "Gemm");
    const size_t outputAxisOfB = gemm && l.attrInt("transB", 0) ? 0 : 1;
    const int64_t width = constantValue(network_, l.inputs[1])->dim(outputAxisOfB);
    const std::vector<int64_t> groups = groupsAfter(l.outputs[0], width);
    for (int64_t group : groups) require(group, "the output width of '" + l.name + "'");
    const RankSplit split = split_;
    edit(replaceConstantInput(
        at, 1, [=](const HostTensor& w) { return rankShare(w, outputAxisOfB, groups, split); }, split.rank));
    if (gemm && l.hasInput(2)) {
      const HostTensor* c = constantValue(network_, l.inputs[2]);
      if (!c) fail(at, "adds a bias C that is not a constant");
      if (c->rank() > 0 && c->dims().back() == width && width > 1)
        edit(replaceConstantInput(
            at, 2, [=](const HostTensor& b) { return rankShare(b, b.rank() - 1, groups, split); }, split.rank));
      else if (c->rank() > 0 && c->dims().back() != 1)
        fail(at, "adds a bias C that is not one value per output column");
    }
    const int64_t outputRank = rankOf(at, l.outputs[0]);
    if (dimOf(at, l.outputs[0], outputRank - 1) != width) fail(at, "writes an output whose last dim is not its width");
    shard(at, l.outputs[0], {outputRank - 1, groups});
  }

  // The parts a packed product is cut into (GPT-2's c_attn: Q, K and V side by side): the sizes of
  // the Split that its result reaches through a bias and reshapes that keep the last axis.
  std::vector<int64_t> groupsAfter(std::string tensor, int64_t width) const {
    for (int step = 0; step < 4; ++step) {
      auto next = index_.soleConsumer(tensor);
      if (!next) break;
      const Layer& l = layer(*next);
      const Tensor* t = network_.findTensor(tensor);
      if (!t || !t->shape.hasRank()) break;
      const int64_t rank = int64_t(t->shape.rank());
      if (isOp(l, "Split")) {
        const int64_t axis = axisAttr(*next, "axis", 0, rank);
        auto sizes = splitSizes(*next, width);
        if (axis == rank - 1 && sizes && sizes->size() > 1 &&
            std::accumulate(sizes->begin(), sizes->end(), int64_t(0)) == width)
          return *sizes;
        break;
      }
      const auto other = otherOperand(l, tensor);
      const bool bias = isOp(l, "Add") && other && constantValue(network_, *other);
      const Tensor* out = l.hasOutput(0) ? network_.findTensor(l.outputs[0]) : nullptr;
      const bool keepsLastAxis = isOp(l, "Reshape") && out && out->shape.hasRank() && out->shape.rank() > 0 &&
                                 out->shape.dims().back() == Dim(width);
      if (!bias && !keepsLastAxis) break;
      tensor = l.outputs[0];
    }
    return {width};
  }

  std::optional<std::vector<int64_t>> splitSizes(size_t at, int64_t extent) const {
    const Layer& l = layer(at);
    if (l.hasInput(1)) return constantInts(network_, l.inputs[1]);
    if (l.hasAttr("split")) return l.attrInts("split");
    const int64_t parts = int64_t(l.outputs.size());
    if (extent < 0 || parts == 0 || extent % parts != 0) return std::nullopt;
    return std::vector<int64_t>(size_t(parts), extent / parts);
  }

  // Numpy broadcasting: every split operand split alike (right-aligned); the others broadcast along
  // the split axis, or are constants (biases) cut to the rank's share.
  void elementwise(size_t at) {
    const Layer& l = layer(at);
    const int64_t outputRank = rankOf(at, l.outputs[0]);
    std::optional<Shard> common;
    for (const std::string& in : l.inputs) {
      const Shard* s = in.empty() ? nullptr : shardOf(in);
      if (!s) continue;
      Shard aligned{s->axis + outputRank - rankOf(at, in), s->groups};
      if (common && (common->axis != aligned.axis || common->groups != aligned.groups))
        fail(at, "combines tensors split along different axes");
      common = aligned;
    }
    for (size_t i = 0; i < l.inputs.size(); ++i) {
      const std::string& in = l.inputs[i];
      if (in.empty() || shardOf(in)) continue;
      const int64_t axis = common->axis - (outputRank - rankOf(at, in));
      if (axis < 0 || dimOf(at, in, axis) == 1) continue;  // broadcast along the split axis
      const HostTensor* value = constantValue(network_, in);
      if (!value || value->dim(size_t(axis)) != common->extent() || byteSize(value->dtype()) == 0)
        fail(at, "reads the whole tensor '" + in + "' beside a split one", in);
      const RankSplit split = split_;
      const std::vector<int64_t> groups = common->groups;
      edit(replaceConstantInput(
          at, i, [=](const HostTensor& c) { return rankShare(c, size_t(axis), groups, split); }, split.rank));
    }
    plan_.nonlinear |= isActivation(l.opType);
    for (const std::string& out : l.outputs)
      if (!out.empty()) shard(at, out, *common);
  }

  void transpose(size_t at) {
    const Layer& l = layer(at);
    const Shard s = *shardOf(l.inputs[0]);
    std::vector<int64_t> perm = l.attrInts("perm");
    if (perm.empty())
      for (int64_t d = rankOf(at, l.inputs[0]); d-- > 0;) perm.push_back(d);
    for (size_t j = 0; j < perm.size(); ++j)
      if (perm[j] == s.axis) return shard(at, l.outputs[0], {int64_t(j), s.groups});
    fail(at, "has a perm without the split axis");
  }

  // Reshape, Flatten, Squeeze, Unsqueeze: the split axis of extent E with Q elements after it maps to
  // the output axis b whose dim E' and elements after it Q' have E'·Q' = E·Q (the heads' [W] <->
  // [H, D]); the rank's contiguous block is then a block along b when N divides E'.
  void reshape(size_t at) {
    const Layer& l = layer(at);
    for (size_t i = 1; i < l.inputs.size(); ++i)
      if (!l.inputs[i].empty() && shardOf(l.inputs[i])) fail(at, "takes a split tensor as its target shape");
    const Shard s = *shardOf(l.inputs[0]);
    const int64_t inputRank = rankOf(at, l.inputs[0]), outputRank = rankOf(at, l.outputs[0]);
    int64_t block = s.extent();  // E·Q
    for (int64_t d = s.axis + 1; d < inputRank; ++d) {
      const int64_t dim = dimOf(at, l.inputs[0], d);
      if (dim < 0) fail(at, "has dims after the split axis that are not known");
      block *= dim;
    }
    std::optional<int64_t> axis;
    int64_t after = 1;  // Q'
    for (int64_t b = outputRank; b-- > 0;) {
      const int64_t dim = dimOf(at, l.outputs[0], b);
      if (dim < 0 || dim * after > block) break;
      if (dim * after == block) {
        axis = b;
        break;
      }
      after *= dim;
    }
    if (!axis) fail(at, "mixes the split axis with the dims before it (heads folded into the batch?)");
    const int64_t extent = dimOf(at, l.outputs[0], *axis);
    Shard out{*axis, {extent}};
    if (s.groups.size() > 1) {
      if (extent != s.extent()) fail(at, "reshapes a packed axis (Q, K and V side by side) before it is split");
      out.groups = s.groups;
    } else {
      require(extent, "the dim '" + l.name + "' makes of the split axis");
    }
    if (isOp(l, "Reshape")) patchReshapeTarget(at, *axis, extent, s.axis == *axis && s.extent() == extent);
    shard(at, l.outputs[0], out);
  }

  // The target shape's entry `axis` (the split axis, `extent` whole) becomes extent / N. A constant
  // target is patched; a Concat of pieces (shapes read at run time before it) gets a copy whose
  // constant piece is patched, so long as every piece from the split axis on is constant.
  void patchReshapeTarget(size_t at, int64_t axis, int64_t extent, bool inputAxisSame) {
    const Layer& l = layer(at);
    const bool allowZero = l.attrInt("allowzero", 0) != 0;
    const int64_t n = split_.worldSize;
    // nullopt: the entry needs no change (-1, or 0 copying the split input dim); else its new value.
    auto patched = [&](int64_t value) -> std::optional<int64_t> {
      if (value == -1 || (value == 0 && !allowZero && inputAxisSame)) return std::nullopt;
      if (value != extent)
        fail(at, "has target dim " + std::to_string(value) + " where " + std::to_string(extent) + " was expected");
      return extent / n;
    };
    auto patchEntry = [](const HostTensor& shape, int64_t k, int64_t value) {
      HostTensor copy = shape.clone();
      if (copy.dtype() == DataType::kInt64)
        copy.data<int64_t>()[k] = value;
      else
        copy.data<int32_t>()[k] = int32_t(value);
      return copy;
    };
    const std::string& target = l.inputs[1];
    if (auto values = constantInts(network_, target)) {
      if (auto value = patched((*values)[size_t(axis)]))
        edit(replaceConstantInput(
            at, 1, [=](const HostTensor& t) { return patchEntry(t, axis, *value); }, split_.rank));
      return;
    }
    const auto concatAt = index_.producer(target);
    if (!concatAt || !isOp(layer(*concatAt), "Concat"))
      fail(at, "computes its target shape at run time; export the model with static shapes");
    const Layer& concat = layer(*concatAt);
    int64_t offset = 0;
    std::optional<std::pair<size_t, int64_t>> piece;  // the input holding the entry, and where in it
    for (size_t k = 0; k < concat.inputs.size(); ++k) {
      const Tensor* t = network_.findTensor(concat.inputs[k]);
      if (!t || !t->shape.hasRank() || t->shape.rank() != 1 || !t->shape[0].isKnown())
        fail(at, "builds its target shape from pieces of unknown length");
      const int64_t length = t->shape[0].value();
      if (offset + length > axis) {
        if (!constantValue(network_, concat.inputs[k]))
          fail(at,
               "computes its target shape from the split axis on at run time; export the model with static "
               "shapes");
        if (!piece) piece = {k, axis - offset};
      }
      offset += length;
    }
    if (!piece) fail(at, "has a target shape shorter than its output");
    const size_t input = piece->first;
    const int64_t entry = piece->second;
    const auto value = patched(constantInts(network_, concat.inputs[input])->at(size_t(entry)));
    if (!value) return;
    const size_t concatIndex = *concatAt;
    const int rank = split_.rank;
    edit([=](Network& network, std::set<size_t>&) {
      Layer copy = network.layers()[concatIndex];
      const std::string old = copy.inputs[input];
      const std::string patchedPiece = uniqueTensorName(network, old + "/rank" + std::to_string(rank));
      network.addConstant(patchedPiece, patchEntry(*network.tensor(old).constant, entry, *value));
      copy.inputs[input] = patchedPiece;
      copy.name += "/rank" + std::to_string(rank);
      copy.outputs = {uniqueTensorName(network, copy.outputs[0] + "/rank" + std::to_string(rank))};
      network.layers()[at].inputs[1] = copy.outputs[0];
      network.addLayer(std::move(copy));
    });
  }

  // A Split of the split axis must cut a packed product into its groups: each part is then one of
  // Q, K, V, split alone. A Split of another axis leaves the shares alone.
  void splitLayer(size_t at) {
    const Layer& l = layer(at);
    const Shard s = *shardOf(l.inputs[0]);
    const int64_t axis = axisAttr(at, "axis", 0, rankOf(at, l.inputs[0]));
    if (axis != s.axis) {
      for (const std::string& out : l.outputs)
        if (!out.empty()) shard(at, out, s);
      return;
    }
    const auto sizes = splitSizes(at, s.extent());
    if (s.groups.size() < 2 || !sizes || *sizes != s.groups)
      fail(at, "cuts the split axis into parts other than the packed product's");
    for (size_t k = 0; k < l.outputs.size(); ++k)
      if (!l.outputs[k].empty()) shard(at, l.outputs[k], {axis, {(*sizes)[k]}});
    const int64_t n = split_.worldSize;
    if (l.hasInput(1)) {
      edit(replaceConstantInput(
          at, 1,
          [n](const HostTensor& t) {
            const auto parts = divided(t.toInt64Vector(), n);
            return HostTensor::fromVector<int64_t>({int64_t(parts.size())}, parts);
          },
          split_.rank));
    } else if (l.hasAttr("split")) {
      const auto parts = divided(*sizes, n);
      edit([=](Network& network, std::set<size_t>&) { network.layers()[at].attributes["split"] = parts; });
    }
  }

  void softmax(size_t at) {
    const Layer& l = layer(at);
    const Shard s = *shardOf(l.inputs[0]);
    const int64_t rank = rankOf(at, l.inputs[0]);
    const bool coerced = l.opsetVersion < 13;  // older opsets flatten to 2-D at the axis
    const int64_t axis = axisAttr(at, "axis", coerced ? 1 : -1, rank);
    if (coerced ? s.axis >= axis : s.axis == axis) fail(at, "normalises along the split axis");
    shard(at, l.outputs[0], s);
  }

  void matMul(size_t at) {
    const Layer& l = layer(at);
    const std::string &a = l.inputs[0], &b = l.inputs[1];
    const Shard *sa = shardOf(a), *sb = shardOf(b);
    const int64_t ra = rankOf(at, a), rb = rankOf(at, b), ro = rankOf(at, l.outputs[0]);
    if (ra < 2 || rb < 2) fail(at, "multiplies vectors");
    if (sa && sa->axis == ra - 1) {  // sums over the split axis: a row-split product
      if (sb || !isLinear(network_, l))
        fail(at, "sums over the split axis but its other operand is not constant weights");
      if (sa->groups.size() > 1) fail(at, "sums over a packed axis");
      return splitRows(at);
    }
    // Split along a batch axis (the heads): the other operand is split alike or broadcasts there.
    std::optional<Shard> out;
    for (const auto& [tensor, s, r] : {std::tuple{a, sa, ra}, std::tuple{b, sb, rb}}) {
      if (!s) continue;
      if (s->axis >= r - 2) fail(at, "multiplies rows or columns of '" + tensor + "' that are split");
      Shard aligned{s->axis + ro - r, s->groups};
      if (out && (out->axis != aligned.axis || out->groups != aligned.groups))
        fail(at, "multiplies tensors split along different axes");
      out = aligned;
    }
    for (const auto& [tensor, s, r] : {std::tuple{a, sa, ra}, std::tuple{b, sb, rb}}) {
      if (s) continue;
      const int64_t axis = out->axis - (ro - r);
      if (axis >= 0 && dimOf(at, tensor, axis) != 1)
        fail(at, "multiplies a split tensor by the whole '" + tensor + "'", tensor);
    }
    shard(at, l.outputs[0], *out);
  }

  void gemm(size_t at) {
    const Layer& l = layer(at);
    const Shard* sa = shardOf(l.inputs[0]);
    const int64_t contraction = l.attrInt("transA", 0) ? 0 : 1;
    for (size_t i = 1; i < l.inputs.size(); ++i)
      if (!l.inputs[i].empty() && shardOf(l.inputs[i])) fail(at, "takes a split tensor as its weights or bias");
    if (!sa || sa->axis != contraction || !isLinear(network_, l) || sa->groups.size() > 1)
      fail(at, "does not sum over the split axis with constant weights");
    splitRows(at);
  }

  // The output projection or fc2: the weights' rows cut to the rank's share; the rank's product is a
  // partial sum that a kiln.AllReduce completes. The bias is added once, by rank 0 before the sum.
  void splitRows(size_t at) {
    const Layer& l = layer(at);
    plan_.rowProducts.push_back(at);
    const bool gemm = isOp(l, "Gemm");
    const size_t contractionAxisOfB = gemm && l.attrInt("transB", 0) ? 1 : 0;
    const int64_t depth = shardOf(l.inputs[0])->extent();
    const RankSplit split = split_;
    edit(replaceConstantInput(
        at, 1, [=](const HostTensor& w) { return rankShare(w, contractionAxisOfB, {depth}, split); }, split.rank));
    std::optional<size_t> biasAdd;
    if (gemm) {
      if (l.hasInput(2) && split.rank != 0)
        edit([=](Network& network, std::set<size_t>&) { network.layers()[at].inputs.resize(2); });
    } else {
      biasAdd = biasAddAfter(l.outputs[0]);
      if (biasAdd) plan_.layers.insert(*biasAdd);
    }
    edit([=](Network& network, std::set<size_t>& erased) {
      Layer& product = network.layers()[at];
      const std::string total = biasAdd ? network.layers()[*biasAdd].outputs[0] : product.outputs[0];
      const std::string partial = uniqueTensorName(network, total + "/partial");
      network.addTensor(partial);
      if (biasAdd && split.rank == 0) {
        network.layers()[*biasAdd].outputs[0] = partial;
      } else {
        product.outputs[0] = partial;
        if (biasAdd) erased.insert(*biasAdd);
      }
      Layer sum;
      sum.name = product.name + "/all_reduce";
      sum.domain = fused::kDomain;
      sum.opType = collective::kAllReduce;
      sum.opsetVersion = 1;
      sum.inputs = {partial};
      sum.outputs = {total};
      sum.attributes[collective::kWorldSize] = int64_t(split.worldSize);
      sum.attributes[collective::kReduction] = std::string("sum");
      sum.origins = product.origins.empty() ? std::vector<std::string>{product.name} : product.origins;
      network.addLayer(std::move(sum));
    });
  }

  // The Add of a constant bias that alone reads a product's result (MatMul + Add: torch's Linear).
  std::optional<size_t> biasAddAfter(const std::string& product) const {
    auto reader = index_.soleConsumer(product);
    if (!reader || !isOp(layer(*reader), "Add")) return std::nullopt;
    const Layer& add = layer(*reader);
    const auto other = otherOperand(add, product);
    const Tensor* in = network_.findTensor(product);
    const Tensor* out = network_.findTensor(add.outputs[0]);
    if (!other || !constantValue(network_, *other) || !in || !out || !sameDeterminedShape(in->shape, out->shape))
      return std::nullopt;
    return *reader;
  }

  const Network& network_;
  const GraphIndex& index_;
  const RankSplit split_;
  std::vector<size_t> position_;                 // layer -> place in topological order
  std::set<std::pair<size_t, size_t>> pending_;  // (place, layer) of readers still to follow
  std::map<std::string, Shard> shards_;
  BlockPlan plan_;
};

}  // namespace

bool isLinear(const Network& network, const Layer& layer) {
  const bool gemm = isOp(layer, "Gemm");
  if (!(gemm || isOp(layer, "MatMul")) || layer.inputs.size() < 2 || !layer.hasOutput(0) || !layer.hasInput(0))
    return false;
  if (gemm && layer.attrInt("transA", 0) != 0) return false;
  const HostTensor* weights = constantValue(network, layer.inputs[1]);
  return weights && weights->rank() == 2 && isFloat(weights->dtype()) && !constantValue(network, layer.inputs[0]);
}

BlockPlan planBlock(const Network& network, const GraphIndex& index, const std::vector<size_t>& order,
                    const std::vector<size_t>& columnProducts, RankSplit split) {
  return Planner(network, index, order, split).plan(columnProducts);
}

void applyPlans(Network& network, const std::vector<BlockPlan>& plans) {
  std::set<size_t> erased;
  for (const BlockPlan& plan : plans)
    for (const Edit& e : plan.edits) e(network, erased);
  eraseLayers(network, erased);
  network.sortLayersTopologically();
}

}  // namespace kiln::tensor_parallel
