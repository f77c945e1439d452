#pragma once
// What a loaded engine runs, worked out once at load and shared by its execution contexts: every
// tensor as a numbered slot (its placement, its arena slot, whether it is a weight, a shape value
// or a host object) and every layer as its step with the slots it reads and writes. Contexts index
// these by number; nothing during a run looks a tensor up by name.
#include "../backends/backend.h"
#include "../plan/engine_plan.h"

#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace kiln {

struct SlotInfo {
  std::string name;
  const Tensor* declared = nullptr;  // in the plan's network: logical type and declared shape
  PlannedTensor place;               // where and how its memory holds it (weights: as stored)
  const HostTensor* constant = nullptr;
  bool object = false;       // a host Value (sequence, optional, string tensor), not raw memory
  bool shapeValue = false;   // made on the host in the shape phase
  bool graphInput = false, graphOutput = false;
  bool shapeInput = false;   // a graph input whose value the shape phase reads (host memory)
  int producer = -1;         // layer index; -1 for graph inputs and weights
  int64_t arenaOffset = -1;  // in its memory space's arena; -1: not planned there
  uint64_t arenaBytes = 0;
};

struct ProgramLayer {
  const Layer* layer = nullptr;
  const PlannedLayer* planned = nullptr;
  const Backend* backend = nullptr;
  std::shared_ptr<const Step> step;  // launched layers only
  std::vector<int> inputs;           // slots, parallel to layer->inputs (-1: absent), then implicit inputs
  std::vector<int> outputs;          // slots, parallel to layer->outputs (-1: unused)
  bool hostAfterDevice = false;      // a host layer after device work: the stream is waited for first
  bool launched() const { return planned->phase == LayerPhase::kLaunch; }
};

struct EngineProgram {
  std::vector<SlotInfo> slots;
  std::vector<ProgramLayer> layers;
  std::unordered_map<std::string, int> slotOf;
  std::vector<int> inputSlots, outputSlots;  // runtime graph inputs, graph outputs
  // Backends by name; `engine` is the one the plan was built for (the CPU for CPU plans).
  std::map<std::string, std::shared_ptr<const Backend>> backends;
  const Backend* engine = nullptr;
  const Backend* cpu = nullptr;
  std::vector<MemorySpace> arenaSpaces;  // the memory plans' spaces, in plan order

  int slot(const std::string& name) const;  // throws kInvalidArgument naming the tensor
};

// Instantiates every launched layer on its backend (an unknown tactic is refused naming the layer)
// and numbers the slots.
std::shared_ptr<const EngineProgram> buildProgram(const EnginePlan& plan);

}  // namespace kiln
