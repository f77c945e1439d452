// Runs an engine on the CPU backend: layers in order as the steps of their plan tactics on the
// backend's stream, activations in the planned arena (stored in the engine's precision between
// layers), one workspace shared by the steps.
#include <kiln/error.h>
#include <kiln/runtime.h>

#include "../builder/engine_description.h"
#include "../builder/memory_planner.h"
#include "../backends/cpu/channels_last.h"
#include "arena_poison.h"
#include "layer_runner.h"
#include "precision_convert.h"
#include "subgraph_cache.h"
#include <kiln/reference_executor.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

namespace kiln {

struct ExecutionContext::State {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Stream> stream;
  std::unique_ptr<Event> layerStart, layerEnd;  // per-layer times for the profiler
  std::vector<std::shared_ptr<const Step>> steps;
  DeviceBuffer workspace;  // grown to the largest step's need
  uint64_t workspaceBytes = 0;
  std::vector<size_t> order;
  std::unordered_map<std::string, size_t> lastUse;
  std::unordered_map<std::string, MemoryAssignment> planned;
  std::shared_ptr<void> arena;
  std::map<std::string, std::vector<int64_t>> inputShapes;
  std::map<std::string, void*> addresses;
  std::map<std::string, std::vector<int64_t>> outputShapes;
  SubgraphRunCache subgraphs;  // for the bodies of the network's If/Loop/Scan layers, across runs
};

namespace {

std::atomic<bool> poisonArena{false};

DataType storageType(Precision p) {
  switch (p) {
    case Precision::kFP16: return DataType::kFloat16;
    case Precision::kBF16: return DataType::kBFloat16;
    default: return DataType::kFloat32;
  }
}

bool isNetworkInput(const Network& net, const std::string& name) {
  return std::find(net.inputs().begin(), net.inputs().end(), name) != net.inputs().end();
}

std::string rangeText(const ShapeRange& r, size_t d) {
  return "[" + std::to_string(r.min[d]) + ", " + std::to_string(r.max[d]) + "]";
}

}  // namespace

void setArenaPoisoningForTesting(bool enabled) { poisonArena = enabled; }

ExecutionContext::ExecutionContext(std::shared_ptr<const EngineDescription> description)
    : description_(std::move(description)), state_(std::make_unique<State>()) {
  const Network& net = *description_->network;
  state_->backend = makeCpuBackend();
  state_->stream = state_->backend->createStream();
  state_->layerStart = state_->backend->createEvent();
  state_->layerEnd = state_->backend->createEvent();
  state_->steps = description_->steps.size() == net.layers().size() ? description_->steps
                                                                       : instantiateSteps(*state_->backend, *description_);
  state_->order = net.topologicalOrder();
  state_->lastUse = lastUseSteps(net, state_->order);
  for (const auto& a : description_->memory.assignments) state_->planned[a.tensor] = a;
  if (description_->memory.arenaBytes > 0) {
    void* p = std::aligned_alloc(64, (description_->memory.arenaBytes + 63) / 64 * 64);
    if (!p) throw Error(ErrorCode::kRuntimeError, "out of host memory for the engine's activation arena");
    state_->arena = std::shared_ptr<void>(p, [](void* q) { std::free(q); });
  }
}

ExecutionContext::~ExecutionContext() = default;

void ExecutionContext::setOptimizationProfile(int index) {
  if (index < 0 || (index > 0 && size_t(index) >= description_->profiles.size()))
    throw Error(ErrorCode::kInvalidArgument, "optimization profile " + std::to_string(index) + " does not exist; the engine has " +
                                                 std::to_string(std::max<size_t>(1, description_->profiles.size())));
  profile_ = index;
}

void ExecutionContext::setInputShape(const std::string& name, const std::vector<int64_t>& dims) {
  const Network& net = *description_->network;
  if (!isNetworkInput(net, name))
    throw Error(ErrorCode::kInvalidArgument, "'" + name + "' is not an input of the engine");
  const Tensor& declared = net.tensor(name);
  if (declared.shape.hasRank() && declared.shape.rank() != dims.size())
    throw Error(ErrorCode::kInvalidArgument, "input '" + name + "' has rank " + std::to_string(declared.shape.rank()) +
                                                 " (shape " + declared.shape.toString() + "), got " + dimsToString(dims));
  const ShapeRange* range = nullptr;
  if (size_t(profile_) < description_->profiles.size()) {
    const auto& inputs = description_->profiles[size_t(profile_)].inputs;
    if (auto it = inputs.find(name); it != inputs.end()) range = &it->second;
  }
  for (size_t d = 0; d < dims.size(); ++d) {
    if (range) {
      if (dims[d] < range->min[d] || dims[d] > range->max[d])
        throw Error(ErrorCode::kInvalidArgument,
                    "input '" + name + "' dimension " + std::to_string(d) + " is " + std::to_string(dims[d]) +
                        ", outside optimization profile " + std::to_string(profile_) + "'s range " +
                        rangeText(*range, d) + "; use a shape inside the range or rebuild with wider --min-shapes/--max-shapes");
    } else if (declared.shape.hasRank() && declared.shape[d].isKnown() && declared.shape[d].value() != dims[d]) {
      throw Error(ErrorCode::kInvalidArgument, "input '" + name + "' dimension " + std::to_string(d) + " must be " +
                                                   std::to_string(declared.shape[d].value()) + ", got " +
                                                   std::to_string(dims[d]));
    } else if (declared.shape.hasRank() && !declared.shape[d].isKnown()) {
      throw Error(ErrorCode::kInvalidArgument, "input '" + name + "' dimension " + std::to_string(d) +
                                                   " is dynamic but the engine has no optimization profile for it; "
                                                   "rebuild with --min-shapes/--opt-shapes/--max-shapes");
    }
  }
  state_->inputShapes[name] = dims;
}

void ExecutionContext::setTensorAddress(const std::string& name, void* address) {
  const Network& net = *description_->network;
  if (!isNetworkInput(net, name) &&
      std::find(net.outputs().begin(), net.outputs().end(), name) == net.outputs().end())
    throw Error(ErrorCode::kInvalidArgument, "'" + name + "' is neither an input nor an output of the engine");
  state_->addresses[name] = address;
}

std::vector<int64_t> ExecutionContext::tensorShape(const std::string& name) const {
  if (auto it = state_->inputShapes.find(name); it != state_->inputShapes.end()) return it->second;
  if (auto it = state_->outputShapes.find(name); it != state_->outputShapes.end()) return it->second;
  throw Error(ErrorCode::kInvalidArgument, "the shape of '" + name + "' is not known yet: set the input shapes and run");
}

void ExecutionContext::enqueue(void* stream) {
  (void)stream;  // the CPU backend runs synchronously
  const Network& net = *description_->network;
  std::map<std::string, HostTensor> inputs;
  for (const auto& name : net.runtimeInputs()) {
    auto addr = state_->addresses.find(name);
    if (addr == state_->addresses.end() || !addr->second)
      throw Error(ErrorCode::kInvalidArgument, "input '" + name + "' has no address: call setTensorAddress");
    std::vector<int64_t> dims;
    if (auto s = state_->inputShapes.find(name); s != state_->inputShapes.end()) dims = s->second;
    else if (net.tensor(name).shape.isFullyKnown()) dims = net.tensor(name).shape.knownDims();
    else throw Error(ErrorCode::kInvalidArgument, "input '" + name + "' has dynamic dimensions: call setInputShape");
    inputs[name] = HostTensor::view(net.tensor(name).dtype, dims, nullptr, addr->second);
  }
  auto outputs = run(inputs);
  for (const auto& [name, tensor] : outputs) {
    auto addr = state_->addresses.find(name);
    if (addr != state_->addresses.end() && addr->second && tensor.byteSize())
      std::memcpy(addr->second, tensor.rawData(), tensor.byteSize());
  }
}

std::map<std::string, HostTensor> ExecutionContext::run(const std::map<std::string, HostTensor>& given) {
  const EngineDescription& d = *description_;
  const Network& net = *d.network;
  std::unordered_map<std::string, Value> values;
  for (const auto& name : net.runtimeInputs()) {
    auto it = given.find(name);
    if (it == given.end()) throw Error(ErrorCode::kInvalidArgument, "input '" + name + "' was not given a value");
    const Tensor& declared = net.tensor(name);
    if (it->second.dtype() != declared.dtype)
      throw Error(ErrorCode::kInvalidArgument, "input '" + name + "' must be " + std::string(toString(declared.dtype)) +
                                                   ", got " + std::string(toString(it->second.dtype())));
    setInputShape(name, it->second.dims());
    values[name] = Value(it->second);
  }
  for (const auto& [name, t] : given)
    if (!isNetworkInput(net, name)) throw Error(ErrorCode::kInvalidArgument, "'" + name + "' is not an input of the engine");

  auto lookup = [&](const std::string& name) -> const Value* {
    if (auto it = values.find(name); it != values.end()) return &it->second;
    if (const Tensor* t = net.findTensor(name); t && t->isConstant()) {
      auto [it, _] = values.emplace(name, Value(*t->constant));
      return &it->second;
    }
    return nullptr;
  };
  auto subgraphRunner = [&](const Network& body, const std::vector<Value>& bodyInputs) {
    return executeGraphCached(body, bodyInputs, lookup, {}, state_->subgraphs);
  };
  std::unordered_map<std::string, Tensor> scopeTypes;
  const Network::ScopeLookup scopeTypeLookup = [&](const std::string& name) -> const Tensor* {
    const Value* v = lookup(name);
    if (!v) return nullptr;
    return &scopeTypes.insert_or_assign(name, describeValue(name, *v)).first->second;
  };
  if (poisonArena && state_->arena) std::memset(state_->arena.get(), 0xFF, d.memory.arenaBytes);
  const char* arenaBegin = static_cast<const char*>(state_->arena.get());
  const char* arenaEnd = arenaBegin + d.memory.arenaBytes;

  for (size_t step = 0; step < state_->order.size(); ++step) {
    size_t index = state_->order[step];
    const Layer& layer = net.layers()[index];
    const LayerDecision& decision = d.decisions.at(index);
    // Reduced-precision activations are widened for the layer, which computes in fp32.
    std::vector<Value> widened(layer.inputs.size());
    std::vector<const Value*> inputValues;
    for (size_t i = 0; i < layer.inputs.size(); ++i) {
      const std::string& name = layer.inputs[i];
      const Value* v = name.empty() ? nullptr : lookup(name);
      if (!name.empty() && !v) throw Error(ErrorCode::kRuntimeError, layer.describe() + ": input '" + name + "' has no value");
      if (v && !v->isSequence() && v->hasElement &&
          (v->tensor.dtype() == DataType::kFloat16 || v->tensor.dtype() == DataType::kBFloat16) &&
          net.tensor(name).dtype == DataType::kFloat32) {
        widened[i] = Value(widenToFloat32(v->tensor));
        v = &widened[i];
      }
      inputValues.push_back(v);
    }
    auto allocator = [&](size_t out, DataType dtype, const std::vector<int64_t>& dims) -> HostTensor {
      auto planned = state_->planned.find(layer.outputs[out]);
      if (planned == state_->planned.end() || !state_->arena) return {};
      uint64_t bytes = uint64_t(elementCount(dims)) * byteSize(dtype);
      if (bytes > planned->second.bytes || dtype == DataType::kString) return {};
      // Not cleared: kernels write every element of their outputs (see arena_poison.h).
      return HostTensor::inArena(dtype, dims, state_->arena, planned->second.offset);
    };
    const Step& layerStep = *state_->steps.at(index);
    const uint64_t workspaceBytes = layerStep.workspaceBytes(inputValues);
    if (workspaceBytes > state_->workspaceBytes) {
      state_->workspace = allocateBuffer(state_->backend->allocator(), workspaceBytes, 64);
      state_->workspaceBytes = workspaceBytes;
    }
    const StepIO io{inputValues, allocator, state_->workspace.get(), state_->workspaceBytes, subgraphRunner,
                    scopeTypeLookup};
    if (profiler_) state_->layerStart->record(*state_->stream);
    auto outputs = layerStep.enqueue(io, *state_->stream);
    for (size_t i = 0; i < layer.outputs.size(); ++i) {
      if (layer.outputs[i].empty()) continue;
      Value& v = outputs[i];
      if (!v.isSequence() && v.hasElement && !v.tensor.empty()) {
        // A view into the arena that the plan did not put there (an unexpected alias) would be
        // overwritten by later layers: copy it out.
        const char* p = static_cast<const char*>(v.tensor.rawData());
        auto planned = state_->planned.find(layer.outputs[i]);
        bool inArena = p >= arenaBegin && p < arenaEnd;
        bool expected = planned != state_->planned.end() && (isAliasOp(layer) || p == arenaBegin + planned->second.offset);
        if (inArena && !expected) v.tensor = v.tensor.clone();
        if (v.tensor.dtype() == DataType::kFloat32 && storageType(decision.precision) != DataType::kFloat32)
          v.tensor = narrowInPlace(v.tensor, storageType(decision.precision));
      }
      if (observer_ && !v.isSequence() && v.hasElement && !v.tensor.empty()) {
        // A channels-last output (the step's tactic says so) is shown in its dims' order.
        const bool channelsLast = i == 0 && layerStep.tactic().outputFormat == TensorFormat::kNHWC;
        observer_(layer.outputs[i], layer.name,
                  channelsLast ? channelsLastToLinear(v.tensor)
                  : v.tensor.dtype() == DataType::kFloat16 || v.tensor.dtype() == DataType::kBFloat16
                      ? widenToFloat32(v.tensor)
                      : v.tensor);
      }
      values[layer.outputs[i]] = std::move(v);
    }
    if (profiler_) {
      state_->layerEnd->record(*state_->stream);
      state_->layerEnd->synchronize();
      profiler_->reportLayerTime(layer.name, state_->layerEnd->millisecondsSince(*state_->layerStart));
    }
    for (auto it = values.begin(); it != values.end();) {
      auto use = state_->lastUse.find(it->first);
      bool dead = use != state_->lastUse.end() && use->second == step;
      it = dead ? values.erase(it) : std::next(it);
    }
  }

  std::map<std::string, HostTensor> results;
  for (const auto& name : net.outputs()) {
    const Value* v = lookup(name);
    if (!v || v->isSequence() || !v->hasElement)
      throw Error(ErrorCode::kRuntimeError, "engine output '" + name + "' was not computed as a tensor");
    HostTensor t = v->tensor;
    if (t.dtype() != net.tensor(name).dtype && net.tensor(name).dtype == DataType::kFloat32) t = widenToFloat32(t);
    else if (static_cast<const char*>(t.rawData()) >= arenaBegin && static_cast<const char*>(t.rawData()) < arenaEnd)
      t = t.clone();  // outputs outlive the arena's next run
    state_->outputShapes[name] = t.dims();
    results[name] = std::move(t);
  }
  return results;
}

}  // namespace kiln
