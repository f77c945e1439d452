// Scaled dot-product attention written out by exporters,
//   s = MatMul(Q, Kt); s = s * c (or s / c); s = s + mask; p = Softmax(s, last axis); y = MatMul(p, V)
// or with Q and Kt each scaled by a constant before the product, and p guarded by
// Where(IsNaN(p), 0, p) (PyTorch's SDPA export).
// -> one kiln.Attention, which never materialises the scores of more than one batch-head at a time.
// A Transpose swapping K's last two dims in front of the first MatMul is absorbed (k_transposed = 0),
// and so are the Transposes that move heads between [B, L, H, D] and [B, H, L, D] around Q, K, V
// and the output (the *_interleaved attributes): the fused kernels read and write those layouts
// through strides, so the copies go.
#include "../ops/fused.h"
#include "graph_utils.h"
#include "passes.h"

#include <algorithm>
#include <tuple>

namespace kiln {
namespace {

using namespace passes;

struct AttentionMatch {
  std::vector<size_t> layers;
  std::string q, k, v, mask, output;
  float scale = 1.0f;
  bool kTransposed = true;
  size_t qReader = 0, kReader = 0, vReader = 0;  // the matched layers that read q, k and v
  bool interleaved[4] = {};                       // Q, K, V, output: see fused::kAttentionInterleaved
};

const Tensor* float32Tensor(const Network& network, const std::string& name) {
  const Tensor* t = name.empty() ? nullptr : network.findTensor(name);
  return t && t->dtype == DataType::kFloat32 && t->shape.hasRank() ? t : nullptr;
}

bool softmaxOverLastAxis(const Network& network, const Layer& softmax) {
  const Tensor* in = float32Tensor(network, softmax.inputs[0]);
  if (!in) return false;
  int64_t rank = int64_t(in->shape.rank());
  int64_t axis = softmax.attrInt("axis", softmax.opsetVersion >= 13 ? -1 : 1);
  return (axis < 0 ? axis + rank : axis) == rank - 1;
}

// Whether `perm` swaps the last two dims and keeps the others.
bool swapsLastTwo(const std::vector<int64_t>& perm) {
  size_t n = perm.size();
  if (n < 2 || perm[n - 1] != int64_t(n) - 2 || perm[n - 2] != int64_t(n) - 1) return false;
  for (size_t i = 0; i + 2 < n; ++i)
    if (perm[i] != int64_t(i)) return false;
  return true;
}

// Walks back from the Softmax's input through the optional mask Add and scaling to the scores MatMul.
bool matchScores(const Network& network, const GraphIndex& index, size_t softmax, AttentionMatch& m) {
  std::string scores = index.layer(softmax).inputs[0];
  size_t reader = softmax;
  auto step = [&](size_t layer, const std::string& next) {
    m.layers.push_back(layer);
    reader = layer;
    scores = next;
  };
  auto producer = index.producer(scores);
  if (producer && index.onlyConsumerIs(scores, reader) && isOp(index.layer(*producer), "Add")) {
    const Layer& add = index.layer(*producer);
    for (int at = 0; at < 2; ++at) {  // the scores side is the one made by the scaling or the MatMul
      auto from = index.producer(add.inputs[at]);
      if (!from || !(isOp(index.layer(*from), "Mul") || isOp(index.layer(*from), "Div") ||
                     isOp(index.layer(*from), "MatMul")))
        continue;
      m.mask = add.inputs[1 - at];
      step(*producer, add.inputs[at]);
      break;
    }
    if (m.mask.empty() || !float32Tensor(network, m.mask)) return false;
  }
  producer = index.producer(scores);
  if (producer && index.onlyConsumerIs(scores, reader) &&
      (isOp(index.layer(*producer), "Mul") || isOp(index.layer(*producer), "Div"))) {
    const Layer& scaling = index.layer(*producer);
    bool divide = scaling.opType == "Div";
    int constantAt = scalarConstant(network, scaling.inputs[1]) ? 1 : (!divide && scalarConstant(network, scaling.inputs[0]) ? 0 : -1);
    if (constantAt < 0) return false;
    double c = *scalarConstant(network, scaling.inputs[size_t(constantAt)]);
    if (divide && c == 0) return false;
    m.scale = float(divide ? 1.0 / c : c);
    step(*producer, scaling.inputs[size_t(1 - constantAt)]);
  }
  producer = index.producer(scores);
  if (!producer || !index.onlyConsumerIs(scores, reader) || !isOp(index.layer(*producer), "MatMul")) return false;
  const Layer& qk = index.layer(*producer);
  const size_t qkAt = *producer;
  m.layers.push_back(qkAt);
  m.q = qk.inputs[0];
  m.k = qk.inputs[1];
  m.qReader = m.kReader = qkAt;  // the layers reading Q and K: the MatMul, or their scaling
  // PyTorch's exported scaled_dot_product_attention scales Q and Kᵀ by √scale each before the product.
  for (std::string* operand : {&m.q, &m.k}) {
    const Layer* mul = index.producerOfType(*operand, "Mul");
    if (!mul || !index.onlyConsumerIs(*operand, qkAt)) continue;
    const int constantAt = scalarConstant(network, mul->inputs[1]) ? 1 : scalarConstant(network, mul->inputs[0]) ? 0 : -1;
    if (constantAt < 0) continue;
    m.scale *= float(*scalarConstant(network, mul->inputs[size_t(constantAt)]));
    m.layers.push_back(index.indexOf(*mul));
    (operand == &m.k ? m.kReader : m.qReader) = index.indexOf(*mul);
    *operand = mul->inputs[size_t(1 - constantAt)];
  }
  if (const Layer* transpose = index.producerOfType(m.k, "Transpose");
      transpose && index.onlyConsumerIs(m.k, m.kReader) && swapsLastTwo(transpose->attrInts("perm"))) {
    m.layers.push_back(index.indexOf(*transpose));
    m.kReader = index.indexOf(*transpose);
    m.k = transpose->inputs[0];
    m.kTransposed = false;
  }
  return true;
}

// Whether `perm` swaps dims rank-3 and rank-2 (rows and the last batch dim) and keeps the others.
bool swapsRowsAndHeads(const std::vector<int64_t>& perm) {
  const size_t n = perm.size();
  if (n < 3) return false;
  for (size_t i = 0; i < n; ++i)
    if (perm[i] != int64_t(i == n - 3 ? n - 2 : i == n - 2 ? n - 3 : i)) return false;
  return true;
}

// Whether `perm` makes [..., L, H, D] into [..., H, D, L]: K interleaved, read transposed.
bool interleavedToTransposed(const std::vector<int64_t>& perm) {
  const size_t n = perm.size();
  if (n < 3) return false;
  for (size_t i = 0; i + 3 < n; ++i)
    if (perm[i] != int64_t(i)) return false;
  return perm[n - 3] == int64_t(n - 2) && perm[n - 2] == int64_t(n - 1) && perm[n - 1] == int64_t(n - 3);
}

// Takes in the Transposes that only re-lay heads: in front of Q, K and V, and after the output.
void absorbInterleaving(const GraphIndex& index, AttentionMatch& m) {
  auto peel = [&](std::string& operand, size_t reader, size_t which) {
    const Layer* transpose = index.producerOfType(operand, "Transpose");
    if (!transpose || !index.onlyConsumerIs(operand, reader)) return;
    const std::vector<int64_t> perm = transpose->attrInts("perm");
    const bool andTransposed = which == 1 && m.kTransposed && interleavedToTransposed(perm);
    if (!swapsRowsAndHeads(perm) && !andTransposed) return;
    m.layers.push_back(index.indexOf(*transpose));
    operand = transpose->inputs[0];
    m.interleaved[which] = true;
    if (andTransposed) m.kTransposed = false;
  };
  peel(m.q, m.qReader, 0);
  peel(m.k, m.kReader, 1);
  peel(m.v, m.vReader, 2);
  if (index.isGraphOutput(m.output)) return;
  const auto reader = index.soleConsumer(m.output);
  if (!reader || !isOp(index.layer(*reader), "Transpose") || !index.layer(*reader).hasOutput(0) ||
      !swapsRowsAndHeads(index.layer(*reader).attrInts("perm")))
    return;
  m.layers.push_back(*reader);
  m.output = index.layer(*reader).outputs[0];
  m.interleaved[fused::kAttentionOutput] = true;
}

// Q, K and V of one rank with the same determined batch dims, and a mask no bigger than the scores.
bool shapesFit(const Network& network, const AttentionMatch& m) {
  const Tensor *q = float32Tensor(network, m.q), *k = float32Tensor(network, m.k), *v = float32Tensor(network, m.v);
  if (!q || !k || !v) return false;
  size_t rank = q->shape.rank();
  if (rank < 2 || k->shape.rank() != rank || v->shape.rank() != rank) return false;
  auto batch = [&](const Tensor& t, size_t which) {  // the batch dims attention computes on
    std::vector<Dim> dims = m.interleaved[which] ? fused::swapRowsAndHeads(t.shape.dims()) : t.shape.dims();
    return Shape(std::vector<Dim>(dims.begin(), dims.end() - 2));
  };
  if (!sameDeterminedShape(batch(*q, 0), batch(*k, 1)) || !sameDeterminedShape(batch(*q, 0), batch(*v, 2)))
    return false;
  if (m.mask.empty()) return true;
  const Tensor* mask = float32Tensor(network, m.mask);
  return mask && mask->shape.rank() <= rank;
}

// PyTorch's SDPA export zeroes the rows a mask removed entirely: Where(IsNaN(p), 0, p). kiln.Attention
// gives zeros there too, so the guard is part of the match: its layers, and the tensor it makes.
std::optional<std::pair<std::vector<size_t>, std::string>> nanGuard(const Network& network, const GraphIndex& index,
                                                                   const std::string& p) {
  const auto& readers = index.consumers(p);
  if (readers.size() != 2) return std::nullopt;
  for (int first = 0; first < 2; ++first) {
    const size_t isNan = readers[size_t(first)], where = readers[size_t(1 - first)];
    const Layer &n = index.layer(isNan), &w = index.layer(where);
    if (!isOp(n, "IsNaN") || !isOp(w, "Where") || !n.hasOutput(0) || w.inputs.size() != 3 || !w.hasOutput(0)) continue;
    const auto zero = scalarConstant(network, w.inputs[1]);
    if (w.inputs[0] != n.outputs[0] || w.inputs[2] != p || !zero || *zero != 0.0 || !index.onlyConsumerIs(n.outputs[0], where))
      continue;
    return std::make_pair(std::vector<size_t>{where, isNan}, w.outputs[0]);
  }
  return std::nullopt;
}

std::optional<AttentionMatch> matchAttention(const Network& network, const GraphIndex& index, size_t softmax) {
  const Layer& sm = index.layer(softmax);
  if (!sm.hasInput(0) || !sm.hasOutput(0) || !softmaxOverLastAxis(network, sm)) return std::nullopt;
  std::string probabilities = sm.outputs[0];
  std::vector<size_t> guard;
  if (auto g = nanGuard(network, index, probabilities)) std::tie(guard, probabilities) = *g;
  auto pv = index.soleConsumer(probabilities);
  if (!pv || !isOp(index.layer(*pv), "MatMul") || index.layer(*pv).inputs[0] != probabilities) return std::nullopt;
  AttentionMatch m;
  m.layers = {*pv};
  m.layers.insert(m.layers.end(), guard.begin(), guard.end());
  m.layers.push_back(softmax);
  m.v = index.layer(*pv).inputs[1];
  m.vReader = *pv;
  m.output = index.layer(*pv).outputs[0];
  if (!matchScores(network, index, softmax, m)) return std::nullopt;
  absorbInterleaving(index, m);
  if (!shapesFit(network, m)) return std::nullopt;
  return m;
}

// A constant additive mask of zeros masks nothing: Hugging Face's exports without an attention_mask
// input fold theirs to one ([1, 1, L, L] at BERT's L). The layer then reads no mask, so kernels
// skip a load per score and libraries that take no additive mask (cuDNN's SDPA op) take it.
bool masksNothing(const Network& network, const std::string& mask) {
  const Tensor* t = network.findTensor(mask);
  if (!t || !t->isConstant()) return false;
  const std::vector<double> values = t->constant->toDoubleVector();
  return std::all_of(values.begin(), values.end(), [](double v) { return v == 0.0; });
}

class FuseAttentionPass final : public Pass {
 public:
  std::string name() const override { return "FuseAttention"; }

