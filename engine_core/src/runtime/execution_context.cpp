// An execution context runs its engine in three phases (docs/DESIGN.md, "Runtime"):
//   shape   setInputShape -> every slot's dims, shape values computed on the host (shape_resolver)
//   bind    every slot to arena, context-owned or user memory; every step's views (context_memory)
//   launch  enqueue: the steps in order on their backends' streams, nothing allocated or converted
// A data-dependent engine (NonZero, a Reshape to computed values) resumes the shape phase at the
// layer that needs data, after waiting for the streams there.
#include <kiln/error.h>
#include <kiln/runtime.h>

#include "../plan/engine_plan.h"
#include "arena_poison.h"
#include "context_memory.h"
#include "engine_program.h"
#include "host_execution.h"
#include "precision_convert.h"
#include "shape_resolver.h"
#include "../ops/collective.h"

#include "../backends/cpu/channels_last.h"

#include <atomic>
#include <chrono>
#include <deque>
#include <cstring>

namespace kiln {
namespace {

std::atomic<bool> poisonArena{false};

std::string rangeText(const ShapeRange& r, size_t d) {
  return "[" + std::to_string(r.min[d]) + ", " + std::to_string(r.max[d]) + "]";
}

// Asks the context for memory of an output whose size only the step learns.
class LateOutputs : public OutputAllocator {
 public:
  LateOutputs(const EngineProgram& program, ContextSlots& slots, ContextMemory& memory, const ProgramLayer& layer,
              const std::map<int, OutputBufferAllocator*>& userAllocators)
      : program_(program), slots_(slots), memory_(memory), layer_(layer), userAllocators_(userAllocators) {}

  void* allocate(size_t output, DataType dtype, const std::vector<int64_t>& dims) override {
    const int s = layer_.outputs.at(output);
    const SlotInfo& info = program_.slots[size_t(s)];
    SlotState& state = slots_[size_t(s)];
    const uint64_t bytes = uint64_t(elementCount(dims)) * byteSize(dtype);
    if (info.graphOutput) {
      auto it = userAllocators_.find(s);
      if (it == userAllocators_.end())
        throw Error(ErrorCode::kInvalidArgument, "output '" + info.name +
                                                     "' has a size that depends on data: give it an output allocator "
                                                     "(setOutputAllocator) before enqueue");
      state.userAddress = it->second->reallocateOutput(info.name, state.userAddress, std::max<uint64_t>(bytes, 1), 256);
      it->second->notifyShape(info.name, dims);
      return state.userAddress;
    }
    return memory_.ownedMemory(state, info, bytes);
  }

 private:
  const EngineProgram& program_;
  ContextSlots& slots_;
  ContextMemory& memory_;
  const ProgramLayer& layer_;
  const std::map<int, OutputBufferAllocator*>& userAllocators_;
};

}  // namespace

void setArenaPoisoningForTesting(bool enabled) { poisonArena = enabled; }

namespace {
// Stream holds before a profiled layer (microseconds): before its host time is known, and at most.
constexpr double kFirstProfileHoldMicros = 100;
constexpr double kMaxProfileHoldMicros = 5000;
}  // namespace

struct ExecutionContext::State {
  State(const EnginePlan& plan, const EngineProgram& program)
      : memory(plan, program), slots(program.slots.size()), profiledHostMicros(program.layers.size(), 0.0) {}

