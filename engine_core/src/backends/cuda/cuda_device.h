#pragma once
// What the CUDA backend's steps share: the GPU it runs on, its memory, and the library handles
// (made on first use; cuDNN's one per thread, as cuDNN asks).
#include "cuda_runtime_support.h"

#include <string>

namespace kiln::cuda {

struct CudaDevice {
  int ordinal = 0;
  cudaDeviceProp properties{};
  std::string computeCapability;  // "9.0"
  CudaAllocator allocator;
};

}  // namespace kiln::cuda
