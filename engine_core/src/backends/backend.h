#pragma once
// A backend runs engine layers: the CPU backend (reference and fallback), the test device backend
// and the CUDA backend. The builder asks it what it supports and which candidate implementations
// (tactics) a layer has, and times those on the backend's own stream with its events; the runtime
// asks it to instantiate the tactic the plan names as a Step, binds every step's tensors to memory
// from the backend's allocator, and enqueues the steps on a stream.
//
// The step contract (docs/DESIGN.md, "Runtime"): a step reads and writes TensorViews that the
// runtime bound before launch; enqueue allocates nothing, returns nothing, converts nothing and
// never blocks the host (for a device backend), so a CUDA graph can capture it. Only a layer whose
// output size depends on data asks for its output memory through an OutputAllocator.
#include <kiln/builder_config.h>
#include <kiln/host_tensor.h>
#include <kiln/network.h>

#include "../ir/tensor_placement.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace kiln {

// One candidate implementation of a layer. The id is stable across builds and versions
// ("cpu.conv.im2col_gemm", "cublaslt.gemm.algo17.fp16.relu_bias") so timing caches and plans can
// name it.
struct Tactic {
  std::string id;
  // Layouts of the activations it reads (per input; empty: all linear) and writes.
  std::vector<TensorFormat> inputFormats;
  TensorFormat outputFormat = TensorFormat::kLinear;
  uint64_t workspaceBytes = 0;  // scratch it needs at the input dims it was listed for
  // Whether it can also read and write channels-last activations, so that the engine can skip
  // re-layouts between it and its neighbours (the builder prefers it on a near tie).
  bool takesChannelsLast = false;
  std::vector<uint8_t> payload;  // backend-private choice details, stored in the plan
  // Set: a tactic the layer cannot take, listed (last) only so the build report says why
  // ("unavailable: ..."); never timed or chosen.
  std::string unavailable;

  TensorFormat inputFormat(size_t input) const {
    return input < inputFormats.size() ? inputFormats[input] : TensorFormat::kLinear;
  }
};

// Concrete dims of a layer's inputs, parallel to layer.inputs (empty where absent or unknown).
using LayerShapes = std::vector<std::vector<int64_t>>;
// A layer's weights: its constant inputs, parallel to layer.inputs (nullptr for activations).
using LayerWeights = std::vector<const HostTensor*>;

// How many candidates a backend lists by default where its list can grow or shrink (a library's
// heuristic results, engine configs): the breadth of optimisation level 3.
constexpr int kDefaultCandidateBudget = 4;

// What the builder knows about a layer's inputs when it asks for tactics.
struct LayerInputs {
  std::vector<DataType> types;  // declared dtypes
  LayerShapes dims;             // at the shapes the workspace must cover (a profile's max point)
  LayerWeights weights;
  // The optimisation level's breadth (TacticSearch): how many candidates to take from a list that
  // can be longer or shorter (cuBLASLt's heuristic results, cuDNN's engine configs). Backends with
  // a fixed set of tactics list them all; the builder times fewer at low levels.
  int candidateBudget = kDefaultCandidateBudget;
};

// The declared tensors of a layer, parallel to layer.inputs / layer.outputs (nullptr where absent),
// for instantiating its step: logical types, and the weights in each constant's Tensor::constant
// (possibly stored narrower, e.g. fp16 weights of an fp16 layer). They point into the plan's
// network, which outlives the steps.
struct LayerSignature {
  std::vector<const Tensor*> inputs, outputs;
  std::vector<const Tensor*> outerReads;  // what its subgraph bodies read from outside (subgraphReferences)
  LayerWeights weights() const;  // the constant inputs' stored values
};
LayerSignature layerSignature(const Network& network, const Layer& layer);

struct SupportVerdict {
  bool supported = true;
  std::string why;  // when not supported: the reason, for the build report
};

struct DeviceInfo {
  std::string name;               // "CPU (x86-64, 2 threads)", "NVIDIA H200"
  std::string computeCapability;  // "9.0"; empty on the CPU
  std::string libraries;          // versions its tactics depend on ("CUDA 13000 cuDNN 91900 ..."); timing-cache key
};