  ContextMemory memory;
  ContextSlots slots;
  std::map<int, OutputBufferAllocator*> outputAllocators;
  std::map<const Backend*, std::unique_ptr<Stream>> ownStreams;  // each backend's, when no stream is given
  std::unique_ptr<Stream> callerStream;  // the engine backend's wrap of the last native stream
  void* callerNative = nullptr;
  // Per-layer times for the profiler, from events of the layer's backend, and each layer's host
  // enqueue time in the last profiled run (microseconds; sizes the hold before its events).
  std::map<const Backend*, std::pair<std::unique_ptr<Event>, std::unique_ptr<Event>>> layerEvents;
  std::vector<double> profiledHostMicros;
  bool shapesDirty = true;
  bool addressesDirty = false;  // only input/output addresses changed: views are patched, shapes kept
  uint64_t bindings = 0;         // counts re-bindings (new shapes or addresses)
  bool graphCapture = false;
  uint64_t graphBindings = ~uint64_t(0);  // the binding the recording (or its warm-up) was made for
  std::unique_ptr<RecordedWork> graph;
  size_t resolvedUpTo = 0;  // layers [0, resolvedUpTo) have known shapes and bound memory
  size_t staticUpTo = 0;    // how far the shape phase gets before a run (the rest depends on data)
  std::map<int, std::vector<uint8_t>> shapeInputsRead;  // host shape inputs' bytes the shape phase read
  std::deque<HostTensor> staged;  // host views and copies the shape phase read (stable addresses)

  Stream& streamOf(const Backend* backend) {
    auto& s = ownStreams[backend];
    if (!s) s = backend->createStream();
    return *s;
  }

  // The engine backend's stream for this enqueue: the caller's, or its own.
  Stream& engineStream(const EngineProgram& p, void* native) {
    if (!native || p.engine->memorySpace() != MemorySpace::kDevice) return streamOf(p.engine);
    if (!callerStream || callerNative != native) {
      callerStream = p.engine->wrapStream(native);
      callerNative = native;
    }
    return *callerStream;
  }

