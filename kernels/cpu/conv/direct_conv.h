#pragma once
// A direct float32 convolution without im2col: each task makes 16 output channels of one output
// row, keeping a block of 6 outputs x 16 channels in vector registers while it runs over every input
// channel and kernel tap (one broadcast input value times 16 packed weights per tap). Padding is
// resolved once per image by copying it into a zero-bordered scratch image, so the inner loops
// have no bounds checks and any stride or dilation reads the same way.
#include "conv.h"

#include <cstdint>
#include <vector>

namespace kiln::kernels {

// Output channels computed together (two AVX2 registers).
constexpr int64_t kDirectConvChannelBlock = 16;

// W[M, C/group, kernel...] (kernelSize taps) repacked as
// [group][block of 16 output channels][C/group][kernel][16], the last block of each group zero-filled.
std::vector<float> packDirectConvWeights(int64_t group, int64_t outChannels, int64_t channelsPerGroup,
                                         int64_t kernelSize, const float* w);

// Scratch bytes: one zero-bordered image when the convolution has padding, else none.
uint64_t directConvWorkspaceBytes(const ConvShape& shape);

// Y = epilogue(conv(X, W) + bias) with weights from packDirectConvWeights; `workspace` holds
// directConvWorkspaceBytes(shape) bytes (may be null when that is 0).
void directConvolution(const ConvShape& shape, const float* x, const float* packedWeights, const float* bias,
                       const Epilogue& epilogue, float* y, float* workspace);

}  // namespace kiln::kernels
