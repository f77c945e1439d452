#pragma once
// Runs a Network layer by layer on the CPU reference kernels. This is the ground truth every other
// backend is compared with, and what `kiln run MODEL` uses.
#include <kiln/host_tensor.h>
#include <kiln/network.h>

#include <functional>
#include <map>
#include <memory>
#include <string>

namespace kiln {

using ValueMap = std::map<std::string, Value>;

struct ReferenceExecutorOptions {
  // Called after each layer with its outputs (for per-layer comparison and profiling).
  std::function<void(const Layer&, const std::vector<Value>& outputs, double milliseconds)> afterLayer;
};

class ReferenceExecutor {
 public:
  explicit ReferenceExecutor(std::shared_ptr<const Network> network, ReferenceExecutorOptions options = {});

  // Checks every runtime input is given with the declared dtype and a shape compatible with the
  // declared one, then runs. Throws kiln::Error naming the input, dimension or layer on failure.
  ValueMap run(const ValueMap& inputs) const;

  const Network& network() const { return *network_; }

 private:
  std::shared_ptr<const Network> network_;
  ReferenceExecutorOptions options_;
};

// Runs `graph` (possibly a subgraph) with `inputs` bound to its inputs in order; `outer` resolves
// names from enclosing graphs. Used by the executor and by control-flow kernels.
std::vector<Value> executeGraph(const Network& graph, const std::vector<Value>& inputs,
                                const std::function<const Value*(const std::string&)>& outer,
                                const ReferenceExecutorOptions& options = {});

}  // namespace kiln
