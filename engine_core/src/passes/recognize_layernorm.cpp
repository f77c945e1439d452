// Recognises the LayerNorm that exporters write out op by op,
//   m = ReduceMean(x); d = x - m; v = ReduceMean(d^2 or d*d); n = d / Sqrt(v + eps)  (or d * 1/Sqrt)
//   y = n * gamma + beta                                       (gamma and beta optional)
// over trailing axes, and replaces it with one LayerNormalization (opset 17 semantics).
#include "graph_utils.h"
#include "passes.h"

#include <algorithm>

namespace kiln {
namespace {

using namespace passes;

// The trailing axes a keepdims ReduceMean reduces (as a count), or nullopt.
std::optional<int64_t> trailingReduceCount(const Network& network, const Layer& reduce, size_t rank) {
  if (!isOp(reduce, "ReduceMean") || reduce.attrInt("keepdims", 1) != 1) return std::nullopt;
  std::vector<int64_t> axes;
  if (reduce.opsetVersion >= 18) {
    auto values = reduce.hasInput(1) ? constantInts(network, reduce.inputs[1]) : std::nullopt;
    if (!values) return std::nullopt;
    axes = *values;
  } else {
    axes = reduce.attrInts("axes");
  }
  if (axes.empty()) return std::nullopt;
  std::set<int64_t> normalized;
  for (int64_t a : axes) normalized.insert(a < 0 ? a + int64_t(rank) : a);
  int64_t count = int64_t(normalized.size());
  if (*normalized.begin() != int64_t(rank) - count || *normalized.rbegin() != int64_t(rank) - 1) return std::nullopt;
  return count;
}

struct LayerNormMatch {
  std::vector<size_t> layers;
  std::string input, output, gamma, beta;
  int64_t axes = 0;
  double epsilon = 0;
};

// Follows `tensor` to its sole reader when that is a `opType` layer; returns the reader's index.
std::optional<size_t> soleReaderOfType(const GraphIndex& index, const std::string& tensor, const char* opType) {
  auto reader = index.soleConsumer(tensor);
  if (!reader || !isOp(index.layer(*reader), opType)) return std::nullopt;
  return reader;
}

std::optional<LayerNormMatch> matchLayerNorm(const Network& network, const GraphIndex& index, size_t first) {
  const Layer& mean = index.layer(first);
  const Tensor* x = mean.hasInput(0) ? network.findTensor(mean.inputs[0]) : nullptr;
  if (!x || x->dtype != DataType::kFloat32 || !x->shape.hasRank()) return std::nullopt;
  LayerNormMatch m;
  m.input = x->name;
  auto axes = trailingReduceCount(network, mean, x->shape.rank());
  auto sub = soleReaderOfType(index, mean.outputs[0], "Sub");
  if (!axes || !sub || index.layer(*sub).inputs != std::vector<std::string>{m.input, mean.outputs[0]})
    return std::nullopt;
  m.axes = *axes;
  const std::string& centered = index.layer(*sub).outputs[0];
  // `centered` feeds the square and the division, nothing else.
  const auto& readers = index.consumers(centered);
  if (readers.size() != 2 || index.isGraphOutput(centered) || index.isReadBySubgraph(centered)) return std::nullopt;
  for (int squareAt = 0; squareAt < 2; ++squareAt) {
    const Layer& square = index.layer(readers[squareAt]);
    bool isSquare = (isOp(square, "Pow") && square.inputs[0] == centered && isScalarConstant(network, square.inputs[1], 2.0)) ||
                    (isOp(square, "Mul") && square.inputs.size() == 2 && square.inputs[0] == centered &&
                     square.inputs[1] == centered);
    if (!isSquare) continue;
    auto variance = soleReaderOfType(index, square.outputs[0], "ReduceMean");
    if (!variance || trailingReduceCount(network, index.layer(*variance), x->shape.rank()) != axes) return std::nullopt;
    auto addEps = soleReaderOfType(index, index.layer(*variance).outputs[0], "Add");
    if (!addEps) return std::nullopt;
    auto eps = otherOperand(index.layer(*addEps), index.layer(*variance).outputs[0]);
    auto epsValue = eps ? scalarConstant(network, *eps) : std::nullopt;
    auto sqrt = soleReaderOfType(index, index.layer(*addEps).outputs[0], "Sqrt");
    if (!epsValue || !sqrt) return std::nullopt;
    m.epsilon = *epsValue;
    m.layers = {first, *sub, readers[squareAt], *variance, *addEps, *sqrt};
    // d / sd, or d * Reciprocal(sd); that layer must be centered's other reader.
    const std::string& deviation = index.layer(*sqrt).outputs[0];
    size_t divide = readers[1 - squareAt];
    const Layer& div = index.layer(divide);
    if (auto recip = soleReaderOfType(index, deviation, "Reciprocal")) {
      if (!isOp(div, "Mul") || otherOperand(div, centered) != index.layer(*recip).outputs[0] ||
          !index.onlyConsumerIs(index.layer(*recip).outputs[0], divide))
        return std::nullopt;
      m.layers.push_back(*recip);
    } else if (!isOp(div, "Div") || div.inputs != std::vector<std::string>{centered, deviation} ||
               !index.onlyConsumerIs(deviation, divide)) {
      return std::nullopt;
    }
    m.layers.push_back(divide);
    m.output = div.outputs[0];
    // Optional affine tail with constant gamma, then beta (beta alone is not the exporters' form).
    for (auto [op, slot] : {std::pair{"Mul", &m.gamma}, std::pair{"Add", &m.beta}}) {
      auto next = soleReaderOfType(index, m.output, op);
      auto param = next ? otherOperand(index.layer(*next), m.output) : std::nullopt;
      const HostTensor* value = param ? constantValue(network, *param) : nullptr;
      if (!value || value->dtype() != DataType::kFloat32) break;
      *slot = *param;
      m.layers.push_back(*next);
      m.output = index.layer(*next).outputs[0];
    }
    return m;
  }
  return std::nullopt;
}

// `name`'s constant as a tensor of exactly `dims` (reshaped copy when needed), or `fill` when absent.
std::optional<std::string> paramOfShape(Network& network, const std::string& name, const std::vector<int64_t>& dims,
                                        float fill, const std::string& newName) {
  if (!name.empty()) {
    const HostTensor& value = *constantValue(network, name);
    if (value.elementCount() != elementCount(dims)) return std::nullopt;
    if (value.dims() == dims) return name;
    std::string reshaped = uniqueTensorName(network, newName);
    network.addConstant(reshaped, value.reshaped(dims));
    return reshaped;
  }
  std::string created = uniqueTensorName(network, newName);
  network.addConstant(created, HostTensor::fromVector<float>(dims, std::vector<float>(size_t(elementCount(dims)), fill)));
  return created;
}

class RecognizeLayerNormPass final : public Pass {
 public:
  std::string name() const override { return "RecognizeLayerNorm"; }

