#pragma once
// An execution context's view of its engine's tensors for the current shapes: per slot, its dims
// once the shape phase has worked them out, the memory it is bound to, and the host value of shape
// values and host objects.
#include <kiln/host_tensor.h>
#include <kiln/network.h>

#include "../backends/backend.h"

#include <vector>

namespace kiln {

struct SlotState {
  Tensor type;                  // logical dtype and kind; the shape once known
  std::vector<int64_t> dims;    // concrete dims (tensors) once known
  bool known = false;           // dims (or, for host objects, the type) worked out for these shapes
  bool ready = false;           // host objects: made in this run (their contents decide later shapes)
  void* data = nullptr;         // bound memory
  Value value;                  // host values: shape-phase results, host objects
  void* userAddress = nullptr;  // from setTensorAddress (graph inputs and outputs)
  DeviceBuffer owned;           // the context's own memory where the arena has no room for it
  uint64_t ownedBytes = 0;
};

using ContextSlots = std::vector<SlotState>;

}  // namespace kiln
