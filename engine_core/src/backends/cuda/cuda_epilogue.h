#pragma once
// The epilogue of kiln.FusedConv / kiln.FusedMatMul on the GPU where the library call did not take
// it: y = act(y + bias + residual) or act(y + bias) + residual, as elementwise kernels over the
// output in place (kernels/cuda/elementwise), in the output's storage type.
#include "../common/fused_epilogue.h"
#include "cuda_device.h"

#include <kernels/cuda/common/element_type.h>

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::cuda {

class ElementwiseEpilogue {
 public:
  // The layer's activation and residual placement when it is a fused layer, else nothing to do.
  // `storage` is the output's type; Clip's bounds are uploaded in it once, here.
  ElementwiseEpilogue(const Layer& layer, DataType storage, CudaDevice& device);

  const FusedEpilogue& attributes() const { return epilogue_; }
  kernels::Activation activation() const { return epilogue_.activation; }
  // Scratch bytes the activation needs for an output of `elements` (SiLU keeps its sigmoid there).
  uint64_t scratchBytes(int64_t elements) const { return scratchBytes(epilogue_, elements, storage_); }
  static uint64_t scratchBytes(const FusedEpilogue& epilogue, int64_t elements, DataType storage);

  // What is left to do after the library call, in this order.
  struct Work {
    const void* bias = nullptr;  // added first, broadcast from biasDims to the output
    std::vector<int64_t> biasDims;
    const void* residualBefore = nullptr;  // output-shaped, added before the activation
    bool activate = true;
    const void* residualAfter = nullptr;  // output-shaped, added after it
  };
  // Applies `work` to y (dims `dims`) in place; `scratch` holds scratchBytes(count) bytes.
  void apply(void* y, const std::vector<int64_t>& dims, const Work& work, void* scratch, cudaStream_t stream) const;

 private:
  void check(cudaError_t status, const char* what) const;

  const Layer& layer_;
  FusedEpilogue epilogue_;
  DataType storage_;
  kernels::cuda::ElementType type_;
  DeviceCopy clipLow_, clipHigh_;
};

}  // namespace kiln::cuda
