#pragma once
// Running one layer on the CPU kernels, shared by the reference executor and the CPU engine.
#include <kiln/host_tensor.h>
#include <kiln/network.h>

#include "../backends/cpu/cpu_kernel.h"

#include <string>
#include <unordered_map>
#include <vector>

namespace kiln {

// The kernel for `layer` (a specific tactic when given); throws kUnsupported naming the layer.
const CpuKernelFn& cpuKernelFor(const Layer& layer, const std::string& tactic = "");

// Infers the output types from the concrete inputs, then runs the kernel. `scopeTypes` gives the
// types of outer values that subgraph bodies read (If/Loop/Scan inference).
std::vector<Value> runLayerOnCpu(const Layer& layer, const std::vector<const Value*>& inputs, const CpuKernelFn& kernel,
                                 const KernelContext::SubgraphRunner& subgraphRunner,
                                 const KernelContext::OutputAllocator& allocator = {},
                                 const Network::ScopeLookup& scopeTypes = {});

// The type of a run-time value, as a Tensor description.
Tensor describeValue(const std::string& name, const Value& value);

// For each tensor the last step (index into `order`) that reads it, directly or from a subgraph;
// graph outputs live to the end (order.size()).
std::unordered_map<std::string, size_t> lastUseSteps(const Network& network, const std::vector<size_t>& order);

}  // namespace kiln
