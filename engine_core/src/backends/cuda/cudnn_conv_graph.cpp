#include "cudnn_conv_graph.h"

#include "cudnn_conv.h"

#include <kiln/error.h>
#include <kiln/shape.h>

namespace kiln::cuda {
namespace {

using kernels::Activation;

CudnnDescriptor pointwise(cudnnPointwiseMode_t mode, const std::string& what) {
  CudnnDescriptor d(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, what);
  d.set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode)
      .setDataType(CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_DATA_FLOAT);
  return d;
}

// The activation as a pointwise descriptor (graphHasActivation said it exists).
CudnnDescriptor activationDescriptor(const FusedEpilogue& e, const std::string& what) {
  cudnnPointwiseMode_t mode = CUDNN_POINTWISE_RELU_FWD;  // Relu, LeakyRelu, Clip from 0
  switch (e.activation) {
    case Activation::kSigmoid:
      mode = CUDNN_POINTWISE_SIGMOID_FWD;
      break;
    case Activation::kTanh:
      mode = CUDNN_POINTWISE_TANH_FWD;
      break;
    case Activation::kSiLU:
      mode = CUDNN_POINTWISE_SWISH_FWD;
      break;
    case Activation::kGelu:
      mode = CUDNN_POINTWISE_GELU_FWD;
      break;
    case Activation::kGeluTanh:
      mode = CUDNN_POINTWISE_GELU_APPROX_TANH_FWD;
      break;
    case Activation::kRelu:
    case Activation::kLeakyRelu:
    case Activation::kClip:
      break;
    default:
      throw Error(ErrorCode::kInternal, what + ": no cuDNN pointwise op for this activation");
  }
  CudnnDescriptor d = pointwise(mode, what);
  if (e.activation == Activation::kLeakyRelu) d.setDouble(CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP_SLOPE, double(e.alpha));
  if (e.activation == Activation::kClip)  // min 0: ReLU with an upper clip (ReLU6)
    d.setDouble(CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP, 0.0)
        .setDouble(CUDNN_ATTR_POINTWISE_RELU_UPPER_CLIP, double(e.beta));
  if (e.activation == Activation::kSiLU) d.setDouble(CUDNN_ATTR_POINTWISE_SWISH_BETA, 1.0);
  d.finalize();
  return d;
}

CudnnDescriptor pointwiseOperation(const CudnnDescriptor& mode, const CudnnDescriptor& x, const CudnnDescriptor* b,
                                   const CudnnDescriptor& y, const std::string& what) {
  CudnnDescriptor op(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, what);
  op.setDescriptor(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, mode)
      .setDescriptor(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x)
      .setDescriptor(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y);
  if (b) op.setDescriptor(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, *b);
  op.finalize();
  return op;
}

}  // namespace

bool ConvGraphProblem::graphHasActivation(const FusedEpilogue& e) {
  switch (e.activation) {
    case Activation::kRelu:
    case Activation::kLeakyRelu:
    case Activation::kSigmoid:
    case Activation::kTanh:
    case Activation::kSiLU:
    case Activation::kGelu:
    case Activation::kGeluTanh:
      return true;
    case Activation::kClip:
      return e.alpha == 0.0f && e.beta > 0.0f;
    default:
      return false;
  }
}

bool ConvGraphProblem::leavesActivation() const {
  if (epilogue.activation == Activation::kNone) return false;
  return fusion != ConvFusion::kFull || !graphHasActivation(epilogue);
}

std::string ConvGraphProblem::describe() const {
  static const char* fusions[] = {"conv+epilogue", "conv+bias+residual", "conv"};
  // Everything the graph computes: the plan cache is keyed by this text.
  std::string epilogueText = std::string(bias ? " +bias" : "") +
                             (residual ? epilogue.residualBeforeActivation ? " +residual" : " +residual after" : "");
  if (epilogue.activation != kernels::Activation::kNone)
    epilogueText += " activation " + std::to_string(int(epilogue.activation)) + "(" + std::to_string(epilogue.alpha) +
                    "," + std::to_string(epilogue.beta) + ")";
  if (quantized != QuantizedOperands::kNone) {
    const std::string operands = quantized == QuantizedOperands::kInt8 ? "int8" : "fp8";
    epilogueText = " " + operands + " sums * scale" + epilogueText + (quantizedOutput ? " " + operands + " out" : "");
  }
  return "cuDNN graph (" + std::string(fusions[int(fusion)]) + epilogueText + ") x " + dimsToString(x) + " w " +
         dimsToString(w) + " y " + dimsToString(y) + " pads " + dimsToString(prePads) + "/" + dimsToString(postPads) +
         " strides " + dimsToString(strides) + " dilations " + dimsToString(dilations) + " " +
         std::string(toString(type)) + " NHWC, alignment " + std::to_string(alignment);
}

