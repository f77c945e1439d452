#pragma once
// An execution context's memory: one activation arena per memory space and one workspace per
// backend, allocated from the backends' allocators when the context is made and sized for every
// profile; the bindings of every slot to memory; and the views each step is launched with. All of
// it is worked out in the shape phase, never during enqueue (a data-dependent engine resumes its
// shape phase at the layer that needs it).
#include "context_slots.h"
#include "engine_program.h"

#include <kiln/runtime.h>

#include <map>
#include <memory>
#include <vector>

namespace kiln {

class ContextMemory {
 public:
  ContextMemory(const EnginePlan& plan, const EngineProgram& program);

  // Binds every known slot of layers [from, ...) that has no memory yet, then remakes those layers'
  // views and grows workspaces they need more of. Unknown outputs get views with shapeKnown false.
  void bind(ContextSlots& slots, size_t from, const std::map<int, OutputBufferAllocator*>& outputAllocators);
  // Forgets every binding (new shapes).
  void unbind(ContextSlots& slots);
  // Points graph inputs and outputs at their new addresses (same shapes) and remakes the views.
  void rebindAddresses(ContextSlots& slots);
  // Makes the backend's workspace at least `bytes` (done for every profile's largest shapes when
  // the context is made).
  void reserveWorkspace(const Backend* backend, uint64_t bytes);
  // The views of a layer whose slots are known, without memory (for sizing workspaces).
  std::vector<TensorView> sizingViews(const ContextSlots& slots, const std::vector<int>& slotList) const;

  std::vector<TensorView>& inputs(size_t layer) { return inputViews_[layer]; }
  std::vector<TensorView>& outputs(size_t layer) { return outputViews_[layer]; }
  // The workspace of the layer's backend.
  std::pair<void*, uint64_t> workspace(size_t layer);
  StepState* state(size_t layer) { return states_[layer].get(); }

  // Memory of `bytes` for slot `s` that the context owns (grown, never shrunk): for tensors whose
  // size the arena plan did not know.
  void* ownedMemory(SlotState& slot, const SlotInfo& info, uint64_t bytes);
  DeviceAllocator& allocatorFor(MemorySpace space) const;
  // Fills every arena byte with 0xFF (a test hook: unwritten outputs then show as NaN / -1).
  void poisonArenas(Stream& deviceStream);

 private:
  TensorView viewOf(const ContextSlots& slots, int slot) const;

  const EngineProgram& program_;
  std::map<MemorySpace, DeviceBuffer> arenas_;
  std::map<MemorySpace, uint64_t> arenaBytes_;
  std::map<const Backend*, DeviceBuffer> workspaces_;
  std::map<const Backend*, uint64_t> workspaceBytes_;
  std::vector<std::vector<TensorView>> inputViews_, outputViews_;
  std::vector<std::unique_ptr<StepState>> states_;
};

}  // namespace kiln
