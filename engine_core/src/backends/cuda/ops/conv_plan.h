#pragma once
// How the CUDA backend's Conv, ConvTranspose and kiln.FusedConv steps (cuda_conv.cpp) map a
// layer onto one cuDNN convolution with symmetric pads, and the pad before or the crop after it
// that uneven pads and transposed convolutions need. Plain host code: tests/cuda_plans checks it
// against the CPU kernels with cuDNN's arithmetic emulated on the host.
#include "../../backend.h"
#include "../cuda_precision.h"
#include "../cudnn_conv.h"

#include <cstdint>
#include <vector>

namespace kiln::cuda {

enum ConvInput : size_t { kConvX = 0, kConvW = 1, kConvBias = 2, kConvResidual = 3 };

// What a layer computes, from its attributes and precision.
struct ConvSpec {
  Layer base;  // the Conv / ConvTranspose (a fused layer's base)
  bool transpose = false;
  bool hasBias = false, hasResidual = false;
  DataType storage = DataType::kFloat32;
  bool allowTensorOps = true;
};

ConvSpec convSpecOf(const Layer& layer, Precision precision, DataType outputDeclared);

// A forward Conv, or a kiln.FusedConv over one (Kiln's own convolution kernels take these).
bool isForwardConv(const Layer& layer);

// One set of input dims as a cuDNN convolution plus the pad / crop around it.
struct ConvPlan {
  ConvProblem problem;
  std::vector<int64_t> outputDims;
  bool empty = false;
  // Conv with uneven pads: x padded into the workspace first.
  bool padInput = false;
  std::vector<int64_t> padBegin;  // per dim of x (N, C, spatial...)
  // ConvTranspose that cuDNN cannot write directly: its result in the workspace, then cropped.
  bool cropOutput = false;
  std::vector<int64_t> cropBegin;  // negative: the output starts that far into the result
  uint64_t bufferBytes = 0;        // the padded input or uncropped result
  std::vector<int64_t> biasDims;   // [M, 1, ...]: one value per output channel
};

// The plan for X and W of these dims; throws naming the layer for dims cuDNN does not take.
ConvPlan convPlanOf(const Layer& layer, const ConvSpec& spec, const std::vector<int64_t>& x,
                    const std::vector<int64_t>& w);

}  // namespace kiln::cuda
