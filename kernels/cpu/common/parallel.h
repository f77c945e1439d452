#pragma once
// Parallel loops for CPU kernels, on OpenMP's threads (shared with oneDNN). parallelFor splits
// [0, count) into chunks of at least `grain` items and runs fn(begin, end) on those threads and the
// calling thread; inside a region it runs inline. An exception from fn reaches the caller.
#include <cstdint>
#include <functional>

namespace kiln::kernels {

// Threads used by CPU kernels (defaults to the machine's hardware threads; KILN_NUM_THREADS overrides).
int cpuThreadCount();
void setCpuThreadCount(int threads);

void parallelFor(int64_t count, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

}  // namespace kiln::kernels
