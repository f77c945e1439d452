#pragma once
// cuBLASLt's and cuDNN's documented arithmetic on the host, over the descriptors and problems the
// CUDA backend's steps make, so that their planning (layouts, transposes, strides, batches, pads,
// crops, chunks) is checked against the CPU's semantics without a GPU. fp32 data, double sums.
#include "backends/cuda/cublaslt_matmul.h"
#include "backends/cuda/cudnn_conv.h"

#include <cstdint>
#include <vector>

namespace kiln::test {

int64_t countOf(const std::vector<int64_t>& dims);
std::vector<float> randomValues(int64_t count, uint32_t seed);
// Element `linear` of a tensor of dims `outDims`, read from `t` (dims `dims`, starting at `base`)
// broadcast NumPy-style.
float broadcastAt(const std::vector<float>& t, const std::vector<int64_t>& dims, const std::vector<int64_t>& outDims,
                  int64_t linear, size_t base = 0);
float geluTanh(float x);

// cublasLtMatmul as documented, read from the descriptors: column-major layouts (rows, cols, ld,
// batch count and stride), D = epilogue(alpha · op(A) · op(B) + beta · C), the bias (one value per
// row of D) added before RELU or GELU (the tanh form). Pointers in LtGemm::run's order (Kiln's A,
// then Kiln's B). Records a gtest failure where the descriptors do not fit each other.
void emulateLtMatmul(const cuda::LtGemm& gemm, float alpha, const float* a, const float* b, float beta, const float* c,
                     float* d, const float* bias);

// cuDNN's convolution forward, or backward data, as documented: cross-correlation, the same pad on
// both sides, groups, dense NCHW; the forward output size must be cuDNN's. Returns y.
std::vector<float> emulateCudnnConvolution(const cuda::ConvProblem& problem, const std::vector<float>& x,
                                           const std::vector<float>& w);

// kernels/cuda/layout's pad in constant mode (zeros; negative pads crop), through its own geometry.
std::vector<float> emulateZeroPad(const std::vector<float>& src, const std::vector<int64_t>& srcDims,
                                  const std::vector<int64_t>& padsBegin, const std::vector<int64_t>& dstDims);

}  // namespace kiln::test
