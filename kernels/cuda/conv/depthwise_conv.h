#pragma once
// Depthwise 2-D convolution (group = input channels = output channels) on channels-last tensors,
// with its epilogue fused: y = act(conv(x, w) + bias + residual) or act(conv(x, w) + bias) +
// residual, the CPU's fused-epilogue semantics (kernels/cpu/fused/epilogue.h). MobileNet's and
// EfficientNet's depthwise layers are memory-bound: cuDNN runs them channels-first with the
// epilogue as more passes over memory, and forces re-layouts around them in channels-last chains.
// One thread makes a 16-byte vector of channels (fp32 accumulation) of several neighbouring output
// pixels of a row, and neighbouring threads make neighbouring vectors, so a warp's loads are whole
// 16-byte vectors side by side; the filter is fp32 [KH, KW, C]. 3x3 and 5x5 windows at horizontal
// stride 1 (8 pixels a thread) or 2 (4) slide along the row: each input pixel of a window row is
// loaded once per thread and each row's taps once, not once per output pixel and tap (the cache
// traffic, not memory, bounded the one-pixel-a-thread kernel). Other windows, strides and
// dilations take 4 pixels a thread, loading a tap's weights once for them.
// float32, float16, bfloat16. Asynchronous; no allocation; empty outputs are a no-op.
#include <kernels/cpu/fused/epilogue.h>
#include <kernels/cuda/common/element_type.h>

#include <cuda_runtime.h>

#include <cstdint>

namespace kiln::kernels::cuda {

struct DepthwiseConv2d {
  int64_t batch = 0, channels = 0, inH = 0, inW = 0, outH = 0, outW = 0;
  int64_t kernelH = 1, kernelW = 1, strideH = 1, strideW = 1, dilationH = 1, dilationW = 1;
  int64_t padTop = 0, padLeft = 0;  // the bottom and right pads follow from the output size
};

struct DepthwiseEpilogue {
  const void* bias = nullptr;      // [C] in the tensors' type, or null
  const void* residual = nullptr;  // like y (channels-last), or null
  bool residualBeforeActivation = true;
  Activation activation = Activation::kNone;
  float alpha = 0, beta = 0;  // Clip: min, max; HardSigmoid: alpha, beta; LeakyRelu: alpha
};

// Whether the kernel takes the problem (index math in 32 bits; any channel count).
bool depthwiseConvTakes(const DepthwiseConv2d& p);

// x [N, inH, inW, C], filter fp32 [KH, KW, C], y [N, outH, outW, C].
cudaError_t depthwiseConv2dChannelsLast(const DepthwiseConv2d& p, const void* x, const float* filter,
                                        const DepthwiseEpilogue& epilogue, void* y, ElementType type,
                                        cudaStream_t stream);

}  // namespace kiln::kernels::cuda
