#pragma once
// What the CUDA backend's steps share: the GPU it runs on, its memory, and the library handles
// (made on first use; cuDNN's one per thread, as cuDNN asks: cudnn_conv.h).
#include "cuda_runtime_support.h"

#include <memory>
#include <mutex>
#include <string>

namespace kiln::cuda {

struct CudaDevice {
  int ordinal = 0;
  cudaDeviceProp properties{};
  std::string computeCapability;  // "9.0"
  CudaAllocator allocator;
  // cuBLASLt's handle, thread-safe and so shared by every step; made by cublasLtHandle()
  // (cublaslt_matmul.h) on first use, destroyed before the allocator.
  std::once_flag cublasLtOnce;
  std::shared_ptr<void> cublasLt;
};

}  // namespace kiln::cuda
