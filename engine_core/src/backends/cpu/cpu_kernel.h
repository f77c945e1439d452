#pragma once
// CPU kernels: the reference implementation of every supported op. A kernel reads its inputs from a
// KernelContext, allocates outputs with the shapes the op schema inferred, and computes them
// (numeric work goes to kernels/cpu/<family>/).
#include <kiln/error.h>
#include <kiln/network.h>

#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

namespace kiln {

class KernelContext {
 public:
  using SubgraphRunner =
      std::function<std::vector<Value>(const Network&, const std::vector<Value>&)>;

  KernelContext(const Layer& layer, std::vector<const Value*> inputs, std::vector<Tensor> inferred,
                SubgraphRunner subgraphRunner);

  const Layer& layer() const { return layer_; }
  int64_t opset() const { return layer_.opsetVersion; }
  size_t inputCount() const { return inputs_.size(); }
  size_t outputCount() const { return layer_.outputs.size(); }
  bool hasInput(size_t i) const { return i < inputs_.size() && inputs_[i] != nullptr; }
  bool hasOutput(size_t i) const { return layer_.hasOutput(i); }
  const HostTensor& input(size_t i) const;  // throws naming the layer when absent or not a tensor
  const Value& inputValue(size_t i) const;
  // Type and shape the schema inferred for output i (shape may hold unknown dims when it depends on
  // data the kernel computes, e.g. NonZero).
  const Tensor& inferredOutput(size_t i) const { return inferred_.at(i); }

  // Allocates output i with the inferred dtype and (fully known) shape.
  HostTensor& allocateOutput(size_t i);
  HostTensor& allocateOutput(size_t i, DataType dtype, std::vector<int64_t> dims);
  void setOutput(size_t i, HostTensor tensor);  // e.g. a reshaped view of an input
  void setOutputValue(size_t i, Value value);
  // Where allocateOutput takes memory from (the engine's activation arena); returning an empty
  // tensor falls back to a fresh allocation.
  using OutputAllocator = std::function<HostTensor(size_t index, DataType dtype, const std::vector<int64_t>& dims)>;
  void setOutputAllocator(OutputAllocator allocator) { allocator_ = std::move(allocator); }
  std::vector<Value>& outputs() { return outputs_; }

  // Runs a subgraph attribute (If/Loop/Scan bodies); outer-scope tensors are visible to it.
  std::vector<Value> runSubgraph(const Network& graph, const std::vector<Value>& inputs) const {
    return subgraphRunner_(graph, inputs);
  }

  [[noreturn]] void fail(const std::string& why) const;  // kRuntimeError naming the layer

 private:
  const Layer& layer_;
  std::vector<const Value*> inputs_;
  std::vector<Tensor> inferred_;
  std::vector<Value> outputs_;
  SubgraphRunner subgraphRunner_;
  OutputAllocator allocator_;
};

using CpuKernelFn = std::function<void(KernelContext&)>;

class CpuKernelRegistry {
 public:
  static const CpuKernelRegistry& instance();
  const CpuKernelFn* find(const std::string& domain, const std::string& opType) const;
  void add(const std::string& domain, const std::string& opType, CpuKernelFn fn);
  void add(const std::string& opType, CpuKernelFn fn) { add("", opType, std::move(fn)); }
  // Ops with several implementations register each under a stable tactic id
  // ("cpu.conv.im2col_gemm"); the builder times them and records its choice in the plan.
  void addTactic(const std::string& domain, const std::string& opType, const std::string& tacticId, CpuKernelFn fn);
  const CpuKernelFn* findTactic(const std::string& domain, const std::string& opType,
                                const std::string& tacticId) const;
  std::vector<std::string> tacticIds(const std::string& domain, const std::string& opType) const;

 private:
  std::unordered_map<std::string, CpuKernelFn> kernels_;
  std::unordered_map<std::string, std::vector<std::pair<std::string, CpuKernelFn>>> tactics_;
};

}  // namespace kiln
