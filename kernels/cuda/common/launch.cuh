#pragma once
// Launch conventions shared by the CUDA kernels. Every launch function takes plain pointers, sizes
// and a cudaStream_t, enqueues asynchronously, and returns the cudaError_t of the launch
// (cudaGetLastError), so the engine can name the layer in its message. Nothing here synchronises.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

namespace kiln::kernels::cuda {

constexpr int kThreadsPerBlock = 256;

// Blocks for a grid-stride loop over n items: enough to fill the GPU, not one per item.
inline unsigned int gridFor(int64_t n, int threads = kThreadsPerBlock) {
  const int64_t blocks = (n + threads - 1) / threads;
  return unsigned(std::clamp<int64_t>(blocks, 1, int64_t(65535) * 8));
}

// The status of the launch just enqueued (configuration errors show here; faults show later, at a
// synchronisation).
inline cudaError_t launchStatus() { return cudaGetLastError(); }

#define KILN_GRID_STRIDE_LOOP(i, n) \
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); i += int64_t(blockDim.x) * gridDim.x)

}  // namespace kiln::kernels::cuda
