#pragma once
// A small persistent thread pool for CPU kernels. parallelFor splits [0, count) into chunks of at
// least `grain` items and runs fn(begin, end) on the pool's threads and the calling thread.
#include <cstdint>
#include <functional>

namespace kiln::kernels {

// Threads used by CPU kernels (defaults to the machine's hardware threads; KILN_NUM_THREADS overrides).
int cpuThreadCount();
void setCpuThreadCount(int threads);

void parallelFor(int64_t count, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

}  // namespace kiln::kernels
