// Recognises GELU written out op by op and replaces it with Gelu (opset 20):
//   erf form:  x * 0.5 * (1 + Erf(x / sqrt(2)))                                  approximate = none
//   tanh form: x * 0.5 * (1 + Tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))           approximate = tanh
// The products may come in any of the orders exporters use: ((x * a) * 0.5), (x * (a * 0.5)),
// ((x * 0.5) * a), with a = 1 + Erf(...) or 1 + Tanh(...).
#include "graph_utils.h"
#include "passes.h"

namespace kiln {
namespace {

using namespace passes;

struct GeluMatch {
  std::vector<size_t> layers;
  std::string input, output;
};

// For a `opType` layer with one operand a scalar constant close to `value`, the other operand.
std::optional<std::string> operandBesides(const Network& network, const Layer& layer, const char* opType,
                                          double value) {
  if (!isOp(layer, opType) || layer.inputs.size() != 2) return std::nullopt;
  for (int c = 0; c < 2; ++c)
    if (isScalarConstant(network, layer.inputs[c], value)) {
      if (std::string(opType) == "Div" && c == 0) return std::nullopt;  // c / x is not x / c
      return layer.inputs[1 - c];
    }
  return std::nullopt;
}

// `tensor` made by a layer that only feeds `reader`; that layer's index.
std::optional<size_t> privateProducer(const GraphIndex& index, const std::string& tensor, size_t reader) {
  auto producer = index.producer(tensor);
  if (!producer || !index.onlyConsumerIs(tensor, reader)) return std::nullopt;
  return producer;
}

// Erf's argument x / sqrt(2) (or x * 1/sqrt(2)): x and the scaling layer.
std::optional<std::string> matchErfHead(const Network& network, const GraphIndex& index, size_t erf,
                                        std::vector<size_t>& layers) {
  auto scaling = privateProducer(index, index.layer(erf).inputs[0], erf);
  if (!scaling) return std::nullopt;
  const Layer& s = index.layer(*scaling);
  auto x = operandBesides(network, s, "Div", 1.41421356);
  if (!x) x = operandBesides(network, s, "Mul", 0.70710678);
  if (x) layers.push_back(*scaling);
  return x;
}

// x^3 as Pow(x, 3) or x * (x * x) in either order: true when `cube` computes it from x.
bool isCubeOf(const Network& network, const GraphIndex& index, size_t cube, const std::string& x,
              std::vector<size_t>& layers) {
  const Layer& c = index.layer(cube);
  if (isOp(c, "Pow")) return c.inputs[0] == x && isScalarConstant(network, c.inputs[1], 3.0);
  auto square = isOp(c, "Mul") ? otherOperand(c, x) : std::nullopt;
  auto squareLayer = square ? privateProducer(index, *square, cube) : std::nullopt;
  if (!squareLayer) return false;
  const Layer& sq = index.layer(*squareLayer);
  if (!isOp(sq, "Mul") || sq.inputs != std::vector<std::string>{x, x}) return false;
  layers.push_back(*squareLayer);
  return true;
}

// Tanh's argument sqrt(2/pi) * (x + 0.044715 * x^3).
std::optional<std::string> matchTanhHead(const Network& network, const GraphIndex& index, size_t tanh,
                                         std::vector<size_t>& layers) {
  auto scaling = privateProducer(index, index.layer(tanh).inputs[0], tanh);
  auto inner = scaling ? operandBesides(network, index.layer(*scaling), "Mul", 0.7978845608) : std::nullopt;
  auto sum = inner ? privateProducer(index, *inner, *scaling) : std::nullopt;
  if (!sum || !isOp(index.layer(*sum), "Add")) return std::nullopt;
  for (int xAt = 0; xAt < 2; ++xAt) {
    const std::string& x = index.layer(*sum).inputs[xAt];
    auto scaledCube = privateProducer(index, index.layer(*sum).inputs[1 - xAt], *sum);
    auto cubeTensor = scaledCube ? operandBesides(network, index.layer(*scaledCube), "Mul", 0.044715) : std::nullopt;
    auto cube = cubeTensor ? privateProducer(index, *cubeTensor, *scaledCube) : std::nullopt;
    std::vector<size_t> found{*scaling, *sum};
    if (!cube || !isCubeOf(network, index, *cube, x, found)) continue;
    found.insert(found.end(), {*scaledCube, *cube});
    layers.insert(layers.end(), found.begin(), found.end());
    return x;
  }
  return std::nullopt;
}

// From `a` = 1 + Erf/Tanh(...) to the final product with x and 0.5.
std::optional<std::string> matchTail(const Network& network, const GraphIndex& index, const std::string& a,
                                     const std::string& x, std::vector<size_t>& layers) {
  auto first = index.soleConsumer(a);
  if (!first || !isOp(index.layer(*first), "Mul")) return std::nullopt;
  const Layer& mul = index.layer(*first);
  auto other = otherOperand(mul, a);
  if (!other) return std::nullopt;
  auto finish = [&](size_t last) {
    layers.push_back(*first);
    layers.push_back(last);
    return index.layer(last).outputs[0];
  };
  if (other == x) {  // (x * a) * 0.5
    auto half = index.soleConsumer(mul.outputs[0]);
    if (half && operandBesides(network, index.layer(*half), "Mul", 0.5) == mul.outputs[0]) return finish(*half);
  } else if (isScalarConstant(network, *other, 0.5)) {  // x * (a * 0.5)
    auto last = index.soleConsumer(mul.outputs[0]);
    if (last && isOp(index.layer(*last), "Mul") && otherOperand(index.layer(*last), mul.outputs[0]) == x)
      return finish(*last);
  } else if (auto half = privateProducer(index, *other, *first)) {  // (x * 0.5) * a
    if (operandBesides(network, index.layer(*half), "Mul", 0.5) == x) {
      layers.push_back(*half);
      layers.push_back(*first);
      return mul.outputs[0];
    }
  }
  return std::nullopt;
}

std::optional<GeluMatch> matchGelu(const Network& network, const GraphIndex& index, size_t anchor, bool tanhForm) {
  GeluMatch m;
  auto x = tanhForm ? matchTanhHead(network, index, anchor, m.layers) : matchErfHead(network, index, anchor, m.layers);
  const Tensor* input = x ? network.findTensor(*x) : nullptr;
  if (!input || !isFloatingPoint(input->dtype)) return std::nullopt;
  m.layers.push_back(anchor);
  auto plusOne = index.soleConsumer(index.layer(anchor).outputs[0]);
  if (!plusOne || operandBesides(network, index.layer(*plusOne), "Add", 1.0) != index.layer(anchor).outputs[0])
    return std::nullopt;
  m.layers.push_back(*plusOne);
  auto output = matchTail(network, index, index.layer(*plusOne).outputs[0], *x, m.layers);
  if (!output) return std::nullopt;
  m.input = *x;
  m.output = *output;
  return m;
}

class RecognizeGeluPass final : public Pass {
 public:
  std::string name() const override { return "RecognizeGelu"; }

