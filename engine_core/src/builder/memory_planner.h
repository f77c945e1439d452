#pragma once
// Assigns activation tensors offsets in one arena so that tensors whose lifetimes do not overlap
// share memory. Ops that return views of their input (Reshape, Squeeze, ...) put their output in
// the input's buffer, so those share one lifetime.
#include "engine_description.h"

#include <map>
#include <string>
#include <vector>

namespace kiln {

// Whether the CPU kernels of this op may return a view of input 0 instead of a new buffer.
bool isAliasOp(const Layer& layer);

// Plans the arena for `network` run in `order` with the given tensor sizes in bytes (tensors
// without a known size, graph inputs/outputs and constants stay out of the arena).
MemoryPlan planMemory(const Network& network, const std::vector<size_t>& order,
                      const std::map<std::string, uint64_t>& tensorBytes);

}  // namespace kiln