// One tensor as a step sees it: what the memory holds and where it is. Views are made by the
// runtime when it binds (after the shape phase), not during enqueue.
struct TensorView {
  DataType dtype = DataType::kUndefined;  // the storage type
  std::vector<int64_t> dims;              // logical dims (N, C, H, W also for NHWC)
  TensorFormat format = TensorFormat::kLinear;
  MemorySpace space = MemorySpace::kHost;
  void* data = nullptr;
  // Host values that are no plain tensor (sequences, optionals, string tensors) live here instead;
  // only host backends see them.
  Value* object = nullptr;
  bool isConstant = false;  // a weight: steps use the copy they prepared at instantiate()
  // False for an output whose size depends on data, until the step has asked for its memory.
  bool shapeKnown = true;

  bool present() const { return data != nullptr || object != nullptr || dtype != DataType::kUndefined; }
  int64_t elementCount() const;
  uint64_t byteSize() const;
};

// Device memory (host memory on the CPU).
class DeviceAllocator {
 public:
  virtual ~DeviceAllocator() = default;
  // `bytes` aligned to `alignment` (a power of two); throws kRuntimeError when out of memory.
  virtual void* allocate(uint64_t bytes, uint64_t alignment = 256) = 0;
  virtual void free(void* memory) = 0;
};

// Shared ownership of memory from a DeviceAllocator.
using DeviceBuffer = std::shared_ptr<void>;
inline DeviceBuffer allocateBuffer(DeviceAllocator& allocator, uint64_t bytes, uint64_t alignment = 256) {
  return DeviceBuffer(allocator.allocate(bytes, alignment), [&allocator](void* p) { allocator.free(p); });
}

class Event;
class Communicator;

// An ordered queue of device work (cudaStream_t). The CPU's streams run work as it is enqueued.
class Stream {
 public:
  virtual ~Stream() = default;
  // Copies in stream order; either side may be host or this backend's device memory.
  virtual void copy(void* destination, const void* source, uint64_t bytes) = 0;
  // Work enqueued later waits until `event` has completed.
  virtual void wait(const Event& event) = 0;
  // Blocks the host until all enqueued work has finished.
  virtual void synchronize() = 0;
  // Holds back the work enqueued after it for about `microseconds` of device time, so launches
  // the host enqueues meanwhile then run back to back (timing the device, not the host's launch
  // overhead). The CPU's streams run work as it comes and do nothing here.
  virtual void holdBack(double microseconds) { (void)microseconds; }
  virtual void* native() = 0;  // the cudaStream_t; nullptr on the CPU
};

// A point in a stream (cudaEvent_t); the CPU's events hold a steady_clock time.
class Event {
 public:
  virtual ~Event() = default;
  // Completes when the work enqueued on `stream` so far has finished.
  virtual void record(Stream& stream) = 0;
  virtual void synchronize() = 0;
  // Milliseconds from `start` to this event; both recorded and completed.
  virtual double millisecondsSince(const Event& start) const = 0;
};

// Memory for an output whose dims a step learns only while it runs (TensorRT's IOutputAllocator):
// returns memory for `bytes` in the output's memory space; the runtime records the dims.
class OutputAllocator {
 public:
  virtual ~OutputAllocator() = default;
  virtual void* allocate(size_t output, DataType dtype, const std::vector<int64_t>& dims) = 0;
};

// What one execution context keeps for one step between runs (caches of control-flow bodies,
// library handles); steps themselves are shared by every context of an engine.
class StepState {
 public:
  virtual ~StepState() = default;
};

// One launch of a step.
struct StepArgs {
  // Parallel to layer.inputs, then the outer tensors its subgraph bodies read (in
  // subgraphReferences order); absent optional inputs are empty views.
  std::span<const TensorView> inputs;
  // Parallel to layer.outputs. Dims are set, except for outputs whose size depends on data
  // (shapeKnown false, no memory): the step asks `outputAllocator` for those and sets dims, data
  // and shapeKnown.
  std::span<TensorView> outputs;
  void* workspace = nullptr;  // at least Step::workspaceBytes(inputs, outputs) bytes
  uint64_t workspaceBytes = 0;
  OutputAllocator* outputAllocator = nullptr;
  StepState* state = nullptr;  // from Step::createState, per execution context
  // The execution context's communicator (collective layers exchange data through it); null when
  // the caller gave none.
  Communicator* communicator = nullptr;
};

