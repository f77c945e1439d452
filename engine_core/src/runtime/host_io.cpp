// ExecutionContext::run: the convenience path for hosts that hold their data in host memory. It
// binds host inputs directly (CPU engines) or copies them into context-owned device buffers, lets
// the engine write host outputs directly or copies them back, and gives outputs whose size depends
// on data memory through an output allocator.
#include <kiln/error.h>
#include <kiln/runtime.h>

#include "../plan/engine_plan.h"
#include "context_slots.h"
#include "engine_program.h"

#include <map>

namespace kiln {
namespace {

// Output memory for data-dependent outputs: host tensors, or device buffers copied back later.
class CollectingAllocator : public OutputBufferAllocator {
 public:
  CollectingAllocator(const Backend& backend, MemorySpace space, DataType dtype)
      : backend_(backend), space_(space), dtype_(dtype) {}

  void* reallocateOutput(const std::string&, void*, uint64_t bytes, uint64_t alignment) override {
    if (space_ == MemorySpace::kDevice) {
      device_ = allocateBuffer(backend_.allocator(), bytes, alignment);
      return device_.get();
    }
    host_ = HostTensor(DataType::kUInt8, {int64_t(bytes)});
    return host_.rawData();
  }
  void notifyShape(const std::string&, const std::vector<int64_t>& dims) override { dims_ = dims; }

  const std::vector<int64_t>& dims() const { return dims_; }
  const void* memory() const { return space_ == MemorySpace::kDevice ? device_.get() : host_.rawData(); }

 private:
  const Backend& backend_;
  MemorySpace space_;
  DataType dtype_;
  DeviceBuffer device_;
  HostTensor host_;
  std::vector<int64_t> dims_;
};

}  // namespace

std::map<std::string, HostTensor> ExecutionContext::run(const std::map<std::string, HostTensor>& given) {
  try {
    return runOnHost(given);
  } catch (const std::exception& e) {
    if (communicator_) communicator_->abort(e.what());  // as enqueue: the other ranks fail now
    throw;
  }
}

std::map<std::string, HostTensor> ExecutionContext::runOnHost(const std::map<std::string, HostTensor>& given) {
  const EngineProgram& p = *program_;
  for (const auto& [name, t] : given) {
    auto it = p.slotOf.find(name);
    if (it == p.slotOf.end() || !p.slots[size_t(it->second)].graphInput)
      throw Error(ErrorCode::kInvalidArgument, "'" + name + "' is not an input of the engine");
  }
  auto stream = p.engine->createStream();
  std::vector<DeviceBuffer> deviceMemory;  // for this run's device inputs and outputs
  for (int s : p.inputSlots) {
    const SlotInfo& info = p.slots[size_t(s)];
    auto it = given.find(info.name);
    if (it == given.end()) throw Error(ErrorCode::kInvalidArgument, "input '" + info.name + "' was not given a value");
    const HostTensor& tensor = it->second;
    if (tensor.dtype() != info.declared->dtype)
      throw Error(ErrorCode::kInvalidArgument, "input '" + info.name + "' must be " +
                                                   std::string(toString(info.declared->dtype)) + ", got " +
                                                   std::string(toString(tensor.dtype())));
    setInputShape(info.name, tensor.dims());
    if (info.place.space == MemorySpace::kHost) {
      setTensorAddress(info.name, const_cast<void*>(tensor.rawData()));  // steps never write their inputs
      continue;
    }
    deviceMemory.push_back(allocateBuffer(p.engine->allocator(), std::max<uint64_t>(tensor.byteSize(), 1), 256));
    stream->copy(deviceMemory.back().get(), tensor.rawData(), tensor.byteSize());
    setTensorAddress(info.name, deviceMemory.back().get());
  }
  stream->synchronize();

  std::map<std::string, HostTensor> results;
  std::map<int, DeviceBuffer> deviceOutputs;
  std::map<int, std::unique_ptr<CollectingAllocator>> collectors;
  for (int s : p.outputSlots) {
    const SlotInfo& info = p.slots[size_t(s)];
    if (info.graphInput || info.object) continue;
    prepareShapes();
    const SlotState& state = slotState(s);
    const std::vector<int64_t> dims = state.dims;
    if (!state.known) {  // depends on data: sized while it runs
      collectors[s] = std::make_unique<CollectingAllocator>(*p.engine, info.place.space, info.place.storage);
      setOutputAllocator(info.name, collectors[s].get());
      continue;
    }
    setOutputAllocator(info.name, nullptr);
    if (info.place.space == MemorySpace::kHost) {
      HostTensor out(info.place.storage, dims);
      setTensorAddress(info.name, out.rawData());
      results[info.name] = std::move(out);
    } else {
      HostTensor probe(info.place.storage, dims);
      deviceOutputs[s] = allocateBuffer(p.engine->allocator(), std::max<uint64_t>(probe.byteSize(), 1), 256);
      setTensorAddress(info.name, deviceOutputs[s].get());
    }
  }
  enqueue(nullptr);

  for (int s : p.outputSlots) {
    const SlotInfo& info = p.slots[size_t(s)];
    if (info.graphInput) {
      results[info.name] = given.at(info.name).clone();
      continue;
    }
    if (info.object) {
      const Value& v = slotState(s).value;
      if (v.isSequence() || !v.hasElement)
        throw Error(ErrorCode::kRuntimeError, "engine output '" + info.name + "' was not computed as a tensor");
      results[info.name] = v.tensor;
      continue;
    }
    if (auto c = collectors.find(s); c != collectors.end()) {
      HostTensor out(info.place.storage, c->second->dims());
      stream->copy(out.rawData(), c->second->memory(), out.byteSize());
      results[info.name] = std::move(out);
    } else if (auto d = deviceOutputs.find(s); d != deviceOutputs.end()) {
      HostTensor out(info.place.storage, slotState(s).dims);
      stream->copy(out.rawData(), d->second.get(), out.byteSize());
      results[info.name] = std::move(out);
    }
  }
  stream->synchronize();
  for (const auto& [s, collector] : collectors) setOutputAllocator(p.slots[size_t(s)].name, nullptr);
  return results;
}

}  // namespace kiln
