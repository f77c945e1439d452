#pragma once
// A 2-D convolution with its epilogue as one cuDNN operation graph: y = act(conv(x, w) + bias +
// residual) (or the residual after the activation), the intermediate values virtual fp32 tensors
// that never reach memory. Tensors are channels-last (NHWC, filters KRSC) in float16 or bfloat16,
// which is what cuDNN's runtime-fusion engines on Hopper take. Pads may differ between the sides.
// A quantized graph (int8 / fp8 layers) takes 8-bit x and w, sums exactly (int32; fp32 for fp8) and
// dequantizes the sums per output channel in the graph before the same epilogue, writing float16 /
// bfloat16 or the 8-bit type again.
#include "../common/fused_epilogue.h"
#include "cudnn_graph.h"

#include <kernels/cpu/conv/conv.h>

#include <kiln/data_type.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kiln::cuda {

// How much of the epilogue the graph holds; the rest runs as Kiln's elementwise kernels.
enum class ConvFusion { kFull, kWithoutActivation, kConvolutionOnly };

enum class QuantizedOperands { kNone, kInt8, kFp8 };

// The unique ids the variant pack binds.
enum ConvGraphTensor : int64_t {
  kGraphX = 1,
  kGraphW = 2,
  kGraphY = 3,
  kGraphBias = 4,
  kGraphResidual = 5,
  kGraphScale = 6,        // quantized graphs: [1, K, 1, 1] float32 multipliers of the sums
  kGraphOutputScale = 7,  // quantized outputs: [1, 1, 1, 1] float32, 1 / the output's scale
};

struct ConvGraphProblem {
  std::vector<int64_t> x, w, y;  // logical N, C, H, W (w: K, C, R, S); x and w may have padded C
  std::vector<int64_t> prePads, postPads, strides, dilations;
  DataType type = DataType::kFloat16;  // of y, the residual and the bias (an int8 graph: its float storage)
  // x and w int8 (sums int32) or fp8 e4m3 (sums fp32), the sums times kGraphScale; bias float32.
  QuantizedOperands quantized = QuantizedOperands::kNone;
  bool quantizedOutput = false;  // (quantized graphs) y int8 / e4m3: the result times kGraphOutputScale
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
    return residual &&
           (fusion == ConvFusion::kConvolutionOnly || (!epilogue.residualBeforeActivation && leavesActivation()));
  }
};

// A 2-D convolution's problem for channel-padded NHWC operands: x [N, paddedC, H, W], w [K, paddedC,
// KH, KW], y and the window (pads, strides, dilations) from `shape` (the CPU kernels' geometry).
ConvGraphProblem convGraphGeometry(const kernels::ConvShape& shape, const std::vector<int64_t>& x, int64_t outChannels,
                                   int64_t paddedC);

// The finalized operation graph of a problem; throws (kUnsupported) where cuDNN refuses the graph.
std::unique_ptr<CudnnOperationGraph> makeConvGraph(cudnnHandle_t handle, const ConvGraphProblem& problem,
                                                   const std::string& what);

// The same graphs and plans made once on this thread (cudnn_graph.h's cachedGraph / cachedPlan).
// Null where cuDNN refuses the graph or the config.
std::shared_ptr<CudnnOperationGraph> cachedConvGraph(cudnnHandle_t handle, const ConvGraphProblem& problem,
                                                     const std::string& what);
std::shared_ptr<CudnnExecutionPlan> cachedConvPlan(cudnnHandle_t handle, const CudnnOperationGraph& graph,
                                                   const ConvGraphProblem& problem, const EngineChoice& choice);

}  // namespace kiln::cuda
