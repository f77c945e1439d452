#pragma once
// What running subgraph bodies again and again (a Loop body on every iteration, an engine's If on
// every run) can work out once instead of each time.
#include <kiln/network.h>

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace kiln {

// Whether the layer has subgraph attributes (If, Loop, Scan, SequenceMap).
bool hasSubgraphs(const Layer& layer);
// The names the layer's subgraphs read from the graphs around them.
std::vector<std::string> subgraphReferences(const Layer& layer);

// Output types of layers with subgraph bodies. Inferring such a layer copies and re-infers its
// bodies, far more work than running a small body. The result depends only on the layer, its input
// types and the types of the outer values its bodies read (those schemas never look at values),
// so it is remembered under those; a new shape is inferred again. Safe to share between threads.
class SubgraphInferenceCache {
 public:
  using Infer = std::function<std::vector<Tensor>()>;
  // The remembered output types for these input and scope types, else infer()'s, remembered.
  std::vector<Tensor> outputTypes(const Layer& layer, const std::vector<const Tensor*>& inputTypes,
                                  const Network::ScopeLookup& scope, const Infer& infer);

 private:
  struct LayerEntry {
    std::vector<std::string> outerReferences;                   // names its bodies read from outside
    std::map<std::vector<int64_t>, std::vector<Tensor>> byTypes;  // key: encoded input and scope types
  };
  std::mutex mutex_;
  std::unordered_map<const Layer*, LayerEntry> layers_;
};

// A graph's layer order and, for each tensor, the last step (index into order) that reads it,
// directly or from a subgraph; graph outputs live to the end (order.size()).
struct GraphSchedule {
  std::vector<size_t> order;
  std::unordered_map<std::string, size_t> lastUse;
};

// Everything remembered across runs of the subgraphs of one network, which must outlive it (graphs
// and layers are keyed by address). One per execution context or top-level run: not thread-safe.
class SubgraphRunCache {
 public:
  const GraphSchedule& schedule(const Network& graph);
  SubgraphInferenceCache& inference() { return inference_; }

 private:
  std::unordered_map<const Network*, GraphSchedule> schedules_;
  SubgraphInferenceCache inference_;
};

}  // namespace kiln
