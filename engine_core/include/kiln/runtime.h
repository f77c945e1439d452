#pragma once
// Loads plans and runs them: Runtime -> Engine (immutable, shareable) -> ExecutionContext.
#include <kiln/build_report.h>
#include <kiln/builder_config.h>
#include <kiln/communicator.h>
#include <kiln/host_tensor.h>
#include <kiln/logger.h>
#include <kiln/shape.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace kiln {

// Per-layer timing callback (like TensorRT's IProfiler).
class Profiler {
 public:
  virtual ~Profiler() = default;
  virtual void reportLayerTime(const std::string& layerName, double milliseconds) = 0;
};

struct PlanInfo {
  uint32_t formatVersion = 0;
  std::string kilnVersion, backend, deviceName, computeCapability, buildFlags;
  // Tensor parallelism: the plan is rank `rank` of a model split over `worldSize` ranks
  // (BuilderConfig::tensorParallelSize); 1 and 0 for a whole model.
  int worldSize = 1;
  int rank = 0;
};

struct IOTensorInfo {
  std::string name;
  bool isInput = false;
  DataType dtype = DataType::kUndefined;
  Shape shape;  // may hold symbolic dims
};

// Memory for outputs whose size is known only once the engine has run (a data-dependent shape, as
// after NonZero), like TensorRT's IOutputAllocator. The engine asks for it during enqueue and then
// tells the shape; the memory is in the output's memory space (device memory for CUDA engines).
class OutputBufferAllocator {
 public:
  virtual ~OutputBufferAllocator() = default;
  // Memory for `bytes` (at least) of output `name`; `current` is what was given last time, or null.
  virtual void* reallocateOutput(const std::string& name, void* current, uint64_t bytes, uint64_t alignment) = 0;
  virtual void notifyShape(const std::string& name, const std::vector<int64_t>& dims) = 0;
};

class ExecutionContext;
class Stream;
struct EnginePlan;
struct EngineProgram;
struct SlotState;

class Engine {
 public:
  explicit Engine(std::shared_ptr<const EnginePlan> plan);
  ~Engine();
  const PlanInfo& planInfo() const;
  const BuildReport& report() const;
  std::vector<IOTensorInfo> ioTensors() const;
  const std::vector<OptimizationProfile>& profiles() const;
  std::unique_ptr<ExecutionContext> createExecutionContext() const;
  // Layer information as JSON (like TensorRT's IEngineInspector).
  std::string inspectJson() const;
  // The activations this engine keeps in a non-linear layout between layers ("nhwc": channels-last
  // between oneDNN convolutions); the others are linear.
  std::map<std::string, std::string> nonLinearTensorLayouts() const;
  // Where each input and output lives: "host" or "device" (setTensorAddress takes memory there).
  std::string tensorMemorySpace(const std::string& name) const;
  const EnginePlan& plan() const { return *plan_; }
  const EngineProgram& program() const { return *program_; }

 private:
  std::shared_ptr<const EnginePlan> plan_;
  std::shared_ptr<const EngineProgram> program_;
};

// One set of activations for running an engine; several contexts of one engine run at once. A run
// has three phases: setInputShape works out every tensor's dims (the shape phase, with shape-tensor
// arithmetic on the host), setTensorAddress binds inputs and outputs, enqueue launches the steps on
// a stream without allocating or converting anything.
class ExecutionContext {
 public:
  ExecutionContext(std::shared_ptr<const EnginePlan> plan, std::shared_ptr<const EngineProgram> program);
  ~ExecutionContext();
  // Chooses the optimisation profile whose ranges the input shapes must lie in.
  void setOptimizationProfile(int index);
  int optimizationProfile() const { return profile_; }
  // Throws kiln::Error naming the input, the dimension and the allowed range when outside the profile.
  void setInputShape(const std::string& name, const std::vector<int64_t>& dims);
  // Binds memory for an input or output: host memory for CPU engines and shape inputs, device
  // memory for device engines (Engine::tensorMemorySpace says which).
  void setTensorAddress(const std::string& name, void* address);
  // For outputs whose size depends on data: where their memory comes from.
  void setOutputAllocator(const std::string& name, OutputBufferAllocator* allocator);
  // Dims of any input or output once the input shapes are set (outputs whose size depends on data:
  // after a run). Throws naming the tensor when they are not known.
  std::vector<int64_t> tensorShape(const std::string& name) const;
  void setProfiler(Profiler* profiler) { profiler_ = profiler; }
  // Sees every tensor a layer produces (name, layer, value in fp32 where stored narrower), for
  // per-layer accuracy comparisons. Slows execution; leave unset for speed.
  using TensorObserver = std::function<void(const std::string& tensor, const std::string& layer, const HostTensor&)>;
  void setTensorObserver(TensorObserver observer) { observer_ = std::move(observer); }
  // Runs on `stream` (a cudaStream_t for CUDA engines; nullptr: the backend's own stream). The CPU
  // backend runs synchronously.
  void enqueue(void* stream);
  void execute() { enqueue(nullptr); }
  // CUDA graphs: after a warm-up run for the current shapes and addresses, enqueue records the
  // launch once and replays the recording from then on (re-recorded when shapes or addresses
  // change). Throws naming the layers when the engine synchronises inside (data-dependent shapes,
  // host layers between device ones, collectives on the GPU) or the backend cannot record. Off
  // while a profiler or tensor observer is set.
  void setGraphCapture(bool enabled);
  // The communicator its collective layers (kiln.AllReduce, ...) exchange data through: this
  // rank's member of the group the engine's ranks run in. Throws naming a layer whose world_size
  // differs from the communicator's size. An engine without collectives needs none; one whose
  // collectives have world_size 1 runs them as copies without one. When a run fails, the
  // communicator is aborted so the other ranks fail at once instead of waiting out the timeout.
  void setCommunicator(std::shared_ptr<Communicator> communicator);
  Communicator* communicator() const { return communicator_.get(); }

  // Convenience for hosts without manual binding: copies host inputs in, runs, returns host outputs.
  std::map<std::string, HostTensor> run(const std::map<std::string, HostTensor>& inputs);

 private:
  struct State;
  // The shape phase and binding, when shapes, shape-input values or addresses changed.
  void prepareShapes();
  // The steps in plan order on their backends' streams (the engine backend's is `engine`).
  void launchSteps(Stream& engine);
  void enqueueSteps(void* stream);
  std::map<std::string, HostTensor> runOnHost(const std::map<std::string, HostTensor>& inputs);
  const SlotState& slotState(int slot) const;

  std::shared_ptr<const EnginePlan> plan_;
  std::shared_ptr<const EngineProgram> program_;
  std::unique_ptr<State> state_;
  int profile_ = 0;
  Profiler* profiler_ = nullptr;
  TensorObserver observer_;
  std::shared_ptr<Communicator> communicator_;
};

class Runtime {
 public:
  explicit Runtime(Logger& logger = silentLogger()) : logger_(logger) {}
  // Verifies and loads a plan (throws kiln::Error for corrupt, foreign or unsupported plans).
  std::shared_ptr<Engine> load(const std::vector<uint8_t>& plan) const;
  std::shared_ptr<Engine> loadFile(const std::string& path) const;

 private:
  Logger& logger_;
};

}  // namespace kiln