ConvGraphProblem convGraphGeometry(const kernels::ConvShape& shape, const std::vector<int64_t>& x, int64_t outChannels,
                                   int64_t paddedC) {
  ConvGraphProblem p;
  p.x = {x[0], paddedC, x[2], x[3]};
  p.w = {outChannels, paddedC, shape.window.kernel[kernels::kMaxSpatialRank - 2],
         shape.window.kernel[kernels::kMaxSpatialRank - 1]};
  p.y = {x[0], outChannels};
  for (size_t a = size_t(kernels::kMaxSpatialRank) - 2; a < size_t(kernels::kMaxSpatialRank); ++a) {
    p.y.push_back(shape.window.out[a]);
    p.prePads.push_back(shape.window.padBegin[a]);
    p.postPads.push_back(shape.window.padEnd[a]);
    p.strides.push_back(shape.window.stride[a]);
    p.dilations.push_back(shape.window.dilation[a]);
  }
  return p;
}

std::unique_ptr<CudnnOperationGraph> makeConvGraph(cudnnHandle_t handle, const ConvGraphProblem& p,
                                                   const std::string& what) {
  const std::string context = what + ": " + p.describe();
  const bool int8 = p.quantized == QuantizedOperands::kInt8, quantized = p.quantized != QuantizedOperands::kNone;
  const cudnnDataType_t type = cudnnTypeOf(p.type);
  const cudnnDataType_t operandType = !quantized ? type : int8 ? CUDNN_DATA_INT8 : CUDNN_DATA_FP8_E4M3;
  std::vector<CudnnDescriptor> operations;
  CudnnDescriptor x = cudnnTensor(kGraphX, operandType, p.x, channelsLastStrides(p.x), p.alignment, false, context);
  CudnnDescriptor w = cudnnTensor(kGraphW, operandType, p.w, channelsLastStrides(p.w), p.alignment, false, context);
  const std::vector<int64_t> yStrides = channelsLastStrides(p.y);
  const bool quantizedOutput = quantized && p.quantizedOutput;
  CudnnDescriptor y =
      cudnnTensor(kGraphY, quantizedOutput ? operandType : type, p.y, yStrides, p.alignment, false, context);

  // The chain of pointwise steps after the convolution, in Kiln's epilogue order.
  const bool graphBias = p.bias && !p.leavesBias();
  const bool graphResidual = p.residual && !p.leavesResidual();
  const bool graphActivation = p.epilogue.activation != Activation::kNone && !p.leavesActivation();
  const int steps = int(graphBias) + int(graphResidual) + int(graphActivation) + int(quantized) + int(quantizedOutput);
  int64_t nextVirtual = 100;
  std::vector<CudnnDescriptor> virtuals;
  // y for the last step, else a new virtual (fp32; an int8 convolution's sums int32).
  auto output = [&](int& left, cudnnDataType_t virtualType = CUDNN_DATA_FLOAT) -> const CudnnDescriptor& {
    if (--left == 0) return y;
    virtuals.push_back(cudnnTensor(nextVirtual++, virtualType, p.y, yStrides, p.alignment, true, context));
    return virtuals.back();
  };
  virtuals.reserve(6);
  int left = steps + 1;

  CudnnDescriptor convolution(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, context);
  const cudnnDataType_t compute = int8 ? CUDNN_DATA_INT32 : CUDNN_DATA_FLOAT;
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  convolution.setInt(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, int64_t(p.strides.size()))
      .setDataType(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, compute)
      .set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode)
      .setInts(CUDNN_ATTR_CONVOLUTION_DILATIONS, p.dilations)
      .setInts(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, p.strides)
      .setInts(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, p.prePads)
      .setInts(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, p.postPads);
  convolution.finalize();
  const CudnnDescriptor& convolved = output(left, int8 ? CUDNN_DATA_INT32 : CUDNN_DATA_FLOAT);
  {
    CudnnDescriptor op(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, context);
    op.setDescriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, x)
        .setDescriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, w)
        .setDescriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, convolved)
        .setDescriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, convolution)
        .setFloat(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, 1.0f)
        .setFloat(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, 0.0f);
    op.finalize();
    operations.push_back(std::move(op));
  }
  const CudnnDescriptor* current = &convolved;
  std::vector<CudnnDescriptor> modes;  // kept alive until the graph is final
  modes.reserve(4);
  std::optional<CudnnDescriptor> bias, residual, scale, outputScale;
  auto binary = [&](cudnnPointwiseMode_t mode, const CudnnDescriptor& operand) {
    modes.push_back(pointwise(mode, context));
    modes.back().finalize();
    const CudnnDescriptor& out = output(left);
    operations.push_back(pointwiseOperation(modes.back(), *current, &operand, out, context));
    current = &out;
  };
  auto add = [&](const CudnnDescriptor& operand) { binary(CUDNN_POINTWISE_ADD, operand); };
  std::vector<int64_t> perChannel(p.y.size(), 1);
  perChannel[1] = p.y[1];
  if (quantized) {  // the sums dequantized: sums * x_scale * w_scale[c]
    scale =
        cudnnTensor(kGraphScale, CUDNN_DATA_FLOAT, perChannel, linearStrides(perChannel), p.alignment, false, context);
    binary(CUDNN_POINTWISE_MUL, *scale);
  }
  if (graphBias) {
    bias = cudnnTensor(kGraphBias, quantized ? CUDNN_DATA_FLOAT : type, perChannel, linearStrides(perChannel),
                       p.alignment, false, context);
    add(*bias);
  }
  if (graphResidual) residual = cudnnTensor(kGraphResidual, type, p.y, yStrides, p.alignment, false, context);
  if (graphResidual && p.epilogue.residualBeforeActivation) add(*residual);
  if (graphActivation) {
    modes.push_back(activationDescriptor(p.epilogue, context));
    const CudnnDescriptor& out = output(left);
    operations.push_back(pointwiseOperation(modes.back(), *current, nullptr, out, context));
    current = &out;
  }
  if (graphResidual && !p.epilogue.residualBeforeActivation) add(*residual);
  if (quantizedOutput) {  // quantized again: value * (1 / y_scale), which cuDNN rounds into y's type
    const std::vector<int64_t> one(p.y.size(), 1);
    outputScale = cudnnTensor(kGraphOutputScale, CUDNN_DATA_FLOAT, one, one, p.alignment, false, context);
    binary(CUDNN_POINTWISE_MUL, *outputScale);
  }
  std::vector<CudnnDescriptor> parts;
  for (CudnnDescriptor* d : {&x, &w, &y, &convolution}) parts.push_back(std::move(*d));
  for (auto& d : virtuals) parts.push_back(std::move(d));
  for (auto& d : modes) parts.push_back(std::move(d));
  for (auto* d : {&bias, &residual, &scale, &outputScale})
    if (*d) parts.push_back(std::move(**d));
  return std::make_unique<CudnnOperationGraph>(handle, std::move(operations), std::move(parts), context);
}

std::shared_ptr<CudnnOperationGraph> cachedConvGraph(cudnnHandle_t handle, const ConvGraphProblem& p,
                                                     const std::string& what) {
  return cachedGraph(handle, p.describe(), [&] { return makeConvGraph(handle, p, what); });
}

std::shared_ptr<CudnnExecutionPlan> cachedConvPlan(cudnnHandle_t handle, const CudnnOperationGraph& graph,
                                                   const ConvGraphProblem& p, const EngineChoice& choice) {
  return cachedPlan(handle, graph, p.describe(), choice);
}

}  // namespace kiln::cuda
