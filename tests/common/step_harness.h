#pragma once
// Backend unit tests instantiate and run one step outside an engine. StandaloneStep owns the tensor
// descriptions the step's signature points to (every tensor `dtype`, float32 unless told; input i
// constant where weights[i] is given), works out output dims with the op's shape inference, and
// binds host tensors as the runtime would bind them.
#include "backends/backend.h"

#include <memory>
#include <vector>

namespace kiln::test {

class StandaloneStep {
 public:
  StandaloneStep(const Backend& backend, const Layer& layer, const Tactic& tactic, const LayerWeights& weights,
                 DataType dtype = DataType::kFloat32);

  const Step& step() const { return *step_; }
  // Scratch bytes the step asks for with these inputs.
  uint64_t workspaceBytes(const std::vector<const Value*>& inputs) const;
  // Runs the step on host inputs (nullptr: absent) with a fresh workspace; returns its outputs.
  std::vector<Value> enqueue(const std::vector<const Value*>& inputs, Stream& stream) const;

 private:
  struct Bound {
    std::vector<TensorView> inputs, outputs;
    std::vector<HostTensor> outputMemory;
  };
  Bound bind(const std::vector<const Value*>& inputs) const;

  const Backend& backend_;
  const Layer& layer_;
  std::vector<Tensor> inputTensors_, outputTensors_;
  std::vector<bool> constant_;
  std::unique_ptr<Step> step_;
};

}  // namespace kiln::test