 private:
  void apply(Network& network, PassContext& context) override {
    GraphIndex index(network);
    Rewriter rewriter(network);
    for (size_t i : network.topologicalOrder()) {
      if (!isOp(network.layers()[i], "Softmax")) continue;
      auto m = matchAttention(network, index, i);
      if (!m || rewriter.claimed(m->layers)) continue;
      if (!m->mask.empty() && masksNothing(network, m->mask)) m->mask.clear();
      Layer attention;
      attention.name = index.layer(m->layers.front()).name;
      attention.domain = fused::kDomain;
      attention.opType = fused::kAttention;
      attention.opsetVersion = 1;
      attention.attributes["scale"] = m->scale;
      attention.attributes["has_mask"] = int64_t(m->mask.empty() ? 0 : 1);
      attention.attributes["k_transposed"] = int64_t(m->kTransposed ? 1 : 0);
      for (size_t t = 0; t < 4; ++t)
        if (m->interleaved[t]) attention.attributes[fused::kAttentionInterleaved[t]] = int64_t(1);
      attention.inputs = {m->q, m->k, m->v};
      if (!m->mask.empty()) attention.inputs.push_back(m->mask);
      attention.outputs = {m->output};
      if (!context.supports(attention)) continue;
      std::vector<size_t> inOrder = m->layers;
      std::sort(inOrder.begin(), inOrder.end());
      context.note("fused " + describeLayers(network, inOrder) + " into kiln.Attention");
      rewriter.replace(inOrder, std::move(attention));
    }
    rewriter.commit();
  }
};

}  // namespace

std::unique_ptr<Pass> createFuseAttentionPass() { return std::make_unique<FuseAttentionPass>(); }

}  // namespace kiln
