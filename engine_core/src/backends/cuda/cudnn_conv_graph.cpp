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
    case Activation::kSigmoid: mode = CUDNN_POINTWISE_SIGMOID_FWD; break;
    case Activation::kTanh: mode = CUDNN_POINTWISE_TANH_FWD; break;
    case Activation::kSiLU: mode = CUDNN_POINTWISE_SWISH_FWD; break;
    case Activation::kGelu: mode = CUDNN_POINTWISE_GELU_FWD; break;
    case Activation::kGeluTanh: mode = CUDNN_POINTWISE_GELU_APPROX_TANH_FWD; break;
    case Activation::kRelu:
    case Activation::kLeakyRelu:
    case Activation::kClip: break;
    default: throw Error(ErrorCode::kInternal, what + ": no cuDNN pointwise op for this activation");
  }
  CudnnDescriptor d = pointwise(mode, what);
  if (e.activation == Activation::kLeakyRelu) d.setDouble(CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP_SLOPE, double(e.alpha));
  if (e.activation == Activation::kClip)  // min 0: ReLU with an upper clip (ReLU6)
    d.setDouble(CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP, 0.0).setDouble(CUDNN_ATTR_POINTWISE_RELU_UPPER_CLIP, double(e.beta));
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
  return "cuDNN graph (" + std::string(fusions[int(fusion)]) + epilogueText + ") x " + dimsToString(x) + " w " + dimsToString(w) + " y " +
         dimsToString(y) + " pads " + dimsToString(prePads) + "/" + dimsToString(postPads) + " strides " + dimsToString(strides) +
         " dilations " + dimsToString(dilations) + " " + std::string(toString(type)) + " NHWC, alignment " + std::to_string(alignment);
}

std::unique_ptr<CudnnOperationGraph> makeConvGraph(cudnnHandle_t handle, const ConvGraphProblem& p,
                                                   const std::string& what) {
  const std::string context = what + ": " + p.describe();
  const cudnnDataType_t type = cudnnTypeOf(p.type);
  std::vector<CudnnDescriptor> operations;
  CudnnDescriptor x = cudnnTensor(kGraphX, type, p.x, channelsLastStrides(p.x), p.alignment, false, context);
  CudnnDescriptor w = cudnnTensor(kGraphW, type, p.w, channelsLastStrides(p.w), p.alignment, false, context);
  const std::vector<int64_t> yStrides = channelsLastStrides(p.y);
  CudnnDescriptor y = cudnnTensor(kGraphY, type, p.y, yStrides, p.alignment, false, context);

  // The chain of pointwise steps after the convolution, in Kiln's epilogue order.
  const bool graphBias = p.bias && !p.leavesBias();
  const bool graphResidual = p.residual && !p.leavesResidual();
  const bool graphActivation = p.epilogue.activation != Activation::kNone && !p.leavesActivation();
  const int steps = int(graphBias) + int(graphResidual) + int(graphActivation);
  int64_t nextVirtual = 100;
  std::vector<CudnnDescriptor> virtuals;
  auto output = [&](int& left) -> const CudnnDescriptor& {  // y for the last step, else a new fp32 virtual
    if (--left == 0) return y;
    virtuals.push_back(cudnnTensor(nextVirtual++, CUDNN_DATA_FLOAT, p.y, yStrides, p.alignment, true, context));
    return virtuals.back();
  };
  virtuals.reserve(4);
  int left = steps + 1;

  CudnnDescriptor convolution(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, context);
  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  convolution.setInt(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, int64_t(p.strides.size()))
      .setDataType(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, compute)
      .set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode)
      .setInts(CUDNN_ATTR_CONVOLUTION_DILATIONS, p.dilations)
      .setInts(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, p.strides)
      .setInts(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, p.prePads)
      .setInts(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, p.postPads);
  convolution.finalize();
  const CudnnDescriptor& convolved = output(left);
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
  std::optional<CudnnDescriptor> bias, residual;
  auto add = [&](const CudnnDescriptor& operand) {
    modes.push_back(pointwise(CUDNN_POINTWISE_ADD, context));
    modes.back().finalize();
    const CudnnDescriptor& out = output(left);
    operations.push_back(pointwiseOperation(modes.back(), *current, &operand, out, context));
    current = &out;
  };
  if (graphBias) {
    std::vector<int64_t> dims(p.y.size(), 1);
    dims[1] = p.y[1];
    bias = cudnnTensor(kGraphBias, type, dims, linearStrides(dims), p.alignment, false, context);
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
  std::vector<CudnnDescriptor> parts;
  for (CudnnDescriptor* d : {&x, &w, &y, &convolution}) parts.push_back(std::move(*d));
  for (auto& d : virtuals) parts.push_back(std::move(d));
  for (auto& d : modes) parts.push_back(std::move(d));
  if (bias) parts.push_back(std::move(*bias));
  if (residual) parts.push_back(std::move(*residual));
  return std::make_unique<CudnnOperationGraph>(handle, std::move(operations), std::move(parts), context);
}

}  // namespace kiln::cuda
