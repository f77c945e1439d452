#include "context_memory.h"

#include <kiln/error.h>

#include <cstring>

namespace kiln {

ContextMemory::ContextMemory(const EnginePlan& plan, const EngineProgram& program)
    : program_(program),
      inputViews_(program.layers.size()),
      outputViews_(program.layers.size()),
      states_(program.layers.size()) {
  for (const MemoryPlan& m : plan.memory)
    if (m.arenaBytes > 0) {
      arenas_[m.space] = allocateBuffer(allocatorFor(m.space), m.arenaBytes, 256);
      arenaBytes_[m.space] = m.arenaBytes;
    }
  for (size_t k = 0; k < program.layers.size(); ++k)
    if (program.layers[k].step) states_[k] = program.layers[k].step->createState();
}

DeviceAllocator& ContextMemory::allocatorFor(MemorySpace space) const {
  return space == MemorySpace::kDevice ? program_.engine->allocator() : program_.cpu->allocator();
}

void ContextMemory::reserveWorkspace(const Backend* backend, uint64_t bytes) {
  uint64_t& have = workspaceBytes_[backend];
  if (bytes <= have) return;
  workspaces_[backend] = allocateBuffer(backend->allocator(), bytes, 256);
  have = bytes;
}

std::pair<void*, uint64_t> ContextMemory::workspace(size_t layer) {
  const Backend* backend = program_.layers[layer].backend;
  auto it = workspaces_.find(backend);
  return it == workspaces_.end() ? std::pair<void*, uint64_t>{nullptr, 0}
                                 : std::pair<void*, uint64_t>{it->second.get(), workspaceBytes_[backend]};
}

void* ContextMemory::ownedMemory(SlotState& slot, const SlotInfo& info, uint64_t bytes) {
  bytes = std::max<uint64_t>(bytes, 1);
  if (bytes > slot.ownedBytes) {
    slot.owned = allocateBuffer(allocatorFor(info.place.space), bytes, 256);
    slot.ownedBytes = bytes;
  }
  return slot.owned.get();
}

void ContextMemory::poisonArenas(Stream& deviceStream) {
  for (auto& [space, arena] : arenas_) {
    const uint64_t bytes = arenaBytes_[space];
    if (space == MemorySpace::kHost) {
      std::memset(arena.get(), 0xFF, bytes);
    } else {
      std::vector<uint8_t> poison(bytes, 0xFF);
      deviceStream.copy(arena.get(), poison.data(), bytes);
      deviceStream.synchronize();
    }
  }
}

TensorView ContextMemory::viewOf(const ContextSlots& slots, int s) const {
  TensorView view;
  if (s < 0) return view;
  const SlotInfo& info = program_.slots[size_t(s)];
  const SlotState& state = slots[size_t(s)];
  if (info.constant) {
    view.dtype = info.constant->dtype();
    view.dims = info.constant->dims();
    view.data = const_cast<void*>(info.constant->rawData());
    view.isConstant = true;
    return view;
  }
  view.dtype = info.place.storage;
  view.format = info.place.format;
  view.space = info.place.space;
  if (info.object) {
    view.object = const_cast<Value*>(&state.value);
    view.space = MemorySpace::kHost;
  }
  if (info.shapeValue) view.space = MemorySpace::kHost;
  view.shapeKnown = state.known;
  if (state.known) {
    view.dims = state.dims;
    view.data = state.data;
  }
  return view;
}

std::vector<TensorView> ContextMemory::sizingViews(const ContextSlots& slots, const std::vector<int>& slotList) const {
  std::vector<TensorView> views;
  for (int s : slotList) views.push_back(viewOf(slots, s));
  return views;
}

void ContextMemory::unbind(ContextSlots& slots) {
  for (size_t s = 0; s < slots.size(); ++s)
    if (!program_.slots[s].shapeValue) slots[s].data = nullptr;
}

void ContextMemory::rebindAddresses(ContextSlots& slots) {
  for (size_t s = 0; s < slots.size(); ++s) {
    const SlotInfo& info = program_.slots[s];
    if ((info.graphInput || info.graphOutput) && slots[s].known && !info.object)
      slots[s].data = slots[s].userAddress;
    if (info.object && info.graphInput && slots[s].known && slots[s].userAddress) {
      slots[s].value = Value(HostTensor::view(info.declared->dtype, slots[s].dims, nullptr, slots[s].userAddress));
      slots[s].ready = true;
    }
  }
  for (size_t k = 0; k < program_.layers.size(); ++k)
    if (program_.layers[k].step) {
      inputViews_[k] = sizingViews(slots, program_.layers[k].inputs);
      outputViews_[k] = sizingViews(slots, program_.layers[k].outputs);
    }
}

void ContextMemory::bind(ContextSlots& slots, size_t from,
                         const std::map<int, OutputBufferAllocator*>& outputAllocators) {
  auto bindSlot = [&](int s) {
    if (s < 0) return;
    const SlotInfo& info = program_.slots[size_t(s)];
    SlotState& state = slots[size_t(s)];
    if (info.object && info.graphInput && state.known && state.userAddress) {  // e.g. string tensors
      state.value = Value(HostTensor::view(info.declared->dtype, state.dims, nullptr, state.userAddress));
      state.ready = true;
    }
    if (info.constant || info.object || info.shapeValue || !state.known || state.data) return;
    const uint64_t bytes = uint64_t(elementCount(state.dims)) * byteSize(info.place.storage);
    if (info.graphInput || info.graphOutput) {
      if (auto it = outputAllocators.find(s); info.graphOutput && it != outputAllocators.end()) {
        state.userAddress = it->second->reallocateOutput(info.name, state.userAddress, std::max<uint64_t>(bytes, 1), 256);
        it->second->notifyShape(info.name, state.dims);
      }
      state.data = state.userAddress;  // none yet: enqueue says so if it is still missing then
      return;
    }
    auto arena = arenas_.find(info.place.space);
    if (info.arenaOffset >= 0 && bytes <= info.arenaBytes && arena != arenas_.end())
      state.data = static_cast<char*>(arena->second.get()) + info.arenaOffset;
    else
      state.data = ownedMemory(state, info, bytes);  // a size the arena plan could not know
  };
  if (from == 0) {  // graph inputs and outputs no layer reads (an input only a type is taken from)
    for (int s : program_.inputSlots) bindSlot(s);
    for (int s : program_.outputSlots) bindSlot(s);
  }
  for (size_t k = from; k < program_.layers.size(); ++k) {
    const ProgramLayer& layer = program_.layers[k];
    for (int s : layer.inputs) bindSlot(s);
    for (int s : layer.outputs) bindSlot(s);
    if (!layer.step) continue;
    inputViews_[k] = sizingViews(slots, layer.inputs);
    outputViews_[k] = sizingViews(slots, layer.outputs);
    const bool inputsKnown = std::all_of(layer.inputs.begin(), layer.inputs.end(),
                                         [&](int s) { return s < 0 || program_.slots[size_t(s)].constant || slots[size_t(s)].known; });
    if (inputsKnown) reserveWorkspace(layer.backend, layer.step->workspaceBytes(inputViews_[k], outputViews_[k]));
  }
}

}  // namespace kiln
