#include "test_device_backend.h"

#include <kiln/error.h>

#include "../../ops/conversion.h"
#include "../../ops/fused.h"
#include "../cpu/cpu_device.h"

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

namespace kiln {
namespace {

constexpr uintptr_t kDeviceTag = uintptr_t(1) << 55;

bool isTagged(const void* p) { return (reinterpret_cast<uintptr_t>(p) & kDeviceTag) != 0; }
void* tag(void* p) { return reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(p) | kDeviceTag); }

// The device's memory: host allocations handed out tagged, with their sizes to check accesses.
class TestDeviceAllocator : public DeviceAllocator {
 public:
  void* allocate(uint64_t bytes, uint64_t alignment) override {
    void* host = cpuAllocator().allocate(std::max<uint64_t>(bytes, 1), alignment);
    std::memset(host, 0xFF, std::max<uint64_t>(bytes, 1));  // poison: unwritten floats read as NaN
    std::lock_guard lock(mutex_);
    sizes_[reinterpret_cast<uintptr_t>(host)] = bytes;
    return tag(host);
  }

  void free(void* memory) override {
    if (!memory) return;
    void* host = hostAddress(memory, 0, "free");
    std::lock_guard lock(mutex_);
    sizes_.erase(reinterpret_cast<uintptr_t>(host));
    cpuAllocator().free(host);
  }

  // The host address behind device address `p`, checking that [p, p + bytes) lies inside one live
  // allocation; throws kInternal naming `what` when not.
  void* hostAddress(const void* p, uint64_t bytes, const char* what) const {
    if (!isTagged(p)) {
      std::ostringstream s;
      s << "test device: " << what << " was given " << p << ", which is not device memory";
      throw Error(ErrorCode::kInternal, s.str());
    }
    const uintptr_t host = reinterpret_cast<uintptr_t>(p) & ~kDeviceTag;
    std::lock_guard lock(mutex_);
    auto it = sizes_.upper_bound(host);
    if (it == sizes_.begin() || (--it, host + bytes > it->first + it->second)) {
      std::ostringstream s;
      s << "test device: " << what << " of " << bytes << " bytes at " << p << " is outside every live allocation";
      throw Error(ErrorCode::kInternal, s.str());
    }
    return reinterpret_cast<void*>(host);
  }

 private:
  mutable std::mutex mutex_;
  std::map<uintptr_t, uint64_t> sizes_;  // host address -> bytes
};

TestDeviceAllocator& deviceMemory() {
  static TestDeviceAllocator allocator;
  return allocator;
}

// Host memory as given; device memory translated (and checked).
const void* readable(const void* p, uint64_t bytes, const char* what) {
  return isTagged(p) ? deviceMemory().hostAddress(p, bytes, what) : p;
}

class TestDeviceStream : public Stream {
 public:
  void copy(void* destination, const void* source, uint64_t bytes) override {
    if (!bytes) return;
    std::memcpy(const_cast<void*>(readable(destination, bytes, "a copy's destination")),
                readable(source, bytes, "a copy's source"), bytes);
  }
  void wait(const Event&) override {}
  void synchronize() override {}
  void* native() override { return nullptr; }
};

// The host view of a device view (memory checked), as the CPU kernels read it.
TensorView onHost(const TensorView& view, const char* what) {
  TensorView host = view;
  if (!view.data) return host;
  if (view.space == MemorySpace::kDevice) {
    if (!isTagged(view.data))
      throw Error(ErrorCode::kInternal, std::string("test device: ") + what + " is marked device memory but is not");
    host.data = deviceMemory().hostAddress(view.data, view.byteSize(), what);
  } else if (isTagged(view.data) && !view.isConstant) {
    throw Error(ErrorCode::kInternal, std::string("test device: ") + what + " is marked host memory but is device memory");
  }
  host.space = MemorySpace::kHost;
  return host;
}

// A CPU step run on device memory.
class TestDeviceStep : public Step {
 public:
  explicit TestDeviceStep(std::unique_ptr<Step> cpu) : cpu_(std::move(cpu)) {}
  const Tactic& tactic() const override { return cpu_->tactic(); }
  uint64_t workspaceBytes(std::span<const TensorView> inputs, std::span<const TensorView> outputs) const override {
    return cpu_->workspaceBytes(inputs, outputs);
  }
  std::unique_ptr<StepState> createState() const override { return cpu_->createState(); }

