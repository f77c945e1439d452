#pragma once
// The CPU backend's device side: host memory, and streams that run work as it is enqueued (so an
// event completes when it is recorded and holds the steady_clock time of that moment).
#include "../backend.h"

namespace kiln {

DeviceAllocator& cpuAllocator();
std::unique_ptr<Stream> makeCpuStream();
std::unique_ptr<Event> makeCpuEvent();

}  // namespace kiln