 private:
  void apply(Network& network, PassContext& context) override {
    GraphIndex index(network);
    Rewriter rewriter(network);
    for (size_t i : network.topologicalOrder()) {
      const Layer& layer = network.layers()[i];
      bool tanhForm = isOp(layer, "Tanh");
      if (!(tanhForm || isOp(layer, "Erf")) || !layer.hasInput(0) || !layer.hasOutput(0)) continue;
      auto m = matchGelu(network, index, i, tanhForm);
      if (!m || rewriter.claimed(m->layers)) continue;
      Layer gelu;
      gelu.name = index.layer(m->layers.back()).name;
      gelu.opType = "Gelu";
      gelu.opsetVersion = 20;
      gelu.attributes["approximate"] = std::string(tanhForm ? "tanh" : "none");
      gelu.inputs = {m->input};
      gelu.outputs = {m->output};
      if (!context.supports(gelu)) continue;
      context.note("recognized Gelu (" + std::string(tanhForm ? "tanh" : "erf") + " form) in " +
                   describeLayers(network, m->layers));
      rewriter.replace(m->layers, std::move(gelu));
    }
    rewriter.commit();
  }
};

}  // namespace

std::unique_ptr<Pass> createRecognizeGeluPass() { return std::make_unique<RecognizeGeluPass>(); }

}  // namespace kiln
