#include "engine_program.h"

#include <kiln/error.h>

#include "../backends/backend_registry.h"
#include "subgraph_cache.h"

#include <algorithm>

namespace kiln {

int EngineProgram::slot(const std::string& name) const {
  auto it = slotOf.find(name);
  if (it == slotOf.end()) throw Error(ErrorCode::kInvalidArgument, "the engine has no tensor '" + name + "'");
  return it->second;
}

std::shared_ptr<const EngineProgram> buildProgram(const EnginePlan& plan) {
  auto program = std::make_shared<EngineProgram>();
  const Network& net = *plan.network;
  auto backendNamed = [&](const std::string& name) -> const Backend* {
    auto& held = program->backends[name];
    if (!held) held = BackendRegistry::instance().get(name);
    return held.get();
  };
  try {
    program->engine = backendNamed(plan.info.backend);
  } catch (const Error& e) {
    throw Error(e.code(), std::string("the plan was built for the '") + plan.info.backend + "' backend on '" +
                              plan.info.deviceName + "'" +
                              (plan.info.computeCapability.empty() ? "" : " (compute capability " +
                                                                              plan.info.computeCapability + ")") +
                              ", which this Kiln cannot run: " + e.what());
  }
  program->cpu = backendNamed(toString(BackendKind::kCpu));
  for (const MemoryPlan& m : plan.memory) program->arenaSpaces.push_back(m.space);

  auto addSlot = [&](const std::string& name) -> int {
    if (name.empty()) return -1;
    if (auto it = program->slotOf.find(name); it != program->slotOf.end()) return it->second;
    SlotInfo s;
    s.name = name;
    s.declared = &net.tensor(name);
    if (s.declared->isConstant()) {
      s.constant = &*s.declared->constant;
      s.place = {s.constant->dtype(), TensorFormat::kLinear, MemorySpace::kHost, name, false};
    } else {
      s.place = plan.tensor(name);
    }
    s.object = s.declared->kind != ValueKind::kTensor || s.declared->dtype == DataType::kString;
    program->slots.push_back(std::move(s));
    program->slotOf[name] = int(program->slots.size() - 1);
    return int(program->slots.size() - 1);
  };
  for (const auto& name : net.runtimeInputs()) {
    const int s = addSlot(name);
    program->slots[size_t(s)].graphInput = true;
    program->inputSlots.push_back(s);
  }

  bool deviceWorkBefore = false;
  for (size_t i = 0; i < net.layers().size(); ++i) {
    const Layer& layer = net.layers()[i];
    const PlannedLayer& planned = plan.layers[i];
    ProgramLayer p;
    p.layer = &layer;
    p.planned = &planned;
    p.backend = backendNamed(planned.backend);
    for (const auto& in : layer.inputs) p.inputs.push_back(addSlot(in));
    for (const auto& ref : planned.implicitInputs) p.inputs.push_back(addSlot(ref));
    for (const auto& out : layer.outputs) {
      const int s = addSlot(out);
      p.outputs.push_back(s);
      if (s < 0) continue;
      program->slots[size_t(s)].producer = int(i);
      program->slots[size_t(s)].shapeValue = planned.phase == LayerPhase::kShape;
    }
    if (p.launched()) {
      const bool onDevice = p.backend->memorySpace() == MemorySpace::kDevice;
      p.hostAfterDevice = !onDevice && deviceWorkBefore;
      deviceWorkBefore = deviceWorkBefore || onDevice;
      Tactic tactic{planned.tactic, planned.inputFormats, planned.outputFormat, planned.workspaceBytes, false,
                    planned.tacticPayload};
      p.step = p.backend->instantiate(layer, tactic, layerSignature(net, layer));
    }
    program->layers.push_back(std::move(p));
  }
  for (const auto& name : net.outputs()) {
    const int s = addSlot(name);
    program->slots[size_t(s)].graphOutput = true;
    program->outputSlots.push_back(s);
  }
  for (const auto& name : net.runtimeInputs()) {
    SlotInfo& s = program->slots[size_t(program->slotOf.at(name))];
    s.shapeInput = s.place.space == MemorySpace::kHost && program->engine->memorySpace() == MemorySpace::kDevice;
  }
  for (const MemoryPlan& m : plan.memory)
    for (const MemoryAssignment& a : m.assignments) {
      auto it = program->slotOf.find(a.tensor);
      if (it == program->slotOf.end()) continue;
      SlotInfo& s = program->slots[size_t(it->second)];
      if (s.place.space != m.space)
        throw Error(ErrorCode::kInvalidModel, "the plan puts tensor '" + a.tensor + "' in the " + toString(m.space) +
                                                  " arena but places it in " + toString(s.place.space) +
                                                  " memory; rebuild it");
      s.arenaOffset = int64_t(a.offset);
      s.arenaBytes = a.bytes;
    }
  return program;
}

}  // namespace kiln
