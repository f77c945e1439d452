#pragma once
// A 2-D convolution with its epilogue as one cuDNN operation graph: y = act(conv(x, w) + bias +
// residual) (or the residual after the activation), the intermediate values virtual fp32 tensors
// that never reach memory. Tensors are channels-last (NHWC, filters KRSC) in float16 or bfloat16,
// which is what cuDNN's runtime-fusion engines on Hopper take. Pads may differ between the sides.
#include "../common/fused_epilogue.h"
#include "cudnn_graph.h"

#include <kiln/data_type.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kiln::cuda {

// How much of the epilogue the graph holds; the rest runs as Kiln's elementwise kernels.
enum class ConvFusion { kFull, kWithoutActivation, kConvolutionOnly };

// The unique ids the variant pack binds.
enum ConvGraphTensor : int64_t { kGraphX = 1, kGraphW = 2, kGraphY = 3, kGraphBias = 4, kGraphResidual = 5 };

struct ConvGraphProblem {
  std::vector<int64_t> x, w, y;  // logical N, C, H, W (w: K, C, R, S); x and w may have padded C
  std::vector<int64_t> prePads, postPads, strides, dilations;
  DataType type = DataType::kFloat16;
  bool bias = false, residual = false;
  FusedEpilogue epilogue;  // activation and residual placement
  ConvFusion fusion = ConvFusion::kFull;
  int64_t alignment = 16;  // of every pointer bound

  std::string describe() const;
  // Whether cuDNN's pointwise ops compute this activation as Kiln's kernels do.
  static bool graphHasActivation(const FusedEpilogue& epilogue);
  // What the graph leaves to Kiln's kernels: the bias, the residual, the activation.
  bool leavesBias() const { return bias && fusion == ConvFusion::kConvolutionOnly; }
  bool leavesActivation() const;
  bool leavesResidual() const {
    return residual && (fusion == ConvFusion::kConvolutionOnly ||
                        (!epilogue.residualBeforeActivation && leavesActivation()));
  }
};

// The finalized operation graph of a problem; throws (kUnsupported) where cuDNN refuses the graph.
std::unique_ptr<CudnnOperationGraph> makeConvGraph(cudnnHandle_t handle, const ConvGraphProblem& problem,
                                                   const std::string& what);

}  // namespace kiln::cuda
