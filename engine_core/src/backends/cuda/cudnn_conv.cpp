#include "cudnn_conv.h"

#include <kiln/error.h>

#include <cuda_runtime.h>

#include <climits>
#include <optional>
#include <utility>

namespace kiln::cuda {
namespace {

// The handles one thread made, destroyed when it ends.
struct ThreadHandles {
  std::vector<std::pair<int, cudnnHandle_t>> handles;
  ~ThreadHandles() {
    for (auto& [device, handle] : handles) cudnnDestroy(handle);
  }
};

std::string dimsText(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

std::vector<int> toInts(const std::vector<int64_t>& values, const std::string& what) {
  std::vector<int> out;
  for (int64_t v : values) {
    if (v < 0 || v > INT_MAX)
      throw Error(ErrorCode::kUnsupported,
                  what + ": the value " + std::to_string(v) + " does not fit cuDNN's int dims");
    out.push_back(int(v));
  }
  return out;
}

// 1-D convolutions as 2-D with H = 1: dims get a 1 before the last one.
std::vector<int64_t> asAtLeast2d(std::vector<int64_t> dims) {
  if (dims.size() == 3) dims.insert(dims.end() - 1, 1);
  return dims;
}
std::vector<int64_t> spatialAsAtLeast2d(std::vector<int64_t> values, int64_t fill) {
  if (values.size() == 1) values.insert(values.begin(), fill);
  return values;
}

std::vector<int> packedStrides(const std::vector<int>& dims) {
  std::vector<int> strides(dims.size(), 1);
  for (size_t i = dims.size() - 1; i-- > 0;) strides[i] = strides[i + 1] * dims[i + 1];
  return strides;
}

}  // namespace

cudnnHandle_t cudnnHandleForThread(int device) {
  thread_local ThreadHandles mine;
  for (auto& [d, handle] : mine.handles)
    if (d == device) return handle;
  int current = 0;
  if (cudaGetDevice(&current) != cudaSuccess) current = device;
  if (current != device && cudaSetDevice(device) != cudaSuccess)
    throw Error(ErrorCode::kRuntimeError, "making a cuDNN handle: cannot switch to GPU " + std::to_string(device));
  cudnnHandle_t handle = nullptr;
  const cudnnStatus_t status = cudnnCreate(&handle);
  if (current != device) cudaSetDevice(current);
  checkCudnn(status, "making a cuDNN handle (cudnnCreate)");
  mine.handles.emplace_back(device, handle);
  return handle;
}

cudnnHandle_t cudnnHandleOnStream(int device, cudaStream_t stream, const std::string& what) {
  cudnnHandle_t handle = cudnnHandleForThread(device);
  if (const cudnnStatus_t status = cudnnSetStream(handle, stream); status != CUDNN_STATUS_SUCCESS)
    checkCudnn(status, what + ": cudnnSetStream");
  return handle;
}

void checkCudnn(cudnnStatus_t status, const std::string& what) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  char detail[512] = {};
  cudnnGetLastErrorString(detail, sizeof(detail));
  std::string text = what + ": " + cudnnGetErrorString(status);
  if (detail[0]) text += " (" + std::string(detail) + ")";
  throw Error(status == CUDNN_STATUS_NOT_SUPPORTED ? ErrorCode::kUnsupported : ErrorCode::kRuntimeError, text);
}

cudnnDataType_t cudnnTypeOf(DataType type) {
  switch (type) {
    case DataType::kFloat32:
      return CUDNN_DATA_FLOAT;
    case DataType::kFloat16:
      return CUDNN_DATA_HALF;
    case DataType::kBFloat16:
      return CUDNN_DATA_BFLOAT16;
    default:
      throw Error(ErrorCode::kUnsupported,
                  "cuDNN convolutions take float32, float16 or bfloat16, not " + std::string(toString(type)));
  }
}

std::string ConvProblem::describe() const {
  return std::string(backwardData ? "transposed " : "") + std::to_string(x.size() - 2) + "-D convolution x " +
         dimsText(x) + " w " + dimsText(w) + " y " + dimsText(y) + " pads " + dimsText(pads) + " strides " +
         dimsText(strides) + " dilations " + dimsText(dilations) + " groups " + std::to_string(groups) + " " +
         std::string(toString(type)) + (allowTensorOps ? "" : " (FMA math)");
}

CudnnConvolution::CudnnConvolution(const ConvProblem& problem) : problem_(problem) {
  const std::string what = "cuDNN descriptors for a " + problem.describe();
  try {
    const cudnnDataType_t type = cudnnTypeOf(problem.type);
    const std::vector<int> x = toInts(asAtLeast2d(problem.x), what), w = toInts(asAtLeast2d(problem.w), what),
                           y = toInts(asAtLeast2d(problem.y), what);
    const std::vector<int> pads = toInts(spatialAsAtLeast2d(problem.pads, 0), what),
                           strides = toInts(spatialAsAtLeast2d(problem.strides, 1), what),
                           dilations = toInts(spatialAsAtLeast2d(problem.dilations, 1), what);
    checkCudnn(cudnnCreateTensorDescriptor(&xDesc_), what + " (cudnnCreateTensorDescriptor)");
    checkCudnn(cudnnCreateTensorDescriptor(&yDesc_), what + " (cudnnCreateTensorDescriptor)");
    checkCudnn(cudnnCreateFilterDescriptor(&wDesc_), what + " (cudnnCreateFilterDescriptor)");
    checkCudnn(cudnnCreateConvolutionDescriptor(&convDesc_), what + " (cudnnCreateConvolutionDescriptor)");
    checkCudnn(cudnnSetTensorNdDescriptor(xDesc_, type, int(x.size()), x.data(), packedStrides(x).data()),
               what + " (cudnnSetTensorNdDescriptor x)");
    checkCudnn(cudnnSetTensorNdDescriptor(yDesc_, type, int(y.size()), y.data(), packedStrides(y).data()),
               what + " (cudnnSetTensorNdDescriptor y)");
    checkCudnn(cudnnSetFilterNdDescriptor(wDesc_, type, CUDNN_TENSOR_NCHW, int(w.size()), w.data()),
               what + " (cudnnSetFilterNdDescriptor)");
    // fp16 / bf16 tensors accumulate in fp32 (cuDNN's "pseudo half" configuration).
    checkCudnn(cudnnSetConvolutionNdDescriptor(convDesc_, int(pads.size()), pads.data(), strides.data(),
                                               dilations.data(), CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
               what + " (cudnnSetConvolutionNdDescriptor)");
    checkCudnn(cudnnSetConvolutionGroupCount(convDesc_, int(problem.groups)),
               what + " (cudnnSetConvolutionGroupCount)");
    checkCudnn(cudnnSetConvolutionMathType(convDesc_, problem.allowTensorOps ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH),
               what + " (cudnnSetConvolutionMathType)");
    // The forward convolution's output (from y for a transposed one) must be what Kiln worked out.
    const cudnnTensorDescriptor_t from = problem.backwardData ? yDesc_ : xDesc_;
    const std::vector<int>& expected = problem.backwardData ? x : y;
    std::vector<int> out(expected.size());
    checkCudnn(cudnnGetConvolutionNdForwardOutputDim(convDesc_, from, wDesc_, int(out.size()), out.data()),
               what + " (cudnnGetConvolutionNdForwardOutputDim)");
    if (out != expected)
      throw Error(ErrorCode::kInternal, what + ": cuDNN's forward output would be " +
                                            dimsText(std::vector<int64_t>(out.begin(), out.end())) + ", not " +
                                            dimsText(std::vector<int64_t>(expected.begin(), expected.end())));
  } catch (...) {
    release();
    throw;
  }
}

CudnnConvolution::~CudnnConvolution() { release(); }

void CudnnConvolution::release() {
  if (xDesc_) cudnnDestroyTensorDescriptor(xDesc_);
  if (yDesc_) cudnnDestroyTensorDescriptor(yDesc_);
  if (wDesc_) cudnnDestroyFilterDescriptor(wDesc_);
  if (convDesc_) cudnnDestroyConvolutionDescriptor(convDesc_);
  xDesc_ = yDesc_ = nullptr;
  wDesc_ = nullptr;
  convDesc_ = nullptr;
}

CudnnConvolution::Algorithm CudnnConvolution::choose(cudnnHandle_t handle, uint64_t workspaceLimit,
                                                     const std::string& what) {
  const std::string context = what + ": choosing a cuDNN algorithm for a " + problem_.describe();
  // Each candidate's math: FMA only for exact fp32; tensor cores otherwise, never down-converting
  // fp32 inputs to fp16 (TF32 is the most an fp32 layer allows).
  auto mathFor = [&](cudnnMathType_t suggested) {
    if (!problem_.allowTensorOps) return CUDNN_FMA_MATH;
    return suggested == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION ? CUDNN_TENSOR_OP_MATH : suggested;
  };
  std::string seen;
  auto tryCandidate = [&](int algo, cudnnMathType_t suggested, cudnnStatus_t status) -> std::optional<Algorithm> {
    if (status != CUDNN_STATUS_SUCCESS) return std::nullopt;
    const cudnnMathType_t math = mathFor(suggested);
    if (cudnnSetConvolutionMathType(convDesc_, math) != CUDNN_STATUS_SUCCESS) return std::nullopt;
    size_t bytes = 0;
    const cudnnStatus_t sized =
        problem_.backwardData
            ? cudnnGetConvolutionBackwardDataWorkspaceSize(handle, wDesc_, xDesc_, convDesc_, yDesc_,
                                                           cudnnConvolutionBwdDataAlgo_t(algo), &bytes)
            : cudnnGetConvolutionForwardWorkspaceSize(handle, xDesc_, wDesc_, convDesc_, yDesc_,
                                                      cudnnConvolutionFwdAlgo_t(algo), &bytes);
    seen += (seen.empty() ? "" : ", ") + std::to_string(algo) +
            (sized == CUDNN_STATUS_SUCCESS ? " (" + std::to_string(bytes) + " bytes)" : " (not supported)");
    if (sized != CUDNN_STATUS_SUCCESS || bytes > workspaceLimit) return std::nullopt;
    return Algorithm{algo, math, uint64_t(bytes)};
  };
  if (problem_.backwardData) {
    int count = 0;
    checkCudnn(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(handle, &count),
               context + " (cudnnGetConvolutionBackwardDataAlgorithmMaxCount)");
    std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perf(size_t(std::max(count, 1)));
    int returned = 0;
    checkCudnn(cudnnGetConvolutionBackwardDataAlgorithm_v7(handle, wDesc_, xDesc_, convDesc_, yDesc_, int(perf.size()),
                                                           &returned, perf.data()),
               context + " (cudnnGetConvolutionBackwardDataAlgorithm_v7)");
    for (int i = 0; i < returned; ++i)
      if (auto chosen = tryCandidate(int(perf[size_t(i)].algo), perf[size_t(i)].mathType, perf[size_t(i)].status))
        return *chosen;
  } else {
    int count = 0;
    checkCudnn(cudnnGetConvolutionForwardAlgorithmMaxCount(handle, &count),
               context + " (cudnnGetConvolutionForwardAlgorithmMaxCount)");
    std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(size_t(std::max(count, 1)));
    int returned = 0;
    checkCudnn(cudnnGetConvolutionForwardAlgorithm_v7(handle, xDesc_, wDesc_, convDesc_, yDesc_, int(perf.size()),
                                                      &returned, perf.data()),
               context + " (cudnnGetConvolutionForwardAlgorithm_v7)");
    for (int i = 0; i < returned; ++i)
      if (auto chosen = tryCandidate(int(perf[size_t(i)].algo), perf[size_t(i)].mathType, perf[size_t(i)].status))
        return *chosen;
  }
  throw Error(ErrorCode::kUnsupported, context + ": no algorithm fits in " + std::to_string(workspaceLimit) +
                                           " bytes of workspace (candidates: " + (seen.empty() ? "none" : seen) + ")");
}

void CudnnConvolution::run(cudnnHandle_t handle, const Algorithm& algorithm, const void* x, const void* w, void* y,
                           void* workspace, uint64_t workspaceBytes, const std::string& what) const {
  const float alpha = 1.0f, beta = 0.0f;  // float scaling for float, half and bfloat16 data
  const cudnnStatus_t status = problem_.backwardData
                                   ? cudnnConvolutionBackwardData(handle, &alpha, wDesc_, w, xDesc_, x, convDesc_,
                                                                  cudnnConvolutionBwdDataAlgo_t(algorithm.algo),
                                                                  workspace, size_t(workspaceBytes), &beta, yDesc_, y)
                                   : cudnnConvolutionForward(handle, &alpha, xDesc_, x, wDesc_, w, convDesc_,
                                                             cudnnConvolutionFwdAlgo_t(algorithm.algo), workspace,
                                                             size_t(workspaceBytes), &beta, yDesc_, y);
  if (status != CUDNN_STATUS_SUCCESS)  // the message is built on failure only: launches allocate nothing
    checkCudnn(status, what + ": " +
                           (problem_.backwardData ? "cudnnConvolutionBackwardData" : "cudnnConvolutionForward") +
                           " with algorithm " + std::to_string(algorithm.algo) + " on a " + problem_.describe());
}

}  // namespace kiln::cuda
