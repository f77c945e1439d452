#include "tensor_parallel_shards.h"

#include <kiln/error.h>

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
  // Dims as far as known (-1: not): what planning worked out for the tensors it split (a dynamic
  // export's reshape targets are read at run time, so shape inference may not know them), else
  // shape inference's.
  std::vector<int64_t> dimsOf(size_t at, const std::string& tensor) const {
    if (auto it = dims_.find(tensor); it != dims_.end()) return it->second;
    std::vector<int64_t> dims;
    for (const Dim& d : shapeOf(at, tensor).dims()) dims.push_back(d.isKnown() ? d.value() : -1);
    return dims;
  }
  int64_t dimOf(size_t at, const std::string& tensor, int64_t axis) const { return dimsOf(at, tensor)[size_t(axis)]; }
  // `dims` (an output's) with the unknown ones numpy-broadcast from the inputs' (right-aligned).
  static std::vector<int64_t> broadcast(std::vector<int64_t> dims, const std::vector<std::vector<int64_t>>& inputs) {
    for (const auto& in : inputs)
      for (size_t k = 0; k < in.size() && in.size() <= dims.size(); ++k) {
        int64_t& out = dims[dims.size() - in.size() + k];
        if (out < 0 || (out == 1 && in[k] > 1)) out = in[k];
      }
    return dims;
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
  void shard(size_t at, const std::string& tensor, Shard s, std::vector<int64_t> dims) {
    if (index_.isGraphOutput(tensor))
      fail(at, "writes '" + tensor + "', a graph output, which would hold one rank's share");
    if (index_.isReadBySubgraph(tensor)) fail(at, "writes '" + tensor + "', which a subgraph reads");
    shards_[tensor] = std::move(s);
    dims_[tensor] = std::move(dims);
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
    edit(cutConstantInput(at, 1, outputAxisOfB, groups, split_));
    if (gemm && l.hasInput(2)) {
      const HostTensor* c = constantValue(network_, l.inputs[2]);
      if (!c) fail(at, "adds a bias C that is not a constant");
      if (c->rank() > 0 && c->dims().back() == width && width > 1)
        edit(cutConstantInput(at, 2, c->rank() - 1, groups, split_));
      else if (c->rank() > 0 && c->dims().back() != 1)
        fail(at, "adds a bias C that is not one value per output column");
    }
    std::vector<int64_t> dims = dimsOf(at, l.outputs[0]);
    if (dims.empty() || (dims.back() >= 0 && dims.back() != width))
      fail(at, "writes an output whose last dim is not its width");
    dims.back() = width;
    shard(at, l.outputs[0], {int64_t(dims.size()) - 1, groups}, dims);
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
      edit(cutConstantInput(at, i, size_t(axis), common->groups, split_));
    }
    plan_.nonlinear |= isActivation(l.opType);
    std::vector<std::vector<int64_t>> inputDims;
    for (const std::string& in : l.inputs)
      if (!in.empty()) inputDims.push_back(dimsOf(at, in));
    const std::vector<int64_t> dims = broadcast(dimsOf(at, l.outputs[0]), inputDims);
    for (const std::string& out : l.outputs)
      if (!out.empty()) shard(at, out, *common, dims);
  }

  void transpose(size_t at) {
    const Layer& l = layer(at);
    const Shard s = *shardOf(l.inputs[0]);
    std::vector<int64_t> perm = l.attrInts("perm");
    if (perm.empty())
      for (int64_t d = rankOf(at, l.inputs[0]); d-- > 0;) perm.push_back(d);
    const std::vector<int64_t> in = dimsOf(at, l.inputs[0]);
    std::vector<int64_t> dims;
    for (int64_t p : perm) dims.push_back(p >= 0 && p < int64_t(in.size()) ? in[size_t(p)] : -1);
    for (size_t j = 0; j < perm.size(); ++j)
      if (perm[j] == s.axis) return shard(at, l.outputs[0], {int64_t(j), s.groups}, dims);
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
    const int64_t inputRank = rankOf(at, l.inputs[0]);
    int64_t block = s.extent();  // E·Q
    for (int64_t d = s.axis + 1; d < inputRank; ++d) {
      const int64_t dim = dimOf(at, l.inputs[0], d);
      if (dim < 0) fail(at, "has dims after the split axis that are not known");
      block *= dim;
    }
    std::vector<int64_t> dims = outputDims(at);  // -1: not known
    std::optional<int64_t> axis;
    int64_t after = 1;  // Q'
    for (int64_t b = int64_t(dims.size()); b-- > 0;) {
      // A -1 where the split axis was, the dims before it kept ((*shape[:-1], -1, D)): what is left.
      if (dims[size_t(b)] == kInferred && b == s.axis && block % after == 0) dims[size_t(b)] = block / after;
      const int64_t dim = dims[size_t(b)];
      if (dim < 0 || dim * after > block) break;
      if (dim * after == block) {
        axis = b;
        break;
      }
      after *= dim;
    }
    if (!axis) fail(at, "mixes the split axis with the dims before it (heads folded into the batch?)");
    const int64_t extent = dims[size_t(*axis)];
    Shard out{*axis, {extent}};
    if (s.groups.size() > 1) {
      if (extent != s.extent()) fail(at, "reshapes a packed axis (Q, K and V side by side) before it is split");
      out.groups = s.groups;
    } else {
      require(extent, "the dim '" + l.name + "' makes of the split axis");
    }
    if (isOp(l, "Reshape")) patchReshapeTarget(at, *axis, extent, s.axis == *axis && s.extent() == extent);
    for (int64_t& dim : dims)
      if (dim == kInferred) dim = -1;
    shard(at, l.outputs[0], out, dims);
  }

  static constexpr int64_t kInferred = -2;  // a Reshape target's -1, in outputDims

  // The output's dims where shape inference knows them; a Reshape's unknown ones (its target
  // read at run time) from the target's constant entries: a value, 0 (the input's dim), or -1
  // (kInferred).
  std::vector<int64_t> outputDims(size_t at) const {
    const Layer& l = layer(at);
    const int64_t rank = rankOf(at, l.outputs[0]);
    std::vector<int64_t> dims;
    for (int64_t b = 0; b < rank; ++b) dims.push_back(dimOf(at, l.outputs[0], b));
    const auto pieces = isOp(l, "Reshape") ? targetPieces(network_, index_, l) : std::nullopt;
    if (!pieces) return dims;
    const bool allowZero = l.attrInt("allowzero", 0) != 0;
    const int64_t inputRank = rankOf(at, l.inputs[0]);
    for (int64_t b = 0; b < rank; ++b) {
      const auto entry = entryOf(*pieces, b);
      if (dims[size_t(b)] >= 0 || !entry) continue;
      if (*entry > 0) dims[size_t(b)] = *entry;
      if (*entry == -1) dims[size_t(b)] = kInferred;
      if (*entry == 0 && !allowZero && b < inputRank) dims[size_t(b)] = dimOf(at, l.inputs[0], b);
    }
    return dims;
  }

  // The target's entry `axis` (the split axis, `extent` whole) becomes extent / N. A constant target
  // is patched; a Concat of pieces gets a copy whose constant piece is patched, so long as every
  // piece from the split axis on is constant (the dims after it are the block's own).
  void patchReshapeTarget(size_t at, int64_t axis, int64_t extent, bool inputAxisSame) {
    const Layer& l = layer(at);
    const auto pieces = targetPieces(network_, index_, l);
    if (!pieces) fail(at, "computes its target shape at run time; export the model with static shapes");
    for (size_t k = 0; k < pieces->size(); ++k) {
      const bool last = k + 1 == pieces->size();
      if (!(*pieces)[k].values && (last || (*pieces)[k + 1].offset > axis))
        fail(at, "computes its target shape from the split axis on at run time; export the model with static shapes");
    }
    const auto value = entryOf(*pieces, axis);
    if (!value) fail(at, "has a target shape shorter than its output");
    const bool allowZero = l.attrInt("allowzero", 0) != 0;
    if (*value == -1 || (*value == 0 && !allowZero && inputAxisSame)) return;  // follows the input's share
    if (*value != extent)
      fail(at, "has target dim " + std::to_string(*value) + " where " + std::to_string(extent) + " was expected");
    edit(setTargetEntry(network_, index_, at, axis, extent / split_.worldSize, split_.rank));
  }

  // A Split of the split axis must cut a packed product into its groups: each part is then one of
  // Q, K, V, split alone. A Split of another axis leaves the shares alone.
  void splitLayer(size_t at) {
    const Layer& l = layer(at);
    const Shard s = *shardOf(l.inputs[0]);
    const int64_t axis = axisAttr(at, "axis", 0, rankOf(at, l.inputs[0]));
    std::vector<int64_t> dims = dimsOf(at, l.inputs[0]);
    const auto along = splitSizes(at, dims[size_t(axis)]);
    if (axis != s.axis) {
      for (size_t k = 0; k < l.outputs.size(); ++k) {
        dims[size_t(axis)] = along && k < along->size() ? (*along)[k] : -1;
        if (!l.outputs[k].empty()) shard(at, l.outputs[k], s, dims);
      }
      return;
    }
    const auto sizes = splitSizes(at, s.extent());
    if (s.groups.size() < 2 || !sizes || *sizes != s.groups)
      fail(at, "cuts the split axis into parts other than the packed product's");
    for (size_t k = 0; k < l.outputs.size(); ++k) {
      dims[size_t(axis)] = (*sizes)[k];
      if (!l.outputs[k].empty()) shard(at, l.outputs[k], {axis, {(*sizes)[k]}}, dims);
    }
    if (l.hasInput(1)) {
      edit(divideConstantInput(at, 1, split_));
    } else if (l.hasAttr("split")) {
      std::vector<int64_t> parts = *sizes;
      for (int64_t& part : parts) part /= split_.worldSize;
      edit(setAttribute(at, "split", parts));
    }
  }

  void softmax(size_t at) {
    const Layer& l = layer(at);
    const Shard s = *shardOf(l.inputs[0]);
    const int64_t rank = rankOf(at, l.inputs[0]);
    const bool coerced = l.opsetVersion < 13;  // older opsets flatten to 2-D at the axis
    const int64_t axis = axisAttr(at, "axis", coerced ? 1 : -1, rank);
    if (coerced ? s.axis >= axis : s.axis == axis) fail(at, "normalises along the split axis");
    shard(at, l.outputs[0], s, dimsOf(at, l.inputs[0]));
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
    // The output's dims: the batch dims broadcast, rows from A, columns from B.
    std::vector<int64_t> dims = dimsOf(at, l.outputs[0]);
    const auto da = dimsOf(at, a), db = dimsOf(at, b);
    const std::vector<int64_t> batch = broadcast(std::vector<int64_t>(dims.begin(), dims.end() - 2),
                                                 {{da.begin(), da.end() - 2}, {db.begin(), db.end() - 2}});
    std::copy(batch.begin(), batch.end(), dims.begin());
    if (dims[dims.size() - 2] < 0) dims[dims.size() - 2] = da[da.size() - 2];
    if (dims.back() < 0) dims.back() = db.back();
    shard(at, l.outputs[0], *out, dims);
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
    edit(cutConstantInput(at, 1, contractionAxisOfB, {depth}, split_));
    std::optional<size_t> biasAdd;
    if (!gemm) biasAdd = biasAddAfter(l.outputs[0]);
    if (biasAdd) plan_.layers.insert(*biasAdd);
    if (gemm && l.hasInput(2) && split_.rank != 0) edit(dropInputsFrom(at, 2));
    edit(insertAllReduce(at, biasAdd, split_));
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
  std::map<std::string, std::vector<int64_t>> dims_;  // of the split tensors (whole), as planning knows them
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
