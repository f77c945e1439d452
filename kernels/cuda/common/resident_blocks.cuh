#pragma once
// Launch sizing for kernels whose blocks loop over their work items (a persistent grid): how many
// blocks the whole device holds at once, so that no second wave starts late and finishes alone,
// and the dynamic shared memory above 48 KiB that a launch has to ask for.
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

// Above 48 KiB a block's dynamic shared memory has to be asked for (per device: before every launch).
template <class Kernel>
cudaError_t allowSharedBytes(Kernel kernel, int64_t sharedBytes) {
#if !defined(KILN_CUDA_EMULATION)
  if (sharedBytes > 48 * 1024)
    return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(sharedBytes));
#else
  (void)kernel, (void)sharedBytes;
#endif
  return cudaSuccess;
}

}  // namespace kiln::kernels::cuda
