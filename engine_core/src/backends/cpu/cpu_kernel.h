#pragma once
// CPU kernels: the reference implementation of every supported op. A kernel reads its inputs from a
// KernelContext, allocates outputs with the shapes the op schema inferred, and computes them
// (numeric work goes to kernels/cpu/<family>/).
#include <kiln/error.h>
#include <kiln/network.h>

#include "../../common/registry.h"
#include "../backend.h"

#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace kiln {

// Runs a subgraph attribute (If/Loop/Scan bodies) on the given inputs.
using SubgraphRunner = std::function<std::vector<Value>(const Network&, const std::vector<Value>&)>;

class KernelContext {
 public:

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
  // The same, all zeros. Outputs from the engine's arena hold whatever was there before, so a
  // kernel that writes only some elements (scatters, sparse fills, accumulations) takes this one;
  // every other kernel must write all of its output.
  HostTensor& allocateZeroedOutput(size_t i);
  HostTensor& allocateZeroedOutput(size_t i, DataType dtype, std::vector<int64_t> dims);
  void setOutput(size_t i, HostTensor tensor);  // e.g. a reshaped view of an input
  void setOutputValue(size_t i, Value value);
  // Where allocateOutput takes memory from (the memory a step's output is bound to); returning an
  // empty tensor falls back to a fresh allocation.
  using OutputMemory = std::function<HostTensor(size_t index, DataType dtype, const std::vector<int64_t>& dims)>;
  void setOutputAllocator(OutputMemory allocator) { allocator_ = std::move(allocator); }
  // Scratch memory of at least `bytes`: the step's workspace when it is large enough, else a buffer
  // this context owns (so kernels run without a planned workspace too, e.g. in the reference).
  void* workspace(uint64_t bytes);
  void setWorkspace(void* data, uint64_t bytes) {
    workspace_ = data;
    workspaceBytes_ = bytes;
  }
  std::vector<Value>& outputs() { return outputs_; }
  // The execution context's communicator, for collective layers; null when none was given.
  Communicator* communicator() const { return communicator_; }
  void setCommunicator(Communicator* communicator) { communicator_ = communicator; }

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
  OutputMemory allocator_;
  void* workspace_ = nullptr;
  uint64_t workspaceBytes_ = 0;
  std::unique_ptr<float[]> ownedWorkspace_;
  Communicator* communicator_ = nullptr;
};

using CpuKernelFn = std::function<void(KernelContext&)>;

// Runs the kernel; failures become kiln::Errors naming the layer (out of memory included).
void runKernel(const CpuKernelFn& kernel, KernelContext& ctx);

// One implementation of an op that has several (e.g. direct vs GEMM convolution), under a stable
// tactic id ("cpu.conv.im2col_gemm"); the builder times those that apply and the plan names its
// choice.
struct CpuTactic {
  std::string id;
  // Whether it can run the layer with these inputs.
  std::function<bool(const Layer&, const LayerInputs&)> applies;
  // Scratch bytes at these input dims.
  std::function<uint64_t(const Layer&, const LayerShapes&)> workspaceBytes;
  // The kernel for one layer; may prepare the weights once (e.g. repack them for its loops). The
  // tactic carries the activation layouts the engine chose (see channelsLast).
  std::function<CpuKernelFn(const Layer&, const LayerWeights&, const Tactic&)> instantiate;
  // Whether it can read its input 0 (and a kiln.FusedConv's residual, input 3) and write its
  // output 0 channels-last (NHWC) when those are 4-D, so the engine may keep such tensors NHWC
  // between two of its layers.
  bool channelsLast = false;
};

// The reference kernel for `layer` (tactics are instantiated by the CPU backend); throws
// kUnsupported naming the layer.
const CpuKernelFn& cpuKernelFor(const Layer& layer);

class CpuKernelRegistry {
 public:
  static const CpuKernelRegistry& instance();
  // The op's reference kernel (what the ReferenceExecutor runs, and the engine for ops without tactics).
  const CpuKernelFn* find(const std::string& domain, const std::string& opType) const {
    return kernels_.find(domain, opType);
  }
  void add(const std::string& domain, const std::string& opType, CpuKernelFn fn) {
    kernels_.add(domain, opType, std::move(fn));
  }
  void add(const std::string& opType, CpuKernelFn fn) { add("", opType, std::move(fn)); }
  // Tactics are listed in the order added: put the best general guess first.
  void addTactic(const std::string& domain, const std::string& opType, CpuTactic tactic);
  const std::vector<CpuTactic>& tactics(const std::string& domain, const std::string& opType) const;
  const CpuTactic* findTactic(const std::string& domain, const std::string& opType, const std::string& tacticId) const;

 private:
  OpRegistry<CpuKernelFn> kernels_;
  OpRegistry<std::vector<CpuTactic>> tactics_;
};

}  // namespace kiln
