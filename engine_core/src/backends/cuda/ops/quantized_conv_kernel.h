#pragma once
// Kiln's own 8-bit convolution kernel (kernels/cuda/quant/int8_conv.h) as tactics of the quantized
// graph-conv step (quantized_conv_graph.h): "kiln.int8conv.<storage>.t<tile>" and
// "kiln.fp8conv.<storage>.t<tile>", one per block tile, timed by the builder against cuDNN's 8-bit
// graphs and cuBLASLt. The step does the rest as for a cuDNN plan (the input quantized into padded
// NHWC on entry, the KRSC filter, residual and output re-layouts through its workspace); the kernel
// replaces the cuDNN plan and needs no workspace of its own. Its 8-bit output divides by the output
// scale as the CPU does (quant_math.h), so an int8 chain matches the CPU exactly.
#include "../cudnn_conv_graph.h"

#include <kernels/cuda/quant/int8_conv.h>

#include <optional>
#include <string>
#include <vector>

namespace kiln::cuda {

bool isKilnConvTactic(const std::string& tacticId);

// The tile a kiln.int8conv / fp8conv tactic names; nullopt for another id.
std::optional<kernels::cuda::Int8ConvTile> kilnConvTileOf(const std::string& tacticId);

std::string kilnConvTacticId(bool fp8, const std::string& storage, kernels::cuda::Int8ConvTile tile);

// The kernel's problem for the step's graph problem (channel-padded NCHW dims of NHWC tensors);
// pointers and the epilogue left to the caller.
kernels::cuda::Int8ConvProblem kilnConvProblemOf(const ConvGraphProblem& p);

// The tiles worth timing for this problem on a device of compute capability `sm` (80 for 8.0):
// none below sm_80 (int8) / sm_89 (fp8) or where the kernel refuses the geometry; the 128-channel
// tile only where the layer has more than 64 output channels.
std::vector<kernels::cuda::Int8ConvTile> kilnConvTiles(const ConvGraphProblem& p, int sm);

}  // namespace kiln::cuda
