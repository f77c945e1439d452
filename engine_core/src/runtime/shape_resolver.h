#pragma once
// The shape phase: works out every tensor's dims from the input shapes, layer by layer with the op
// schemas, and computes shape values (Shape -> Gather -> Concat chains) on the host with the CPU
// kernels, so that enqueue knows every size before it launches anything. It stops at the first
// layer whose output dims depend on data the engine has not computed yet; the runtime resumes it
// there once that data exists.
#include "context_slots.h"
#include "engine_program.h"

#include <functional>

namespace kiln {

// The host value of a slot when the shape phase may read it now, else nullptr.
using SlotValues = std::function<const HostTensor*(int slot)>;

// Resolves layers [from, ...) and returns the index of the first one it could not (the layer
// count when all are). Throws kInvalidArgument naming the layer when inference fails (e.g. a
// Reshape to an impossible shape for these inputs).
size_t resolveShapes(const EngineProgram& program, ContextSlots& slots, size_t from, const SlotValues& values);

}  // namespace kiln
