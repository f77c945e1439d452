#include "engine_plan.h"

#include <kiln/error.h>

namespace kiln {

const char* toString(LayerRole role) {
  switch (role) {
    case LayerRole::kCompute: return "compute";
    case LayerRole::kCopy: return "copy";
    case LayerRole::kCast: return "cast";
    case LayerRole::kReformat: return "reformat";
  }
  return "unknown";
}

const char* toString(LayerPhase phase) { return phase == LayerPhase::kShape ? "shape" : "launch"; }

const PlannedTensor& EnginePlan::tensor(const std::string& name) const {
  auto it = tensors.find(name);
  if (it == tensors.end()) throw Error(ErrorCode::kInternal, "the plan has no placement for tensor '" + name + "'");
  return it->second;
}

const MemoryPlan* EnginePlan::memoryFor(MemorySpace space) const {
  for (const auto& m : memory)
    if (m.space == space) return &m;
  return nullptr;
}

}  // namespace kiln
