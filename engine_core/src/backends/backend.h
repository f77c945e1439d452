#pragma once
// A backend runs engine layers: the CPU backend (reference and fallback) and the CUDA backend.
// The builder asks it what it supports and which candidate implementations (tactics) a layer has,
// and times those on the backend's own stream with its events; the runtime asks it to instantiate
// the tactic the plan names as a Step and enqueues the steps on a stream, with activations and
// workspace in memory from the backend's allocator.
#include <kiln/builder_config.h>
#include <kiln/host_tensor.h>
#include <kiln/network.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace kiln {

// How a tactic lays out the tensors it reads and writes.
enum class TensorFormat {
  kLinear,  // row-major in the declared dim order (NCHW for images)
  kNHWC,    // channels last
};
inline const char* toString(TensorFormat format) { return format == TensorFormat::kNHWC ? "nhwc" : "linear"; }

// One candidate implementation of a layer. The id is stable across builds and versions
// ("cpu.conv.im2col_gemm", "cublaslt.gemm.algo17.fp16.relu_bias") so timing caches and plans can
// name it.
struct Tactic {
  std::string id;
  // Layouts of the activations it reads (per input; empty: all linear) and writes, when the engine
  // keeps a tensor in another layout between two steps that agree on it (Backend::tensorFormats).
  std::vector<TensorFormat> inputFormats;
  TensorFormat outputFormat = TensorFormat::kLinear;
  uint64_t workspaceBytes = 0;  // scratch it needs at the input dims it was listed for
  // Whether it can also read and write channels-last activations, so that the engine can skip
  // re-layouts between it and its neighbours (the builder prefers it on a near tie).
  bool takesChannelsLast = false;

  TensorFormat inputFormat(size_t input) const {
    return input < inputFormats.size() ? inputFormats[input] : TensorFormat::kLinear;
  }
};

// Concrete dims of a layer's inputs, parallel to layer.inputs (empty where absent or unknown).
using LayerShapes = std::vector<std::vector<int64_t>>;
// A layer's weights: its constant inputs, parallel to layer.inputs (nullptr for activations).
using LayerWeights = std::vector<const HostTensor*>;

// What the builder knows about a layer's inputs when it asks for tactics.
struct LayerInputs {
  std::vector<DataType> types;  // declared dtypes
  LayerShapes dims;             // at the shapes the workspace must cover (the profile's max point)
  LayerWeights weights;
};

inline LayerWeights layerWeights(const Network& network, const Layer& layer) {
  LayerWeights weights;
  for (const auto& name : layer.inputs) {
    const Tensor* t = name.empty() ? nullptr : network.findTensor(name);
    weights.push_back(t && t->isConstant() ? &*t->constant : nullptr);
  }
  return weights;
}

struct SupportVerdict {
  bool supported = true;
  std::string why;  // when not supported: the reason, for the build report
};

struct DeviceInfo {
  std::string name;               // "CPU (x86-64, 2 threads)", "NVIDIA H200"
  std::string computeCapability;  // "9.0"; empty on the CPU
};

// Device memory (host memory on the CPU).
class DeviceAllocator {
 public:
  virtual ~DeviceAllocator() = default;
  // `bytes` aligned to `alignment` (a power of two); throws kRuntimeError when out of memory.
  virtual void* allocate(uint64_t bytes, uint64_t alignment = 256) = 0;
  virtual void free(void* memory) = 0;
};

// Shared ownership of memory from a DeviceAllocator (tensors viewing it can co-own it:
// HostTensor::inArena(dtype, dims, buffer, offset)).
using DeviceBuffer = std::shared_ptr<void>;
inline DeviceBuffer allocateBuffer(DeviceAllocator& allocator, uint64_t bytes, uint64_t alignment = 256) {
  return DeviceBuffer(allocator.allocate(bytes, alignment), [&allocator](void* p) { allocator.free(p); });
}

class Event;

// An ordered queue of device work (cudaStream_t). The CPU's streams run work as it is enqueued.
class Stream {
 public:
  virtual ~Stream() = default;
  // Copies in stream order; either side may be host or device memory.
  virtual void copy(void* destination, const void* source, uint64_t bytes) = 0;
  // Work enqueued later waits until `event` has completed.
  virtual void wait(const Event& event) = 0;
  // Blocks the host until all enqueued work has finished.
  virtual void synchronize() = 0;
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

// Where a step puts output i (dtype and dims from shape inference); an empty tensor lets the step
// allocate it itself (host backends only).
using OutputAllocator = std::function<HostTensor(size_t index, DataType dtype, const std::vector<int64_t>& dims)>;
// Runs a subgraph attribute (If/Loop/Scan bodies) on the given inputs.
using SubgraphRunner = std::function<std::vector<Value>(const Network&, const std::vector<Value>&)>;

// One run of a step. Tensors are views of the backend's memory (host memory on the CPU).
struct StepIO {
  std::vector<const Value*> inputs;  // parallel to layer.inputs; nullptr for absent optional inputs
  OutputAllocator outputs;
  void* workspace = nullptr;  // at least Step::workspaceBytes(inputs) bytes
  uint64_t workspaceBytes = 0;
  SubgraphRunner subgraphs;         // control flow bodies (CPU backend)
  Network::ScopeLookup scopeTypes;  // types of the outer values the bodies read
};

// A layer instantiated with one tactic, its weights prepared (uploaded, repacked); runs many times.
class Step {
 public:
  virtual ~Step() = default;
  virtual const Tactic& tactic() const = 0;
  // Scratch bytes for a run on these inputs.
  virtual uint64_t workspaceBytes(const std::vector<const Value*>& inputs) const = 0;
  // Enqueues the layer on `stream` and returns its outputs.
  virtual std::vector<Value> enqueue(const StepIO& io, Stream& stream) const = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual BackendKind kind() const = 0;
  virtual DeviceInfo device() const = 0;
  // Whether the backend can run `layer` with its activations in `precision`.
  virtual SupportVerdict supports(const Layer& layer, Precision precision) const = 0;
  // Candidate implementations for these inputs, best guess first (never empty for a supported
  // layer), each with the workspace it needs at inputs.dims.
  virtual std::vector<Tactic> tactics(const Layer& layer, Precision precision, const LayerInputs& inputs) const = 0;
  // The layer on tactic.id (the layer must outlive the step). Throws kInvalidArgument naming the
  // layer and the tactic when the backend has no such tactic for it (e.g. a plan from another
  // Kiln version).
  virtual std::unique_ptr<Step> instantiate(const Layer& layer, const Tactic& tactic,
                                            const LayerWeights& weights) const = 0;
  // The activations an engine keeps in a non-linear layout: those whose producer and every reader
  // run tactics (`tactics`, parallel to network.layers(), with each layer's activation precision)
  // that take that layout, so no re-layout runs between them. Graph outputs stay linear. The
  // runtime passes the layouts to instantiate() in Tactic::inputFormats / outputFormat.
  virtual std::unordered_map<std::string, TensorFormat> tensorFormats(const Network& network,
                                                                      const std::vector<std::string>& tactics,
                                                                      const std::vector<Precision>& precisions) const {
    (void)network, (void)tactics, (void)precisions;
    return {};
  }
  virtual DeviceAllocator& allocator() const = 0;
  virtual std::unique_ptr<Stream> createStream() const = 0;
  virtual std::unique_ptr<Event> createEvent() const = 0;
};

std::unique_ptr<Backend> makeCpuBackend();

}  // namespace kiln
