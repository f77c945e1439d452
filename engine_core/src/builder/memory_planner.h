#pragma once
// Assigns activation tensors offsets in one arena per memory space so that tensors whose lifetimes
// do not overlap share memory. Ops that return views of their input (Reshape, Squeeze, ...) put
// their output in the input's buffer, so those share one lifetime.
#include "../plan/engine_plan.h"

#include <map>
#include <string>
#include <vector>

namespace kiln {

// Whether the CPU kernels of this op may return a view of input 0 instead of a new buffer.
bool isAliasOp(const Layer& layer);

// Plans the arenas for the plan's network, run in layer order, with the given tensor sizes in
// bytes (the largest over every profile). Graph inputs and outputs, constants, shape-phase values,
// host objects (sequences, strings) and tensors without a known size stay out of the arenas.
std::vector<MemoryPlan> planMemory(const Network& network, const std::vector<PlannedLayer>& layers,
                                   const std::map<std::string, PlannedTensor>& tensors,
                                   const std::map<std::string, uint64_t>& tensorBytes);

}  // namespace kiln
