#include "cpu_device.h"

#include <kiln/error.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

namespace kiln {
namespace {

class CpuAllocator : public DeviceAllocator {
 public:
  void* allocate(uint64_t bytes, uint64_t alignment) override {
    if (alignment == 0 || (alignment & (alignment - 1)) != 0)
      throw Error(ErrorCode::kInvalidArgument, "alignment " + std::to_string(alignment) + " is not a power of two");
    alignment = std::max<uint64_t>(alignment, sizeof(void*));
    // aligned_alloc wants a size that is a multiple of the alignment, and a non-zero one.
    const uint64_t rounded = (std::max<uint64_t>(bytes, 1) + alignment - 1) / alignment * alignment;
    void* p = std::aligned_alloc(alignment, rounded);
    if (!p) throw Error(ErrorCode::kRuntimeError, "out of host memory allocating " + std::to_string(bytes) + " bytes");
    return p;
  }
  void free(void* memory) override { std::free(memory); }
};

class CpuEvent : public Event {
 public:
  void record(Stream&) override {
    time_ = std::chrono::steady_clock::now();
    recorded_ = true;
  }
  void synchronize() override {}
  double millisecondsSince(const Event& start) const override {
    const auto& begin = dynamic_cast<const CpuEvent&>(start);
    if (!recorded_ || !begin.recorded_)
      throw Error(ErrorCode::kInvalidArgument, "elapsed time between events that were never recorded");
    return std::chrono::duration<double, std::milli>(time_ - begin.time_).count();
  }

 private:
  std::chrono::steady_clock::time_point time_;
  bool recorded_ = false;
};

class CpuStream : public Stream {
 public:
  void copy(void* destination, const void* source, uint64_t bytes) override {
    if (bytes) std::memcpy(destination, source, bytes);
  }
  void wait(const Event&) override {}  // every event on the CPU has completed when recorded
  void synchronize() override {}
  void* native() override { return nullptr; }
};

}  // namespace

DeviceAllocator& cpuAllocator() {
  static CpuAllocator allocator;
  return allocator;
}

std::unique_ptr<Stream> makeCpuStream() { return std::make_unique<CpuStream>(); }
std::unique_ptr<Event> makeCpuEvent() { return std::make_unique<CpuEvent>(); }

}  // namespace kiln