// A layer instantiated with one tactic, its weights prepared (uploaded, repacked); runs many times,
// from several execution contexts at once.
class Step {
 public:
  virtual ~Step() = default;
  virtual const Tactic& tactic() const = 0;
  // Scratch bytes for a launch with these views (dims set); asked when shapes change, not per launch.
  virtual uint64_t workspaceBytes(std::span<const TensorView> inputs, std::span<const TensorView> outputs) const = 0;
  virtual std::unique_ptr<StepState> createState() const { return nullptr; }
  // Enqueues the layer on `stream`.
  virtual void enqueue(const StepArgs& args, Stream& stream) const = 0;
};

// What a stream's work was, recorded to replay it at once (a CUDA graph).
class RecordedWork {
 public:
  virtual ~RecordedWork() = default;
  virtual void launch(Stream& stream) = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;  // the registry name: "cpu", "cpu-device", "cuda"
  virtual BackendKind kind() const = 0;
  virtual DeviceInfo device() const = 0;
  // Where its steps read and write activations.
  virtual MemorySpace memorySpace() const { return MemorySpace::kHost; }
  // Whether its steps read float activations in any float storage type and write the storage type
  // the builder picks, converting inside (the CPU backend), rather than exactly their precision's
  // type (device backends): then the builder inserts Cast layers around them.
  virtual bool convertsFloatStorage() const { return true; }
  // Whether tactics that take channels-last activations are timed writing them even where their
  // inputs are linear: on a backend that keeps whole chains channels-last (CUDA), the layer that
  // starts a chain (a CNN's stem) hands its output to channels-last readers.
  virtual bool timesChannelsLastOutputs() const { return false; }
  // Whether the backend can run `layer` with its activations in `precision`.
  virtual SupportVerdict supports(const Layer& layer, Precision precision) const = 0;
  // The same, knowing the layer's tensors (declared types and shapes, weights as stored): a backend
  // whose kernels take only some types or ranks says so here. The builder places layers with it.
  virtual SupportVerdict supportsTensors(const Layer& layer, Precision precision, const LayerSignature& tensors) const {
    (void)tensors;
    return supports(layer, precision);
  }
  // Whether its step for `layer` takes the layer's data-dependent shapes itself: sizes the outputs
  // that follow from data through StepArgs::outputAllocator, and reads the values that decide its
  // shapes from its own memory. Host backends' steps do; a device backend says per op. Layers it
  // refuses run on the CPU when their shapes depend on data.
  virtual bool runsDataDependent(const Layer& layer) const {
    (void)layer;
    return memorySpace() == MemorySpace::kHost;
  }
  // Candidate implementations for these inputs, best guess first (never empty for a supported
  // layer), each with the workspace it needs at inputs.dims.
  virtual std::vector<Tactic> tactics(const Layer& layer, Precision precision, const LayerInputs& inputs) const = 0;
  // The layer on tactic.id with the layouts the plan chose (the layer must outlive the step).
  // Throws kInvalidArgument naming the layer and the tactic when the backend has no such tactic for
  // it (e.g. a plan from another Kiln version).
  virtual std::unique_ptr<Step> instantiate(const Layer& layer, const Tactic& tactic,
                                            const LayerSignature& signature) const = 0;
  // The activations it would keep in a non-linear layout: those whose producer and every reader
  // run tactics (`tactics`, parallel to network.layers(), with each layer's activation precision;
  // empty entries are layers on other backends) that take that layout, so no re-layout runs
  // between them. Graph outputs stay linear.
  virtual std::unordered_map<std::string, TensorFormat> tensorFormats(const Network& network,
                                                                      const std::vector<std::string>& tactics,
                                                                      const std::vector<Precision>& precisions) const {
    (void)network, (void)tactics, (void)precisions;
    return {};
  }
  virtual DeviceAllocator& allocator() const = 0;
  virtual std::unique_ptr<Stream> createStream() const = 0;
  // The caller's stream (a cudaStream_t) as this backend's Stream; nullptr: a stream of its own.
  virtual std::unique_ptr<Stream> wrapStream(void* native) const {
    (void)native;
    return createStream();
  }
  virtual std::unique_ptr<Event> createEvent() const = 0;
  // Runs `work`, recording what it enqueues on `stream` instead of running it, for replay
  // (CUDA graphs); nullptr where the backend cannot record.
  virtual std::unique_ptr<RecordedWork> record(Stream& stream, const std::function<void()>& work) const {
    (void)stream, (void)work;
    return nullptr;
  }
};

std::unique_ptr<Backend> makeCpuBackend();

}  // namespace kiln
