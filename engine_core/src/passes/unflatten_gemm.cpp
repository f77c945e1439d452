// Reshape(x [..., K] -> [M, K]) -> Gemm(·, W, C) -> Reshape(-> [..., N]) -> MatMul(x, W) + C.
// Exporters write a linear layer on a 3-D activation this way (GPT-2's Conv1D: view, addmm, view);
// the Reshape after the Gemm then stands between the product and its epilogue (bias, GELU, the
// residual Add), which FuseMatMulEpilogue could not take in. As a MatMul on x the epilogue fuses.
// Needs transA = 0, alpha = 1, beta = 1, a constant float32 W (transposed here when transB) and a C
// of one value per column.
#include "graph_utils.h"
#include "passes.h"

#include <set>

namespace kiln {
namespace {

using namespace passes;

// The leading dims (all but the last) of a ranked shape.
Shape leading(const Shape& shape) { return Shape(std::vector<Dim>(shape.dims().begin(), shape.dims().end() - 1)); }

struct Match {
  size_t flatten, gemm, unflatten;
  std::string x, output;
  const HostTensor* weights;
  const HostTensor* bias;
  bool transB;
};

std::optional<Match> matchAt(const Network& network, const GraphIndex& index, size_t g) {
  const Layer& gemm = index.layer(g);
  if (!isOp(gemm, "Gemm") || gemm.inputs.size() < 2 || !gemm.hasOutput(0) || gemm.attrInt("transA", 0) != 0 ||
      gemm.attrFloat("alpha", 1.0f) != 1.0f || (gemm.hasInput(2) && gemm.attrFloat("beta", 1.0f) != 1.0f))
    return std::nullopt;
  const auto flatten = index.producer(gemm.inputs[0]);
  const auto unflatten = index.soleConsumer(gemm.outputs[0]);
  if (!flatten || !unflatten || !index.onlyConsumerIs(gemm.inputs[0], g)) return std::nullopt;
  const Layer &in = index.layer(*flatten), &out = index.layer(*unflatten);
  if (!(isOp(in, "Reshape") || isOp(in, "Flatten")) || !isOp(out, "Reshape") || !in.hasInput(0) || !out.hasOutput(0))
    return std::nullopt;
  const Tensor* x = network.findTensor(in.inputs[0]);
  const Tensor* y = network.findTensor(out.outputs[0]);
  const Tensor* a = network.findTensor(gemm.inputs[0]);
  if (!x || !y || !a || x->dtype != DataType::kFloat32 || !x->shape.hasRank() || !y->shape.hasRank() ||
      !a->shape.hasRank() || x->shape.rank() < 2 || y->shape.rank() != x->shape.rank() || a->shape.rank() != 2)
    return std::nullopt;
  const Dim& k = x->shape[x->shape.rank() - 1];
  if (!k.isKnown() || !a->shape[1].isKnown() || a->shape[1].value() != k.value() ||
      !sameDeterminedShape(leading(x->shape), leading(y->shape)))
    return std::nullopt;
  const HostTensor* w = constantValue(network, gemm.inputs[1]);
  const bool transB = gemm.attrInt("transB", 0) != 0;
  if (!w || w->dtype() != DataType::kFloat32 || w->rank() != 2 || w->dim(transB ? 1 : 0) != k.value())
    return std::nullopt;
  const int64_t n = w->dim(transB ? 0 : 1);
  const Dim& yLast = y->shape[y->shape.rank() - 1];
  if (!yLast.isKnown() || yLast.value() != n) return std::nullopt;
  const HostTensor* c = gemm.hasInput(2) ? constantValue(network, gemm.inputs[2]) : nullptr;
  if (gemm.hasInput(2) && (!c || c->dtype() != DataType::kFloat32 || c->elementCount() != n || c->rank() == 0 ||
                           c->dims().back() != n))
    return std::nullopt;
  return Match{*flatten, g, *unflatten, in.inputs[0], out.outputs[0], w, c, transB};
}

HostTensor transposed(const HostTensor& w) {
  const int64_t rows = w.dim(0), cols = w.dim(1);
  HostTensor t(DataType::kFloat32, {cols, rows});
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) t.data<float>()[c * rows + r] = w.data<float>()[r * cols + c];
  return t;
}

class UnflattenGemmPass final : public Pass {
 public:
  std::string name() const override { return "UnflattenGemm"; }

 private:
  void apply(Network& network, PassContext& context) override {
    GraphIndex index(network);
    std::vector<Match> matches;
    std::set<size_t> taken;
    for (size_t i : network.topologicalOrder()) {
      auto m = matchAt(network, index, i);
      if (!m || taken.count(m->flatten) || taken.count(m->unflatten)) continue;
      taken.insert({m->flatten, m->gemm, m->unflatten});
      matches.push_back(*m);
    }
    if (matches.empty()) return;
    std::vector<std::pair<std::vector<size_t>, std::vector<Layer>>> rewrites;
    std::vector<std::pair<std::string, HostTensor>> constants;  // added once nothing reads the network
    for (const Match& m : matches) {
      const Layer& gemm = index.layer(m.gemm);
      const std::vector<size_t> layers{m.flatten, m.gemm, m.unflatten};
      std::vector<Layer> replacement;
      Layer product;
      product.name = gemm.name;
      product.opType = "MatMul";
      product.opsetVersion = 13;
      std::string weights = gemm.inputs[1];
      if (m.transB) {
        weights = uniqueTensorName(network, gemm.name + "/weights_transposed");
        constants.emplace_back(weights, transposed(*m.weights));
      }
      const std::string productOut = m.bias ? uniqueTensorName(network, gemm.outputs[0] + "_unflattened") : m.output;
      product.inputs = {m.x, weights};
      product.outputs = {productOut};
      product.origins = mergedOrigins(network, layers);
      replacement.push_back(std::move(product));
      if (m.bias) {
        Layer add;
        add.name = gemm.name + "/bias";
        add.opType = "Add";
        add.opsetVersion = 14;
        const std::string bias = uniqueTensorName(network, gemm.name + "/bias_row");
        constants.emplace_back(bias, m.bias->reshaped({m.bias->elementCount()}));
        add.inputs = {productOut, bias};
        add.outputs = {m.output};
        add.origins = replacement.front().origins;
        replacement.push_back(std::move(add));
      }
      context.note("made " + describeLayers(network, layers) + " one MatMul on the unflattened input");
      rewrites.emplace_back(layers, std::move(replacement));
    }
    for (auto& [name, value] : constants) network.addConstant(name, std::move(value));
    std::set<size_t> removed;
    for (auto& [layers, replacement] : rewrites) {
      removed.insert(layers.begin(), layers.end());
      for (Layer& layer : replacement) {
        for (const std::string& out : layer.outputs) network.addTensor(out);
        network.addLayer(std::move(layer));
      }
    }
    eraseLayers(network, removed);
    network.sortLayersTopologically();
  }
};

}  // namespace

std::unique_ptr<Pass> createUnflattenGemmPass() { return std::make_unique<UnflattenGemmPass>(); }

}  // namespace kiln
