#pragma once
// Convolutions on NC(D)HW tensors. float and double go through im2col + BLAS GEMM (direct GEMM for
// pointwise convolutions, direct loops for depthwise ones); integer convolutions accumulate in int32.
// float32 convolutions can also run one named algorithm (the CPU backend's conv tactics) with
// caller-provided scratch memory.
#include "../common/spatial_window.h"

#include "../fused/epilogue.h"

#include <cstdint>

namespace kiln::kernels {

struct ConvShape {
  int64_t batch = 1;
  int64_t inChannels = 1;   // C of X
  int64_t outChannels = 1;  // M of Y
  int64_t group = 1;
  SpatialWindow window;  // for convTranspose: the forward convolution from Y to X (in = Y, out = X)

  bool operator==(const ConvShape&) const = default;
};

// Y[N, M, out] = X[N, C, in] (*) W[M, C/group, kernel] + bias[M]; bias may be null.
template <class T>
void convolution(const ConvShape& shape, const T* x, const T* w, const T* bias, T* y);

// The same for float with a fused epilogue (activation / residual), applied to each block of Y as
// soon as its GEMM finishes, while the block is still in cache.
void convolution(const ConvShape& shape, const float* x, const float* w, const float* bias,
                 const Epilogue& epilogue, float* y);

// The float32 algorithms, each a tactic of the CPU backend. kAuto picks by shape (pointwise ->
// kPointwiseGemm, depthwise -> kDepthwise, else kIm2colGemm).
enum class ConvAlgorithm {
  kAuto,
  kIm2colGemm,     // im2col into scratch, then a BLAS GEMM per (batch item, group); any shape
  kPointwiseGemm,  // 1x1, stride 1, no padding: the image is the GEMM's B, no im2col
  kDepthwise,      // group == input channels: direct loops per output plane
  kDirect,         // direct loops over 16 output channels at a time (direct_conv.h); any shape
};

// Whether `algorithm` can compute this convolution.
bool convAlgorithmApplies(ConvAlgorithm algorithm, const ConvShape& shape);
// Scratch bytes `algorithm` needs for this shape on the current thread count.
uint64_t convWorkspaceBytes(ConvAlgorithm algorithm, const ConvShape& shape);

// The fused float32 convolution with a chosen algorithm. `workspace` holds at least
// convWorkspaceBytes(algorithm, shape) bytes, 64-byte aligned, or is null (scratch is then
// allocated here). Throws std::invalid_argument when the algorithm does not apply.
void convolution(const ConvShape& shape, const float* x, const float* w, const float* bias,
                 const Epilogue& epilogue, float* y, ConvAlgorithm algorithm, void* workspace);

// The same in exact integer arithmetic; X and W already have their zero points subtracted.
void convolutionInt32(const ConvShape& shape, const int32_t* x, const int32_t* w, int32_t* y);

// QLinearConv's output stage: out = saturate(round_half_even((acc + bias[m]) * multiplier[m]) + zeroPoint)
// for acc[batch, channels, plane]; bias may be null, multiplier has one value per channel.
template <class Q>
void requantize(int64_t batch, int64_t channels, int64_t plane, const int32_t* acc, const int32_t* bias,
                const float* multiplier, int32_t zeroPoint, Q* out);

// Transposed convolution (the gradient of convolution with respect to its input):
// Y[N, M, window.in] from X[N, C, window.out] and W[C, M/group, kernel], plus bias[M] (may be null).
template <class T>
void convTranspose(const ConvShape& shape, const T* x, const T* w, const T* bias, T* y);

}  // namespace kiln::kernels
