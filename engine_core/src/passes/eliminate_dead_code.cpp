// Dead-code elimination: layers none of whose outputs reach a graph output (directly or through
// other layers, subgraph reads included) are removed. ONNX ops have no side effects, so this is safe.
#include "graph_utils.h"
#include "passes.h"

#include <algorithm>

namespace kiln {
namespace {

class EliminateDeadCodePass final : public Pass {
 public:
  std::string name() const override { return "EliminateDeadCode"; }

 private:
  void apply(Network& network, PassContext& context) override {
    passes::GraphIndex index(network);
    auto order = network.topologicalOrder();
    std::set<size_t> dead;
    // Consumers come before producers in reverse order, so a chain dies in one sweep.
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      const Layer& layer = network.layers()[*it];
      bool live = std::any_of(layer.outputs.begin(), layer.outputs.end(), [&](const std::string& out) {
        if (out.empty()) return false;
        if (index.isGraphOutput(out)) return true;
        const auto& readers = index.consumers(out);
        return std::any_of(readers.begin(), readers.end(), [&](size_t r) { return !dead.count(r); });
      });
      if (live) continue;
      dead.insert(*it);
      context.note("removed unused " + layer.opType + " '" + layer.name + "'");
    }
    passes::eraseLayers(network, dead);
    network.removeUnusedTensors();
  }
};

}  // namespace

std::unique_ptr<Pass> createEliminateDeadCodePass() { return std::make_unique<EliminateDeadCodePass>(); }

}  // namespace kiln
