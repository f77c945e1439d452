#include "cudnn_sdpa_graph.h"

#include "cudnn_conv.h"

#include <kiln/error.h>
#include <kiln/shape.h>

namespace kiln::cuda {

namespace {
constexpr size_t kMinimumSdpaVersion = 91301;  // cuDNN 9.13.1: the single SDPA operation
const char* const kSdpaTensorNames[4] = {"Q", "K", "V", "O"};
}  // namespace

std::string SdpaGraphProblem::describe() const {
  std::string text = "cuDNN SDPA " + std::string(toString(type));
  for (size_t t = 0; t < 4; ++t)
    text += std::string(" ") + kSdpaTensorNames[t] + " " + dimsToString(dims[t]) + "/" + dimsToString(strides[t]);
  return text + ", alignment " + std::to_string(alignment);
}

bool cudnnHasSdpaOperation(std::string* why) {
#if CUDNN_VERSION >= 91301
  const size_t version = cudnnGetVersion();
  if (version >= kMinimumSdpaVersion) return true;
  if (why)
    *why = "cuDNN " + std::to_string(version) + " has no single SDPA operation (" +
           std::to_string(kMinimumSdpaVersion) + " on)";
#else
  if (why) *why = "Kiln was built against cuDNN headers without the single SDPA operation (9.13.1 on)";
#endif
  return false;
}

std::unique_ptr<CudnnOperationGraph> makeSdpaGraph(cudnnHandle_t handle, const SdpaGraphProblem& p,
                                                   const std::string& what) {
  const std::string context = what + ": " + p.describe();
#if CUDNN_VERSION >= 91301
  const cudnnDataType_t type = cudnnTypeOf(p.type);
  std::vector<CudnnDescriptor> parts;
  for (size_t t = 0; t < 4; ++t)
    parts.push_back(cudnnTensor(kSdpaQ + int64_t(t), type, p.dims[t], p.strides[t], p.alignment, false, context));
  parts.push_back(cudnnScalarByValue(kSdpaScale, context));
  CudnnDescriptor op(CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR, context);
  op.setDescriptor(CUDNN_ATTR_OPERATION_SDPA_FWD_QDESC, parts[0])
      .setDescriptor(CUDNN_ATTR_OPERATION_SDPA_FWD_KDESC, parts[1])
      .setDescriptor(CUDNN_ATTR_OPERATION_SDPA_FWD_VDESC, parts[2])
      .setDescriptor(CUDNN_ATTR_OPERATION_SDPA_FWD_ODESC, parts[3])
      .setDescriptor(CUDNN_ATTR_OPERATION_SDPA_FWD_SCALEDESC, parts[4]);
  if (!op.tryFinalize()) throw Error(ErrorCode::kUnsupported, context + ": cuDNN refuses the SDPA operation");
  std::vector<CudnnDescriptor> operations;
  operations.push_back(std::move(op));
  return std::make_unique<CudnnOperationGraph>(handle, std::move(operations), std::move(parts), context);
#else
  (void)handle;
  throw Error(ErrorCode::kUnsupported, context + ": built against cuDNN headers without the SDPA operation");
#endif
}

std::shared_ptr<CudnnOperationGraph> cachedSdpaGraph(cudnnHandle_t handle, const SdpaGraphProblem& p,
                                                     const std::string& what) {
  return cachedGraph(handle, p.describe(), [&] { return makeSdpaGraph(handle, p, what); });
}

std::shared_ptr<CudnnExecutionPlan> cachedSdpaPlan(cudnnHandle_t handle, const CudnnOperationGraph& graph,
                                                   const SdpaGraphProblem& p, const EngineChoice& choice) {
  return cachedPlan(handle, graph, p.describe(), choice);
}

}  // namespace kiln::cuda
