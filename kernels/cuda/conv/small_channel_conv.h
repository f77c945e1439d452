#pragma once
// Forward 2-D convolution of an input with few channels (C <= 8: the RGB stem of ResNet and its
// kin, Conv 7x7 stride 2, 3 -> 64 channels) on the tensor cores, with bias and activation fused,
// and optionally the max pool that follows (ResNet's 3x3 stride 2 after its stem).
// cuDNN pads such an input to 8 channels and runs mostly on zeros; here an implicit GEMM
// Y[N·P·Q, K] = im2col(X)[N·P·Q, R·S·C padded to 16] · W[K, R·S·C padded]ᵀ (mma.sync m16n8k16, fp32
// accumulation) builds its im2col rows in registers from an input window in shared memory: a block
// takes row segments of up to 112 output pixels of one output row (a warp 16 of them, times 64
// output channels). The R input rows (all C channels) a segment reads are copied once into one of
// two window buffers with cp.async (4, 8 or 16 bytes a copy where the rows' alignment allows, zero
// filled for padding), the next segment's while this one multiplies; each A fragment's pairs are
// gathered from there with a per-k offset table, so each input byte is read from global memory
// about R / strideH times (from L2 after the first). The filter is fp32 [K, C, R, S] (ONNX's
// layout), turned into the tensors' type in shared memory once a block: blocks loop over segments.
// The epilogue stages act(sum + bias), rounded once, in shared memory and stores a segment's pixels
// as whole 16-byte vectors of channels (channels-last) or channel planes (NCHW). X is NCHW or NHWC;
// float16 or bfloat16; any window, stride, padding and dilation.
// With a fused max pool a block takes a strip of pooled rows of one image: it computes the output
// rows the strip's windows cover in order (one row of overlap with the next strip is computed
// again), folds each staged row into the pooled rows it belongs to (kept in shared memory until
// their last row), and writes only the pooled map. Asynchronous; no allocation.
#include <kernels/cpu/fused/epilogue.h>
#include <kernels/cuda/common/element_type.h>

#include <cuda_runtime.h>

#include <cstdint>
#include <optional>

namespace kiln::kernels::cuda {

inline constexpr int64_t kSmallConvMaxChannels = 8;     // input channels
inline constexpr int64_t kSmallConvMaxReduction = 512;  // R·S·C (the filter tile in shared memory)

// A max pool over the convolution's activated output (no dilation; pads are ignored positions).
struct FusedMaxPool {
  int64_t kernelH = 0, kernelW = 0, strideH = 1, strideW = 1, padTop = 0, padLeft = 0;
  int64_t outH = 0, outW = 0;  // the pooled map's size (ceil mode and the end pads follow from it)
};

struct SmallChannelConvProblem {
  int64_t batch = 0, channels = 0, inH = 0, inW = 0, outH = 0, outW = 0, outChannels = 0;
  int64_t kernelH = 1, kernelW = 1, strideH = 1, strideW = 1, dilationH = 1, dilationW = 1;
  int64_t padTop = 0, padLeft = 0;           // the bottom and right pads follow from the output size
  bool xChannelsLast = false;                // X [N, H, W, C], else [N, C, H, W]
  bool yChannelsLast = true;                 // Y [N, P, Q, K] (the fast path), else [N, K, P, Q]
  ElementType type = ElementType::kFloat16;  // of X, the bias and Y: float16 or bfloat16
  Activation activation = Activation::kNone;
  float alpha = 0, beta = 0;  // Clip: min, max; HardSigmoid: alpha, beta; LeakyRelu: alpha
  // Y = MaxPool(act(conv + bias)) [N, K, pool.outH, pool.outW] when set (Y's layout as above).
  std::optional<FusedMaxPool> pool;
};

// Why the kernel cannot run the problem (channel counts, the type, the window's shared memory,
// 32-bit index limits; with a pool: an output row wider than one 112-pixel segment, a pool window
// the output size does not fit), or null where it can.
const char* smallChannelConvRefusal(const SmallChannelConvProblem& p);

// x, y 16-byte aligned; filter fp32 [K, C, R, S]; bias [K] in p.type or null. cudaErrorInvalidValue
// where the refusal names a reason or a pointer is null or misaligned; an empty output is a no-op.
cudaError_t smallChannelConv(const SmallChannelConvProblem& p, const void* x, const float* filter, const void* bias,
                             void* y, cudaStream_t stream);

}  // namespace kiln::kernels::cuda
