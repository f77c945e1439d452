#pragma once
// cuDNN for the CUDA backend's convolutions, through cuDNN's convolution API (still exported by
// cuDNN 9; its graph API is for the fused epilogues to come). Tensors are NCHW / NCDHW and dense;
// a 1-D convolution runs as a 2-D one with H = 1 (cuDNN's convolutions take 4-D and 5-D tensors).
// Pads are symmetric here: the caller pads or crops around asymmetric ones.
#include <kiln/data_type.h>

#include <cudnn.h>

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::cuda {

// cuDNN's handle for the calling thread on GPU `device`, made on first use and destroyed when the
// thread ends (cuDNN handles must not be shared between threads). Its stream is the caller's to set.
cudnnHandle_t cudnnHandleForThread(int device);
// The same handle with its stream set to `stream`; throws naming `what` where cuDNN refuses.
cudnnHandle_t cudnnHandleOnStream(int device, cudaStream_t stream, const std::string& what);

// Throws kiln::Error(kRuntimeError) "<what>: <status name>" unless `status` is success.
void checkCudnn(cudnnStatus_t status, const std::string& what);

// The cuDNN element type of a float DataType (float32, float16, bfloat16); throws for others.
cudnnDataType_t cudnnTypeOf(DataType type);

// One convolution. Forward: y = conv(x, w). Backward data (ConvTranspose): y = conv'(x, w), the
// gradient of a forward convolution from y to x with respect to its input, so x has the forward
// output's dims and w is [x channels, y channels / groups, kernel...].
struct ConvProblem {
  bool backwardData = false;
  std::vector<int64_t> x, w, y;                   // N, C, spatial... (1 to 3 spatial dims)
  std::vector<int64_t> pads, strides, dilations;  // per spatial dim; pads on both sides
  int64_t groups = 1;
  DataType type = DataType::kFloat32;
  bool allowTensorOps = true;  // false: FMA math only (exact fp32: no TF32)

  std::string describe() const;  // for messages
};

// The descriptors of one ConvProblem, made once per shape; not thread-safe (the chosen algorithm
// sets its math type on the convolution descriptor): one per execution context.
class CudnnConvolution {
 public:
  explicit CudnnConvolution(const ConvProblem& problem);
  ~CudnnConvolution();
  CudnnConvolution(const CudnnConvolution&) = delete;
  CudnnConvolution& operator=(const CudnnConvolution&) = delete;

  const ConvProblem& problem() const { return problem_; }

  struct Algorithm {
    int algo = 0;  // cudnnConvolutionFwdAlgo_t or cudnnConvolutionBwdDataAlgo_t
    cudnnMathType_t math = CUDNN_DEFAULT_MATH;
    uint64_t workspaceBytes = 0;
  };
  // cuDNN's heuristic's best algorithm that needs at most `workspaceLimit` bytes; sets its math
  // type on the descriptor. Throws (naming `what`) when none fits.
  Algorithm choose(cudnnHandle_t handle, uint64_t workspaceLimit, const std::string& what);
  // Enqueues y = conv(x, w) with `algorithm` (from choose) on the handle's stream.
  void run(cudnnHandle_t handle, const Algorithm& algorithm, const void* x, const void* w, void* y, void* workspace,
           uint64_t workspaceBytes, const std::string& what) const;

 private:
  void release();

  ConvProblem problem_;
  cudnnTensorDescriptor_t xDesc_ = nullptr, yDesc_ = nullptr;
  cudnnFilterDescriptor_t wDesc_ = nullptr;
  cudnnConvolutionDescriptor_t convDesc_ = nullptr;
};

}  // namespace kiln::cuda
