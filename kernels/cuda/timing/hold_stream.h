#pragma once
// A kernel that only waits: one thread spins on the GPU's global timer for `nanoseconds`. Enqueued
// before a timed region, it holds the stream back while the host enqueues the region's launches,
// so they then run back to back at the device's pace and the events around them time the GPU
// alone, not the host's launch overhead (nvbench's "blocking kernel", with a fixed length instead
// of a host flag). Asynchronous on `stream`.
#include <cuda_runtime.h>

#include <cstdint>

namespace kiln::kernels::cuda {

cudaError_t holdStream(uint64_t nanoseconds, cudaStream_t stream);

}  // namespace kiln::kernels::cuda
