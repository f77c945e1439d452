#pragma once
// Fused attention as cuDNN's single SDPA forward operation (CUDNN_BACKEND_OPERATION_SDPA_FWD_
// DESCRIPTOR, cuDNN 9.13.1 on): O = softmax(Q · Kᵀ · scale) · V in one graph of one operation,
// Q, K, V and O 4-D [B, H, L, D] views in float16 or bfloat16 with any strides whose head dim is
// contiguous (so interleaved heads and a packed QKV product are read in place), fp32 softmax and
// accumulation. The scale is passed by value at launch, so layers that differ only in it share a
// graph. No stats output (inference), no mask: cuDNN 9.19's operation has no bias or causal input.
#include "cudnn_graph.h"

#include <kiln/data_type.h>

#include <memory>
#include <string>
#include <vector>

namespace kiln::cuda {

// The unique ids the variant pack binds.
enum SdpaGraphTensor : int64_t { kSdpaQ = 1, kSdpaK = 2, kSdpaV = 3, kSdpaO = 4, kSdpaScale = 5 };

struct SdpaGraphProblem {
  std::vector<int64_t> dims[4], strides[4];  // Q, K, V, O as [B, H, L, D] (sdpa_plan.h's views)
  DataType type = DataType::kFloat16;
  int64_t alignment = 16;  // of every pointer bound

  std::string describe() const;  // everything the graph computes: the cache key
};

// Whether the loaded cuDNN has the single SDPA operation (9.13.1 on); `why` says which it is when not.
bool cudnnHasSdpaOperation(std::string* why = nullptr);

// The finalized graph; throws (kUnsupported) where cuDNN refuses it.
std::unique_ptr<CudnnOperationGraph> makeSdpaGraph(cudnnHandle_t handle, const SdpaGraphProblem& problem,
                                                   const std::string& what);

// Graphs and plans made once on this thread (cudnn_graph.h's caches); null where cuDNN refuses.
std::shared_ptr<CudnnOperationGraph> cachedSdpaGraph(cudnnHandle_t handle, const SdpaGraphProblem& problem,
                                                     const std::string& what);
std::shared_ptr<CudnnExecutionPlan> cachedSdpaPlan(cudnnHandle_t handle, const CudnnOperationGraph& graph,
                                                   const SdpaGraphProblem& problem, const EngineChoice& choice);

}  // namespace kiln::cuda
