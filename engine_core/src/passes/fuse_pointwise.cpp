// Trees of elementwise layers whose intermediates have a single reader -> one kiln.Pointwise layer
// holding the tree as its "body" subgraph. A backend can then generate one kernel that reads each
// input once and writes one output, instead of a round trip through memory per op.
#include "../ops/fused.h"
#include "graph_utils.h"
#include "passes.h"

#include <algorithm>
#include <unordered_set>

namespace kiln {
namespace {

using namespace passes;

constexpr size_t kMaxGroupSize = 64;  // keeps generated kernels and their compile time small

bool isElementwise(const Layer& layer) {
  static const std::unordered_set<std::string> ops = {
      "Abs", "Neg", "Exp", "Log", "Sqrt", "Reciprocal", "Relu", "Sigmoid", "Tanh", "Erf", "Sin", "Cos", "Tan",
      "Floor", "Ceil", "Round", "Sign", "Softplus", "Softsign", "HardSigmoid", "HardSwish", "LeakyRelu", "Elu",
      "Selu", "Celu", "Gelu", "Mish", "ThresholdedRelu", "Clip", "Not", "IsNaN", "IsInf", "Cast", "Add", "Sub",
      "Mul", "Div", "Pow", "Max", "Min", "Mod", "PRelu", "Where", "Equal", "Less", "LessOrEqual", "Greater",
      "GreaterOrEqual", "And", "Or", "Xor", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot"};
  return layer.domain.empty() && layer.outputs.size() == 1 && layer.hasOutput(0) && ops.count(layer.opType);
}

// The tree under `root`: producers that are elementwise and read only by a member of the tree.
std::vector<size_t> growGroup(const GraphIndex& index, size_t root, const std::set<size_t>& claimed) {
  std::vector<size_t> group{root};
  for (size_t next = 0; next < group.size() && group.size() < kMaxGroupSize; ++next) {
    for (const auto& in : index.layer(group[next]).inputs) {
      auto producer = in.empty() ? std::nullopt : index.producer(in);
      if (!producer || claimed.count(*producer) || !isElementwise(index.layer(*producer))) continue;
      if (!index.onlyConsumerIs(in, group[next]) || std::count(group.begin(), group.end(), *producer)) continue;
      group.push_back(*producer);
      if (group.size() == kMaxGroupSize) break;
    }
  }
  return group;
}

class FusePointwisePass final : public Pass {
 public:
  std::string name() const override { return "FusePointwise"; }

 private:
  void apply(Network& network, PassContext& context) override {
    GraphIndex index(network);
    Rewriter rewriter(network);
    std::set<size_t> claimed;
    auto order = network.topologicalOrder();
    std::vector<size_t> step(order.size());  // layer index -> position in `order`
    for (size_t s = 0; s < order.size(); ++s) step[order[s]] = s;
    // Readers before producers: the first unclaimed layer met is the root of its tree.
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      if (claimed.count(*it) || !isElementwise(network.layers()[*it])) continue;
      std::vector<size_t> group = growGroup(index, *it, claimed);
      if (group.size() < 2) continue;
      std::sort(group.begin(), group.end(), [&](size_t a, size_t b) { return step[a] < step[b]; });
      Layer fusedLayer = makePointwise(network, index, group);
      if (fusedLayer.inputs.empty() || !context.supports(fusedLayer)) continue;
      claimed.insert(group.begin(), group.end());
      context.note("fused " + describeLayers(network, group) + " into kiln.Pointwise");
      rewriter.replace(group, std::move(fusedLayer));
    }
    rewriter.commit();
  }

  // `group` is in execution order, its root last. The body holds its layers; outside tensors
  // become its inputs, constants are copied in (sharing storage).
  static Layer makePointwise(const Network& network, const GraphIndex& index, const std::vector<size_t>& group) {
    std::set<size_t> members(group.begin(), group.end());
    auto body = std::make_shared<Network>();
    Layer fusedLayer;
    for (size_t i : group) {
      const Layer& layer = index.layer(i);
      for (const auto& in : layer.inputs) {
        if (in.empty() || body->findTensor(in)) continue;
        auto producer = index.producer(in);
        if (producer && members.count(*producer)) continue;
        if (const HostTensor* value = constantValue(network, in)) {
          body->addConstant(in, *value);
          continue;
        }
        const Tensor& outside = network.tensor(in);
        body->addInput(in, outside.dtype, outside.shape);
        fusedLayer.inputs.push_back(in);
      }
      body->addLayer(layer);
    }
    const Layer& root = index.layer(group.back());
    const std::string& output = root.outputs[0];
    body->markOutput(output);
    fusedLayer.name = root.name;
    fusedLayer.domain = fused::kDomain;
    fusedLayer.opType = fused::kPointwise;
    fusedLayer.opsetVersion = 1;
    fusedLayer.outputs = {output};
    fusedLayer.attributes["body"] = Attribute::Graph(std::move(body));
    return fusedLayer;
  }
};

}  // namespace

std::unique_ptr<Pass> createFusePointwisePass() { return std::make_unique<FusePointwisePass>(); }

}  // namespace kiln
