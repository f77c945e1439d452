#include "hold_stream.h"

#include "kernels/cuda/common/launch.cuh"

namespace kiln::kernels::cuda {
namespace {

__device__ __forceinline__ uint64_t globalNanoseconds() {
#if defined(KILN_CUDA_EMULATION)
  return 0;  // the host emulator has no device clock: no wait
#else
  uint64_t ns;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  return ns;
#endif
}

__global__ void holdKernel(uint64_t nanoseconds) {
  const uint64_t start = globalNanoseconds();
  while (globalNanoseconds() - start < nanoseconds) {
#if !defined(KILN_CUDA_EMULATION) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
    __nanosleep(1000);
#else
    break;
#endif
  }
}

}  // namespace

cudaError_t holdStream(uint64_t nanoseconds, cudaStream_t stream) {
  if (nanoseconds == 0) return cudaSuccess;
  holdKernel<<<1, 1, 0, stream>>>(nanoseconds);
  return launchStatus();
}

}  // namespace kiln::kernels::cuda
