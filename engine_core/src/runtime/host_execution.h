#pragma once
// Running layers and graphs on the CPU kernels with host values: the reference executor, the
// bodies of control-flow layers, and the shape phase's host arithmetic.
#include <kiln/host_tensor.h>
#include <kiln/network.h>
#include <kiln/reference_executor.h>

#include "../backends/cpu/cpu_kernel.h"

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace kiln {

class SubgraphInferenceCache;
class SubgraphRunCache;

// Infers the output types from the concrete inputs, then runs the kernel. `scopeTypes` gives the
// types of outer values that subgraph bodies read (If/Loop/Scan inference); `workspace` is the
// kernel's scratch memory (none: kernels that need scratch allocate it); `inferenceCache` (may be
// null) remembers the inference of layers with subgraphs.
std::vector<Value> runLayerOnCpu(const Layer& layer, const std::vector<const Value*>& inputs, const CpuKernelFn& kernel,
                                 const SubgraphRunner& subgraphRunner,
                                 const KernelContext::OutputMemory& allocator = {},
                                 const Network::ScopeLookup& scopeTypes = {}, void* workspace = nullptr,
                                 uint64_t workspaceBytes = 0, SubgraphInferenceCache* inferenceCache = nullptr);

// executeGraph with what it can remember across runs of the same graphs (Loop bodies run once per
// iteration) kept in `cache`, which the graph's subgraphs share.
std::vector<Value> executeGraphCached(const Network& graph, const std::vector<Value>& inputs,
                                      const std::function<const Value*(const std::string&)>& outer,
                                      const ReferenceExecutorOptions& options, SubgraphRunCache& cache);

// The type of a run-time value, as a Tensor description.
Tensor describeValue(const std::string& name, const Value& value);

}  // namespace kiln
