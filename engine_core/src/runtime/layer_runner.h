#pragma once
// Running one layer on the CPU kernels, shared by the reference executor and the CPU engine.
#include <kiln/host_tensor.h>
#include <kiln/network.h>
#include <kiln/reference_executor.h>

#include "../backends/cpu/cpu_kernel.h"

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace kiln {

struct EngineDescription;
class SubgraphInferenceCache;
class SubgraphRunCache;

// The reference kernel for `layer` (tactics are instantiated by the CPU backend); throws
// kUnsupported naming the layer.
const CpuKernelFn& cpuKernelFor(const Layer& layer);

// Infers the output types from the concrete inputs, then runs the kernel. `scopeTypes` gives the
// types of outer values that subgraph bodies read (If/Loop/Scan inference); `workspace` is the
// kernel's scratch memory (none: kernels that need scratch allocate it); `inferenceCache` (may be
// null) remembers the inference of layers with subgraphs.
std::vector<Value> runLayerOnCpu(const Layer& layer, const std::vector<const Value*>& inputs, const CpuKernelFn& kernel,
                                 const KernelContext::SubgraphRunner& subgraphRunner,
                                 const KernelContext::OutputAllocator& allocator = {},
                                 const Network::ScopeLookup& scopeTypes = {}, void* workspace = nullptr,
                                 uint64_t workspaceBytes = 0, SubgraphInferenceCache* inferenceCache = nullptr);

// executeGraph with what it can remember across runs of the same graphs (Loop bodies run once per
// iteration) kept in `cache`, which the graph's subgraphs share.
std::vector<Value> executeGraphCached(const Network& graph, const std::vector<Value>& inputs,
                                      const std::function<const Value*(const std::string&)>& outer,
                                      const ReferenceExecutorOptions& options, SubgraphRunCache& cache);

// Every layer of the engine on the tactic its plan names, with the activation layouts the backend
// keeps between them (Backend::tensorFormats; each step's tactic carries its own);
// throws kInvalidArgument naming the layer and the tactic when the backend has no such tactic.
std::vector<std::shared_ptr<const Step>> instantiateSteps(const Backend& backend, const EngineDescription& description);

// The type of a run-time value, as a Tensor description.
Tensor describeValue(const std::string& name, const Value& value);

// For each tensor the last step (index into `order`) that reads it, directly or from a subgraph;
// graph outputs live to the end (order.size()).
std::unordered_map<std::string, size_t> lastUseSteps(const Network& network, const std::vector<size_t>& order);

}  // namespace kiln