  void enqueue(const StepArgs& args, Stream& stream) const override {
    std::vector<TensorView> inputs, outputs;
    for (const TensorView& v : args.inputs) inputs.push_back(onHost(v, "a step's input"));
    for (const TensorView& v : args.outputs) outputs.push_back(onHost(v, "a step's output"));
    StepArgs host = args;
    host.inputs = inputs;
    host.outputs = outputs;
    if (args.workspace) host.workspace = deviceMemory().hostAddress(args.workspace, args.workspaceBytes, "the workspace");
    cpu_->enqueue(host, stream);
  }

 private:
  std::unique_ptr<Step> cpu_;
};

// kiln.Copy between host and device memory, on the stream.
class CopyStep : public Step {
 public:
  explicit CopyStep(Tactic tactic) : tactic_(std::move(tactic)) {}
  const Tactic& tactic() const override { return tactic_; }
  uint64_t workspaceBytes(std::span<const TensorView>, std::span<const TensorView>) const override { return 0; }
  void enqueue(const StepArgs& args, Stream& stream) const override {
    stream.copy(args.outputs[0].data, args.inputs[0].data, args.inputs[0].byteSize());
  }

 private:
  Tactic tactic_;
};

std::set<std::string> refusedOps() {
  std::set<std::string> ops;
  if (const char* list = std::getenv("KILN_TEST_DEVICE_REFUSE")) {
    std::stringstream s(list);
    for (std::string op; std::getline(s, op, ',');)
      if (!op.empty()) ops.insert(op);
  }
  return ops;
}

bool isCopy(const Layer& layer) { return layer.domain == fused::kDomain && layer.opType == conversion::kCopy; }

class TestDeviceBackend : public Backend {
 public:
  TestDeviceBackend() : cpu_(makeCpuBackend()) {}

  std::string name() const override { return "cpu-device"; }
  BackendKind kind() const override { return BackendKind::kTestDevice; }
  DeviceInfo device() const override { return {"test device (CPU kernels on guarded memory)", ""}; }
  MemorySpace memorySpace() const override { return MemorySpace::kDevice; }
  bool convertsFloatStorage() const override { return false; }

  SupportVerdict supports(const Layer& layer, Precision precision) const override {
    if (refusedOps().count(layer.opType)) return {false, layer.opType + " is refused by KILN_TEST_DEVICE_REFUSE"};
    if (isCopy(layer)) return {};
    return cpu_->supports(layer, precision);
  }

  std::vector<Tactic> tactics(const Layer& layer, Precision precision, const LayerInputs& inputs) const override {
    if (isCopy(layer)) return {{"cpu-device.copy"}};
    auto tactics = cpu_->tactics(layer, precision, inputs);
    return tactics;
  }

  std::unique_ptr<Step> instantiate(const Layer& layer, const Tactic& tactic,
                                    const LayerSignature& signature) const override {
    if (isCopy(layer)) return std::make_unique<CopyStep>(tactic);
    return std::make_unique<TestDeviceStep>(cpu_->instantiate(layer, tactic, signature));
  }

  std::unordered_map<std::string, TensorFormat> tensorFormats(const Network& network,
                                                              const std::vector<std::string>& tactics,
                                                              const std::vector<Precision>& precisions) const override {
    return cpu_->tensorFormats(network, tactics, precisions);
  }

  DeviceAllocator& allocator() const override { return deviceMemory(); }
  std::unique_ptr<Stream> createStream() const override { return std::make_unique<TestDeviceStream>(); }
  std::unique_ptr<Event> createEvent() const override { return makeCpuEvent(); }

 private:
  std::unique_ptr<Backend> cpu_;
};

}  // namespace

std::unique_ptr<Backend> makeTestDeviceBackend() { return std::make_unique<TestDeviceBackend>(); }

}  // namespace kiln
