#pragma once
// Loads plans and runs them: Runtime -> Engine (immutable, shareable) -> ExecutionContext.
#include <kiln/build_report.h>
#include <kiln/builder_config.h>
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
};

struct IOTensorInfo {
  std::string name;
  bool isInput = false;
  DataType dtype = DataType::kUndefined;
  Shape shape;  // may hold symbolic dims
};

class ExecutionContext;
struct EngineDescription;

class Engine {
 public:
  explicit Engine(std::shared_ptr<const EngineDescription> description);
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
  const EngineDescription& description() const { return *description_; }

 private:
  std::shared_ptr<const EngineDescription> description_;
};

class ExecutionContext {
 public:
  explicit ExecutionContext(std::shared_ptr<const EngineDescription> description);
  ~ExecutionContext();
  // Chooses the optimisation profile whose ranges the input shapes must lie in.
  void setOptimizationProfile(int index);
  int optimizationProfile() const { return profile_; }
  // Throws kiln::Error naming the input, the dimension and the allowed range when outside the profile.
  void setInputShape(const std::string& name, const std::vector<int64_t>& dims);
  // Binds host memory (CPU backend) or device memory (CUDA backend) for an input or output.
  void setTensorAddress(const std::string& name, void* address);
  std::vector<int64_t> tensorShape(const std::string& name) const;  // output shapes after a run
  void setProfiler(Profiler* profiler) { profiler_ = profiler; }
  // Sees every tensor a layer produces (name, layer, value in fp32 where stored narrower), for
  // per-layer accuracy comparisons. Slows execution; leave unset for speed.
  using TensorObserver = std::function<void(const std::string& tensor, const std::string& layer, const HostTensor&)>;
  void setTensorObserver(TensorObserver observer) { observer_ = std::move(observer); }
  // Runs on `stream` (CUDA backend; nullptr for the CPU backend, which runs synchronously).
  void enqueue(void* stream);
  void execute() { enqueue(nullptr); }

  // Convenience for hosts without manual binding: runs with the given inputs, returns outputs.
  std::map<std::string, HostTensor> run(const std::map<std::string, HostTensor>& inputs);

 private:
  struct State;
  std::shared_ptr<const EngineDescription> description_;
  std::unique_ptr<State> state_;
  int profile_ = 0;
  Profiler* profiler_ = nullptr;
  TensorObserver observer_;
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
