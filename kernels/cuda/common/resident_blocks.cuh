#pragma once
// How many blocks of a kernel the whole device holds at once: the grid of kernels whose blocks loop
// over their work items (a persistent grid), so that no second wave starts late and finishes alone.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

namespace kiln::kernels::cuda {

template <class Kernel>
int residentBlocks(Kernel kernel, int threads, int64_t sharedBytes) {
  static int smCounts[64] = {};
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= 64) device = 0;
  if (smCounts[device] == 0) {
    cudaDeviceProp prop;
    smCounts[device] =
        cudaGetDeviceProperties(&prop, device) == cudaSuccess ? std::max(1, prop.multiProcessorCount) : 1;
  }
  int perSm = 1;
#if !defined(KILN_CUDA_EMULATION)
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, kernel, threads, size_t(sharedBytes)) != cudaSuccess)
    perSm = 1;
#else
  (void)kernel, (void)threads, (void)sharedBytes;
#endif
  return smCounts[device] * std::max(1, perSm);
}

}  // namespace kiln::kernels::cuda