  // Host values the shape phase may read: weights, shape values, host objects and host inputs;
  // with `data` (the streams waited for: data-dependent shapes), any tensor, copied to the host.
  SlotValues values(const EngineProgram& p, Stream* data) {
    return [this, &p, data](int s) -> const HostTensor* {
      const SlotInfo& info = p.slots[size_t(s)];
      SlotState& state = slots[size_t(s)];
      if (info.constant) return info.constant;
      if (info.shapeValue || info.object) return state.known && !state.value.isSequence() ? &state.value.tensor : nullptr;
      if (!state.known) return nullptr;
      if (info.graphInput && info.place.space == MemorySpace::kHost) {
        if (!state.userAddress)
          throw Error(ErrorCode::kInvalidArgument, "input '" + info.name + "' decides shapes: give its value (host "
                                                   "memory, setTensorAddress) before the engine runs");
        staged.push_back(HostTensor::view(info.place.storage, state.dims, nullptr, state.userAddress));
        const auto* bytes = static_cast<const uint8_t*>(state.userAddress);
        shapeInputsRead[s].assign(bytes, bytes + staged.back().byteSize());
        return &staged.back();
      }
      if (!data || !state.data || info.place.format != TensorFormat::kLinear) return nullptr;
      HostTensor host(info.place.storage, state.dims);
      data->copy(host.rawData(), state.data, host.byteSize());
      data->synchronize();
      if (info.place.storage != info.declared->dtype && info.declared->dtype == DataType::kFloat32)
        host = widenToFloat32(host);
      staged.push_back(std::move(host));
      return &staged.back();
    };
  }
};

ExecutionContext::ExecutionContext(std::shared_ptr<const EnginePlan> plan, std::shared_ptr<const EngineProgram> program)
    : plan_(std::move(plan)), program_(std::move(program)), state_(std::make_unique<State>(*plan_, *program_)) {
  const EngineProgram& p = *program_;
  for (size_t s = 0; s < p.slots.size(); ++s) {
    state_->slots[s].type = *p.slots[s].declared;
    state_->slots[s].known = p.slots[s].constant != nullptr;
  }
  // Workspaces for the largest shapes of every profile, so that no run has to grow them.
  const size_t profiles = std::max<size_t>(1, plan_->profiles.size());
  for (size_t profile = 0; profile < profiles; ++profile) {
    ContextSlots sizing = state_->slots;
    for (int s : p.inputSlots) {
      const Tensor& declared = *p.slots[size_t(s)].declared;
      std::vector<int64_t> dims;
      if (profile < plan_->profiles.size())
        if (auto it = plan_->profiles[profile].inputs.find(declared.name); it != plan_->profiles[profile].inputs.end())
          dims = it->second.max;
      if (dims.empty() && declared.shape.isFullyKnown()) dims = declared.shape.knownDims();
      if (dims.empty() && !(declared.shape.hasRank() && declared.shape.rank() == 0)) continue;
      sizing[size_t(s)].dims = dims;
      sizing[size_t(s)].type.shape = Shape::fromDims(dims);
      sizing[size_t(s)].known = true;
    }
    const size_t resolved = resolveShapes(p, sizing, 0, [&](int s) -> const HostTensor* {
      const SlotInfo& info = p.slots[size_t(s)];
      if (info.constant) return info.constant;
      return info.shapeValue && sizing[size_t(s)].known ? &sizing[size_t(s)].value.tensor : nullptr;
    });
    for (size_t k = 0; k < resolved; ++k) {
      const ProgramLayer& layer = p.layers[k];
      if (!layer.step) continue;
      state_->memory.reserveWorkspace(
          layer.backend, layer.step->workspaceBytes(state_->memory.sizingViews(sizing, layer.inputs),
                                                    state_->memory.sizingViews(sizing, layer.outputs)));
    }
  }
}

ExecutionContext::~ExecutionContext() = default;

void ExecutionContext::setOptimizationProfile(int index) {
  if (index < 0 || (index > 0 && size_t(index) >= plan_->profiles.size()))
    throw Error(ErrorCode::kInvalidArgument, "optimization profile " + std::to_string(index) + " does not exist; the engine has " +
                                                 std::to_string(std::max<size_t>(1, plan_->profiles.size())));
  profile_ = index;
  state_->shapesDirty = true;
}

void ExecutionContext::setInputShape(const std::string& name, const std::vector<int64_t>& dims) {
  const EngineProgram& p = *program_;
  auto it = p.slotOf.find(name);
  if (it == p.slotOf.end() || !p.slots[size_t(it->second)].graphInput)
    throw Error(ErrorCode::kInvalidArgument, "'" + name + "' is not an input of the engine");
  const Tensor& declared = *p.slots[size_t(it->second)].declared;
  if (declared.shape.hasRank() && declared.shape.rank() != dims.size())
    throw Error(ErrorCode::kInvalidArgument, "input '" + name + "' has rank " + std::to_string(declared.shape.rank()) +
                                                 " (shape " + declared.shape.toString() + "), got " + dimsToString(dims));
  const ShapeRange* range = nullptr;
  if (size_t(profile_) < plan_->profiles.size()) {
    const auto& inputs = plan_->profiles[size_t(profile_)].inputs;
    if (auto r = inputs.find(name); r != inputs.end()) range = &r->second;
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
  SlotState& state = state_->slots[size_t(it->second)];
  if (state.known && state.dims == dims) return;
  state.dims = dims;
  state.type.shape = Shape::fromDims(dims);
  state.known = true;
  state_->shapesDirty = true;
}

void ExecutionContext::setTensorAddress(const std::string& name, void* address) {
  const EngineProgram& p = *program_;
  auto it = p.slotOf.find(name);
  if (it == p.slotOf.end() || (!p.slots[size_t(it->second)].graphInput && !p.slots[size_t(it->second)].graphOutput))
    throw Error(ErrorCode::kInvalidArgument, "'" + name + "' is neither an input nor an output of the engine");
  SlotState& state = state_->slots[size_t(it->second)];
  if (state.userAddress == address) return;
  state.userAddress = address;
  state_->addressesDirty = true;
}

void ExecutionContext::setOutputAllocator(const std::string& name, OutputBufferAllocator* allocator) {
  const int s = program_->slot(name);
  if (!program_->slots[size_t(s)].graphOutput)
    throw Error(ErrorCode::kInvalidArgument, "'" + name + "' is not an output of the engine");
  auto it = state_->outputAllocators.find(s);
  const OutputBufferAllocator* current = it == state_->outputAllocators.end() ? nullptr : it->second;
  if (current == allocator) return;
  if (allocator) state_->outputAllocators[s] = allocator;
  else state_->outputAllocators.erase(s);
  state_->shapesDirty = true;
}

std::vector<int64_t> ExecutionContext::tensorShape(const std::string& name) const {
  const EngineProgram& p = *program_;
  const int s = p.slot(name);
  if (!p.slots[size_t(s)].graphInput && !p.slots[size_t(s)].graphOutput)
    throw Error(ErrorCode::kInvalidArgument, "'" + name + "' is neither an input nor an output of the engine");
  if (p.slots[size_t(s)].graphInput && !state_->slots[size_t(s)].known)
    throw Error(ErrorCode::kInvalidArgument, "the shape of input '" + name + "' is not set: call setInputShape");
  const_cast<ExecutionContext*>(this)->prepareShapes();  // logically const: works out what is already decided
  const SlotState& state = state_->slots[size_t(s)];
  if (state.known) return state.dims;
  throw Error(ErrorCode::kInvalidArgument, "the shape of '" + name + "' depends on data the engine computes: it is "
                                           "known after a run");
}

const SlotState& ExecutionContext::slotState(int slot) const { return state_->slots[size_t(slot)]; }

void ExecutionContext::prepareShapes() {
  const EngineProgram& p = *program_;
  State& st = *state_;
  for (const auto& [s, bytes] : st.shapeInputsRead) {
    const SlotState& state = st.slots[size_t(s)];
    // An empty shape input (ReduceSum's empty axes) has nothing to compare, and its bytes' data()
    // may be null, which memcmp must not be given even for zero bytes.
    if (!state.userAddress || (!bytes.empty() && std::memcmp(state.userAddress, bytes.data(), bytes.size()) != 0))
      st.shapesDirty = true;
  }
  if (st.shapesDirty) {
    for (int s : p.inputSlots)
      if (!st.slots[size_t(s)].known)
        throw Error(ErrorCode::kInvalidArgument, "input '" + p.slots[size_t(s)].name + "' has no shape: call setInputShape");
    for (size_t s = 0; s < st.slots.size(); ++s)
      if (!p.slots[s].graphInput && !p.slots[s].constant) st.slots[s].known = false;
    st.memory.unbind(st.slots);
    st.shapeInputsRead.clear();
    st.staged.clear();
    st.resolvedUpTo = st.staticUpTo = resolveShapes(p, st.slots, 0, st.values(p, nullptr));
    st.memory.bind(st.slots, 0, st.outputAllocators);
    st.shapesDirty = false;
    st.addressesDirty = false;
    ++st.bindings;
  } else if (st.addressesDirty) {
    st.memory.rebindAddresses(st.slots);
    st.addressesDirty = false;
    ++st.bindings;
  }
}

void ExecutionContext::setCommunicator(std::shared_ptr<Communicator> communicator) {
  if (communicator)
    for (const Layer& layer : plan_->network->layers())
      if (collective::isCollective(layer) && collective::worldSizeOf(layer) != communicator->size())
        throw Error(ErrorCode::kInvalidArgument, layer.describe() + " was built for world_size " +
                                                     std::to_string(collective::worldSizeOf(layer)) +
                                                     ", but the communicator (" + communicator->describe() + ") has " +
                                                     std::to_string(communicator->size()) +
                                                     " ranks; give it a communicator of the group it was "
                                                     "split for");
  communicator_ = std::move(communicator);
}

void ExecutionContext::enqueue(void* native) {
  try {
    enqueueSteps(native);
  } catch (const std::exception& e) {
    if (communicator_) communicator_->abort(e.what());  // the other ranks fail now, not at their timeout
    throw;
  }
}

void ExecutionContext::enqueueSteps(void* native) {
  const EngineProgram& p = *program_;
  State& st = *state_;
  Stream* engineStream = &st.engineStream(p, native);
  prepareShapes();
  for (const std::vector<int>* io : {&p.inputSlots, &p.outputSlots})
    for (int s : *io) {
      const SlotInfo& info = p.slots[size_t(s)];
      const SlotState& state = st.slots[size_t(s)];
      if (state.known && !info.object && !state.data && elementCount(state.dims) > 0)
        throw Error(ErrorCode::kInvalidArgument, std::string(info.graphInput ? "input" : "output") + " '" + info.name +
                                                     "' has no memory: call setTensorAddress for it (" +
                                                     toString(info.place.space) + " memory) before enqueue");
    }
  if (poisonArena) st.memory.poisonArenas(*engineStream);
  if (st.graphCapture && !profiler_ && !observer_) {
    if (!plan_->report.graphCapturable()) {
      std::string layers;
      for (const auto& name : plan_->report.synchronizingLayers) layers += (layers.empty() ? "'" : ", '") + name + "'";
      throw Error(ErrorCode::kUnsupported,
                  "the engine synchronises inside (at " + layers +
                      ": data-dependent shapes, host layers after device ones, or collectives, which wait for the "
                      "other ranks), so it cannot run as a CUDA graph; run it without graph capture");
    }
    if (st.graphBindings != st.bindings) {  // new shapes or addresses: a plain run first, then record
      st.graph.reset();
      st.graphBindings = st.bindings;
    } else {
      if (!st.graph) {
        st.graph = p.engine->record(*engineStream, [&] { launchSteps(*engineStream); });
        if (!st.graph)
          throw Error(ErrorCode::kUnsupported, "the " + p.engine->name() + " backend cannot record its work as a graph");
      }
      st.graph->launch(*engineStream);
      if (p.engine->memorySpace() == MemorySpace::kDevice && !native) engineStream->synchronize();
      return;
    }
  }
  launchSteps(*engineStream);
  if (p.engine->memorySpace() == MemorySpace::kDevice && !native) engineStream->synchronize();
  for (size_t s = 0; s < st.slots.size(); ++s)  // the next run makes its own host objects
    if (p.slots[s].object && !p.slots[s].graphInput) st.slots[s].ready = false;
}

void ExecutionContext::setGraphCapture(bool enabled) {
  state_->graphCapture = enabled;
  state_->graph.reset();
  state_->graphBindings = ~uint64_t(0);
}

void ExecutionContext::launchSteps(Stream& engine) {
  const EngineProgram& p = *program_;
  State& st = *state_;
  Stream* engineStream = &engine;
  auto streamFor = [&](const Backend* backend) -> Stream& {
    return backend == p.engine ? *engineStream : st.streamOf(backend);
  };
  auto waitForAll = [&] {
    engineStream->synchronize();
    for (auto& [backend, stream] : st.ownStreams) stream->synchronize();
  };
  // What the last run learned from data does not hold for this one.
  if (st.resolvedUpTo != st.staticUpTo) {
    for (size_t s = 0; s < st.slots.size(); ++s)
      if (p.slots[s].producer >= int(st.staticUpTo)) {
        st.slots[s].known = false;
        if (!p.slots[s].graphOutput || st.outputAllocators.count(int(s))) st.slots[s].data = nullptr;
      }
    st.resolvedUpTo = st.staticUpTo;
  }

  for (size_t k = 0; k < p.layers.size(); ++k) {
    const ProgramLayer& layer = p.layers[k];
    if (k == st.resolvedUpTo) {  // shapes from here depend on data: wait, then resume the shape phase
      waitForAll();
      st.resolvedUpTo = resolveShapes(p, st.slots, k, st.values(p, engineStream));
      st.memory.bind(st.slots, k, st.outputAllocators);
      if (st.resolvedUpTo == k && (!layer.step || !layer.backend->runsDataDependent(*layer.layer)))
        throw Error(ErrorCode::kRuntimeError, layer.layer->describe() + ": its output shape cannot be worked out "
                                              "before it runs, and its backend cannot size outputs as it runs");
    }
    if (!layer.step) continue;
    if (layer.hostAfterDevice) engineStream->synchronize();
    Stream& stream = streamFor(layer.backend);
    auto [workspace, workspaceBytes] = st.memory.workspace(k);
    LateOutputs late(p, st.slots, st.memory, layer, st.outputAllocators);
    StepArgs args;
    args.inputs = st.memory.inputs(k);
    args.outputs = st.memory.outputs(k);
    args.workspace = workspace;
    args.workspaceBytes = workspaceBytes;
    args.outputAllocator = &late;
    args.state = st.memory.state(k);
    args.communicator = communicator_.get();
    auto& events = st.layerEvents[layer.backend];
    if (profiler_ && !events.first) events = {layer.backend->createEvent(), layer.backend->createEvent()};
    if (profiler_) {
      // The device waits behind a hold while the host enqueues the step, so the events time its
      // work alone, not the host's launch overhead, which a CUDA-graph run never pays (a layer of a
      // few-microsecond kernels measured 15-60 µs without). The hold: 1.5 times the layer's host
      // time in the last profiled run and a margin; CPU streams ignore it.
      const double hostMicros = st.profiledHostMicros[k];
      stream.holdBack(
          std::min(kMaxProfileHoldMicros, hostMicros > 0 ? 1.5 * hostMicros + 20 : kFirstProfileHoldMicros));
      events.first->record(stream);
    }
    const auto hostStart = profiler_ ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    layer.step->enqueue(args, stream);
    if (profiler_)
      st.profiledHostMicros[k] =
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - hostStart).count();
    const bool unresolved = k == st.resolvedUpTo;
    for (size_t j = 0; j < layer.outputs.size(); ++j) {
      const int s = layer.outputs[j];
      if (s < 0) continue;
      SlotState& state = st.slots[size_t(s)];
      const TensorView& view = args.outputs[j];
      if (p.slots[size_t(s)].object) {  // host objects: typed by what the step made
        state.type = describeValue(p.slots[size_t(s)].name, state.value);
        state.known = state.ready = true;
      } else if (unresolved) {
        if (!view.shapeKnown)
          throw Error(ErrorCode::kInternal, layer.layer->describe() + ": its step did not size output " +
                                                std::to_string(j) + ", whose size depends on data");
        state.dims = view.dims;
        state.type.shape = Shape::fromDims(view.dims);
        state.data = view.data;
        state.known = true;
      }
    }
    if (unresolved) st.resolvedUpTo = k + 1;
    if (observer_) {
      for (size_t j = 0; j < layer.outputs.size(); ++j) {
        const int s = layer.outputs[j];
        if (s < 0) continue;
        const SlotInfo& info = p.slots[size_t(s)];
        const SlotState& state = st.slots[size_t(s)];
        if (info.place.converted || info.object || !state.data || byteSize(info.place.storage) == 0) continue;
        HostTensor host(info.place.storage, state.dims);
        stream.copy(host.rawData(), state.data, host.byteSize());
        stream.synchronize();
        if (host.dtype() == DataType::kFloat16 || host.dtype() == DataType::kBFloat16) host = widenToFloat32(host);
        if (info.place.format == TensorFormat::kNHWC) host = channelsLastToLinear(host);
        observer_(info.place.modelTensor.empty() ? info.name : info.place.modelTensor, layer.layer->name, host);
      }
    }
    if (profiler_) {
      events.second->record(stream);
      events.second->synchronize();
      profiler_->reportLayerTime(layer.layer->name, events.second->millisecondsSince(*events.first));
    }
  }
}

}  // namespace kiln