 private:
  void apply(Network& network, PassContext& context) override {
    GraphIndex index(network);
    Rewriter rewriter(network);
    for (size_t i : network.topologicalOrder()) {
      if (!isOp(network.layers()[i], "ReduceMean")) continue;
      auto m = matchLayerNorm(network, index, i);
      if (!m || rewriter.claimed(m->layers)) continue;
      const Shape& shape = network.tensor(m->input).shape;
      std::vector<int64_t> normalized;
      for (size_t d = shape.rank() - size_t(m->axes); d < shape.rank(); ++d) normalized.push_back(shape[d].value());
      if (std::any_of(normalized.begin(), normalized.end(), [](int64_t d) { return d < 0; })) continue;

      Layer norm;
      norm.name = index.layer(m->layers.back()).name;
      norm.opType = "LayerNormalization";
      norm.opsetVersion = 17;
      norm.attributes["axis"] = -m->axes;
      norm.attributes["epsilon"] = float(m->epsilon);
      norm.inputs = {m->input, "", ""};
      norm.outputs = {m->output};
      if (!context.supports(norm)) continue;
      auto gamma = paramOfShape(network, m->gamma, normalized, 1.0f, norm.name + "_scale");
      auto beta = m->beta.empty() ? std::optional<std::string>("")
                                  : paramOfShape(network, m->beta, normalized, 0.0f, norm.name + "_bias");
      if (!gamma || !beta) continue;
      norm.inputs = {m->input, *gamma, *beta};
      if (beta->empty()) norm.inputs.pop_back();
      context.note("recognized LayerNormalization in " + describeLayers(network, m->layers));
      rewriter.replace(m->layers, std::move(norm));
    }
    rewriter.commit();
  }
};

}  // namespace

std::unique_ptr<Pass> createRecognizeLayerNormPass() { return std::make_unique<RecognizeLayerNormPass>(); }

}  // namespace kiln
