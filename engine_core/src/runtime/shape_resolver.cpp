#include "shape_resolver.h"

#include <kiln/error.h>

#include "../ops/op_schema.h"
#include "host_execution.h"
#include "subgraph_cache.h"

namespace kiln {
namespace {

// A slot's type as inference sees it: weights as declared, others with the dims worked out.
const Tensor* typeOf(const EngineProgram& program, const ContextSlots& slots, int slot) {
  if (slot < 0) return nullptr;
  const SlotInfo& info = program.slots[size_t(slot)];
  if (info.constant) return info.declared;
  const SlotState& state = slots[size_t(slot)];
  return state.known ? &state.type : nullptr;
}

bool readsDimsOnly(const Layer& l) { return l.domain.empty() && (l.opType == "Shape" || l.opType == "Size"); }

// Runs a shape-phase layer on the host: its outputs are small values later inference reads. False
// when an input's value is not available yet (sizing workspaces before any input is given).
bool computeShapeValues(const EngineProgram& program, ContextSlots& slots, const ProgramLayer& layer,
                        const SlotValues& values) {
  const Layer& l = *layer.layer;
  for (size_t i = 0; i < l.inputs.size() && !readsDimsOnly(l); ++i)
    if (layer.inputs[i] >= 0 && !values(layer.inputs[i])) return false;
  std::vector<Value> inputs(l.inputs.size());
  std::vector<const Value*> pointers(l.inputs.size(), nullptr);
  for (size_t i = 0; i < l.inputs.size(); ++i) {
    const int s = layer.inputs[i];
    if (s < 0) continue;
    const SlotInfo& info = program.slots[size_t(s)];
    if (const HostTensor* value = values(s)) {
      inputs[i] = Value(*value);
    } else if (!info.object) {
      // Shape and Size read only the dims of tensors whose values may live on a device.
      const SlotState& state = slots[size_t(s)];
      inputs[i] = Value(HostTensor::view(state.type.dtype, state.dims, nullptr, nullptr));
    } else {
      throw Error(ErrorCode::kInternal, l.describe() + ": the shape phase has no value for input '" + l.inputs[i] + "'");
    }
    pointers[i] = &inputs[i];
  }
  auto noBodies = [&](const Network&, const std::vector<Value>&) -> std::vector<Value> {
    throw Error(ErrorCode::kInternal, l.describe() + ": the shape phase runs no subgraphs");
  };
  std::vector<Value> outputs = runLayerOnCpu(l, pointers, cpuKernelFor(l), noBodies);
  for (size_t j = 0; j < layer.outputs.size(); ++j) {
    const int s = layer.outputs[j];
    if (s < 0) continue;
    SlotState& state = slots[size_t(s)];
    state.value = std::move(outputs[j]);
    state.dims = state.value.tensor.dims();
    state.type.shape = Shape::fromDims(state.dims);
    state.data = state.value.tensor.rawData();
  }
  return true;
}

}  // namespace

size_t resolveShapes(const EngineProgram& program, ContextSlots& slots, size_t from, const SlotValues& values) {
  for (size_t k = from; k < program.layers.size(); ++k) {
    const ProgramLayer& layer = program.layers[k];
    const Layer& l = *layer.layer;
    const OpSchema* schema = OpSchemaRegistry::instance().find(l.domain, l.opType);
    if (!schema) throw Error(ErrorCode::kUnsupported, l.describe() + ": no schema for op '" + l.opType + "'");
    std::vector<const Tensor*> inputs(l.inputs.size(), nullptr);
    for (size_t i = 0; i < l.inputs.size(); ++i) {
      const int s = layer.inputs[i];
      if (s < 0) continue;
      inputs[i] = typeOf(program, slots, s);
      if (!inputs[i]) return k;  // made by a layer whose output size depends on data
      // A sequence's elements may differ in shape, which no type says: what reads one sizes its
      // outputs as it runs. Other host objects (optionals, strings) are known once made.
      const SlotInfo& info = program.slots[size_t(s)];
      if (info.object && !info.constant &&
          (!slots[size_t(s)].ready || info.declared->kind == ValueKind::kSequence ||
           info.declared->kind == ValueKind::kOptionalSequence))
        return k;
    }
    // What the layer's subgraph bodies read from outside, by name (If/Loop/Scan inference).
    const std::vector<std::string> outer = subgraphReferences(l);
    for (size_t j = 0; j < outer.size(); ++j)
      if (!typeOf(program, slots, layer.inputs[l.inputs.size() + j])) return k;
    const Network::ScopeLookup scope = [&](const std::string& name) -> const Tensor* {
      for (size_t j = 0; j < outer.size(); ++j)
        if (outer[j] == name) return typeOf(program, slots, layer.inputs[l.inputs.size() + j]);
      return nullptr;
    };
    InferenceContext inference(
        l, inputs, [&](size_t i) { return i < layer.inputs.size() && layer.inputs[i] >= 0 ? values(layer.inputs[i]) : nullptr; },
        scope);
    try {
      schema->infer(inference);
    } catch (const Error& e) {
      throw Error(ErrorCode::kInvalidArgument, std::string("these input shapes do not fit the engine: ") + e.what());
    }
    for (size_t j = 0; j < layer.outputs.size(); ++j) {
      const int s = layer.outputs[j];
      if (s < 0 || program.slots[size_t(s)].object) continue;
      if (j >= inference.outputs().size() || !inference.output(j).shape.isFullyKnown()) return k;
    }
    if (layer.planned->phase == LayerPhase::kShape && !computeShapeValues(program, slots, layer, values)) return k;
    for (size_t j = 0; j < layer.outputs.size(); ++j) {
      const int s = layer.outputs[j];
      if (s < 0) continue;
      SlotState& state = slots[size_t(s)];
      state.type = inference.output(j);
      state.type.name = program.slots[size_t(s)].name;
      if (!program.slots[size_t(s)].object) state.dims = state.type.shape.knownDims();
      state.known = true;
    }
  }
  return program.layers.size();
}

}  // namespace kiln
