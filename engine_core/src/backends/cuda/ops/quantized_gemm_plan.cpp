#include "quantized_gemm_plan.h"

#include "../../../ops/fused.h"
#include "../../../ops/quantized.h"

#include <kiln/error.h>

namespace kiln::cuda {
namespace {

using quantized::kActivationScaleInput;
using quantized::kActivationZeroPointInput;
using quantized::kOutputScaleInput;
using quantized::kOutputZeroPointInput;
using quantized::kWeightScaleInput;
using quantized::kWeightZeroPointInput;

const Tensor* inputOf(const LayerSignature& tensors, size_t i) {
  return i < tensors.inputs.size() ? tensors.inputs[i] : nullptr;
}

bool isFloatActivation(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat16 || t == DataType::kBFloat16;
}

const HostTensor* weightOf(const LayerWeights& weights, size_t i) { return i < weights.size() ? weights[i] : nullptr; }

double firstValue(const HostTensor& t) { return t.toDoubleVector().at(0); }

}  // namespace

std::optional<std::string> quantizedGemmRefusal(const Layer& layer, const LayerSignature& tensors) {
  const Precision precision = quantized::precisionOf(layer).value_or(Precision::kINT8);
  if (precision != Precision::kINT8 && precision != Precision::kFP8)
    return std::string("the CUDA backend runs int8 and fp8 quantized layers, not ") +
           quantized::precisionName(precision);
  const bool conv = layer.opType == quantized::kQuantizedConv;
  if (conv && layer.attrInt("group", 1) != 1)
    return std::string("grouped quantized convolutions have no CUDA kernel yet (they stay float)");
  if (!activationNamed(layer.attrString(fused::kActivation, "")))
    return "the activation '" + layer.attrString(fused::kActivation, "") + "' has no CUDA kernel";
  const Tensor* w = inputOf(tensors, 1);
  if (w && !w->isConstant())
    return std::string("its ") + (conv ? "weights are" : "B is") +
           " not a constant: the CUDA kernels multiply an activation by constant 8-bit weights only";
  if (inputOf(tensors, kWeightZeroPointInput)) return std::string("weights with a zero point have no CUDA kernel");
  for (size_t i : {size_t(2), kActivationScaleInput, kWeightScaleInput, kActivationZeroPointInput, kOutputScaleInput,
                   kOutputZeroPointInput, quantized::kResidualScaleInput})
    if (const Tensor* t = inputOf(tensors, i); t && !t->isConstant())
      return "its input '" + t->name + "' (a scale, zero point or bias) is not a constant";
  const size_t rank = conv ? 4 : 2;
  if (w && w->shape.hasRank() && w->shape.rank() != rank)
    return conv ? std::string("only 2-D quantized convolutions have a CUDA kernel")
                : std::string("B must be a [K, N] matrix");
  const Tensor* x = inputOf(tensors, 0);
  if (x) {
    const bool quantizedX = precision == Precision::kFP8 ? x->dtype == DataType::kFloat8E4M3
                                                         : x->dtype == DataType::kInt8 || x->dtype == DataType::kUInt8;
    if (!isFloatActivation(x->dtype) && !quantizedX)
      return "the CUDA kernels take no " + std::string(toString(x->dtype)) + " input '" + x->name + "'";
    if (conv && x->shape.hasRank() && x->shape.rank() != 4)
      return std::string("only 2-D quantized convolutions have a CUDA kernel");
  }
  if (const Tensor* z = inputOf(tensors, 3);
      z && !isFloatActivation(z->dtype) && !(z->dtype == DataType::kInt8 && precision == Precision::kINT8))
    return "the residual '" + z->name + "' is " + std::string(toString(z->dtype)) + ", not float (or int8 with its " +
           "scale in an int8 layer)";
  return std::nullopt;
}

QuantizedGemmPlan planQuantizedGemm(const Layer& layer, const LayerWeights& weights, DataType xType) {
  QuantizedGemmPlan plan;
  plan.conv = layer.opType == quantized::kQuantizedConv;
  plan.fp8 = quantized::precisionOf(layer) == Precision::kFP8;
  const HostTensor* w = weightOf(weights, 1);
  const HostTensor* xScale = weightOf(weights, kActivationScaleInput);
  const HostTensor* wScale = weightOf(weights, kWeightScaleInput);
  if (!w || !xScale || !wScale)
    throw Error(ErrorCode::kUnsupported, layer.describe() + ": the CUDA kernels need constant weights and scales");
  if (w->dtype() != (plan.fp8 ? DataType::kFloat8E4M3 : DataType::kInt8) || w->rank() != (plan.conv ? 4u : 2u))
    throw Error(ErrorCode::kInvalidArgument, layer.describe() + ": its weights are " +
                                                 std::string(toString(w->dtype())) + " " + dimsToString(w->dims()) +
                                                 ", not the quantized layer's");
  const auto* codes = static_cast<const uint8_t*>(w->rawData());
  // W' [N, K]: a convolution's W [M, C, KH, KW] in im2col order (kh, kw, c); a matmul's B [K, N] transposed.
  if (plan.conv) {
    plan.channels = w->dim(0), plan.kernelH = w->dim(2), plan.kernelW = w->dim(3);
    plan.depth = w->dim(1) * plan.kernelH * plan.kernelW;
  } else {
    plan.depth = w->dim(0), plan.channels = w->dim(1);
  }
  plan.paddedChannels = paddedDim(plan.channels), plan.paddedDepth = paddedDim(plan.depth);
  plan.weights.assign(size_t(plan.paddedChannels * plan.paddedDepth), 0);
  for (int64_t n = 0; n < plan.channels; ++n) {
    uint8_t* row = plan.weights.data() + n * plan.paddedDepth;
    if (plan.conv) {
      const int64_t c = w->dim(1), taps = plan.kernelH * plan.kernelW;
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t t = 0; t < taps; ++t) row[t * c + ch] = codes[(n * c + ch) * taps + t];
    } else {
      for (int64_t k = 0; k < plan.depth; ++k) row[k] = codes[k * plan.channels + n];
    }
  }

  // The activation's quantization: its type (or its zero point's) and zero point.
  plan.activation.fp8 = plan.fp8;
  plan.activation.scale = float(firstValue(*xScale));
  plan.activation.unsignedQ = xType == DataType::kUInt8;
  if (const HostTensor* zero = weightOf(weights, kActivationZeroPointInput)) {
    if (plan.fp8) {
      if ((static_cast<const uint8_t*>(zero->rawData())[0] & 0x7F) != 0)
        throw Error(ErrorCode::kInvalidArgument, layer.describe() + ": an fp8 zero point must be 0");
    } else {
      plan.activation.unsignedQ = zero->dtype() == DataType::kUInt8;
      plan.activation.zero = int32_t(firstValue(*zero));
    }
  }
  const std::vector<double> wScales = wScale->toDoubleVector();
  if (wScales.size() != 1 && int64_t(wScales.size()) != plan.channels)
    throw Error(ErrorCode::kInvalidArgument, layer.describe() + ": it has " + std::to_string(wScales.size()) +
                                                 " weight scales for " + std::to_string(plan.channels) + " channels");
  plan.multipliers.resize(size_t(plan.channels));
  for (int64_t n = 0; n < plan.channels; ++n)  // as kernels::dequantizeMultipliers: float times float
    plan.multipliers[size_t(n)] = plan.activation.scale * float(wScales[wScales.size() == 1 ? 0 : size_t(n)]);
  // sum (q - zero) w = sum s w + (o - zero) sum w, with s = q - o the operand (o = 128 for uint8).
  const int32_t factor = (plan.activation.unsignedQ ? 128 : 0) - plan.activation.zero;
  if (!plan.fp8 && factor != 0) {
    plan.correction.resize(size_t(plan.channels));
    for (int64_t n = 0; n < plan.channels; ++n) {
      int32_t sum = 0;
      for (int64_t k = 0; k < plan.depth; ++k) sum += int8_t(plan.weights[size_t(n * plan.paddedDepth + k)]);
      plan.correction[size_t(n)] = factor * sum;
    }
  }
  if (const HostTensor* bias = weightOf(weights, 2)) {
    const std::vector<double> values = bias->toDoubleVector();
    if (int64_t(values.size()) != plan.channels)
      throw Error(ErrorCode::kInvalidArgument, layer.describe() + ": its bias has " + std::to_string(values.size()) +
                                                   " values for " + std::to_string(plan.channels) + " channels");
    plan.bias.assign(values.begin(), values.end());
  }
  plan.epilogue = readFusedEpilogue(layer);
  if (layer.hasInput(quantized::kResidualScaleInput)) {
    const HostTensor* zScale = weightOf(weights, quantized::kResidualScaleInput);
    if (!zScale || zScale->elementCount() != 1)
      throw Error(ErrorCode::kUnsupported,
                  layer.describe() + ": the CUDA kernels need its int8 residual's scale as a constant scalar");
    plan.int8Residual = true;
    plan.residualScale = float(firstValue(*zScale));
  }
  if (const HostTensor* yScale = weightOf(weights, kOutputScaleInput)) {
    plan.outputScale = float(firstValue(*yScale));
    if (const HostTensor* yZero = weightOf(weights, kOutputZeroPointInput))
      plan.outputZero = yZero->dtype() == DataType::kFloat8E4M3
                            ? int32_t(static_cast<const uint8_t*>(yZero->rawData())[0])
                            : int32_t(firstValue(*yZero));
  }
  return plan;
}

std::optional<cublasLtEpilogue_t> fusedFp8Epilogue(const QuantizedGemmPlan& plan, bool hasResidual,
                                                   bool quantizedOutput) {
  if (!plan.fp8 || quantizedOutput || plan.channels % kQuantizedGemmAlignment != 0) return std::nullopt;
  const kernels::Activation a = plan.epilogue.activation;
  // cuBLASLt adds C (the residual) before its bias and activation.
  if (hasResidual && !plan.epilogue.residualBeforeActivation && a != kernels::Activation::kNone) return std::nullopt;
  const bool bias = !plan.bias.empty();
  switch (a) {
    case kernels::Activation::kNone:
      return bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
    case kernels::Activation::kRelu:
      return bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
    // erf GELU as cuBLASLt's tanh form, as the fp16 / bf16 float products take it (|diff| <= 5e-4).
    case kernels::Activation::kGelu:
    case kernels::Activation::kGeluTanh:
      return bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
    default:
      return std::nullopt;
  }
}

const std::vector<size_t>& quantizedPlannedInputs() {
  using namespace quantized;
  static const std::vector<size_t> inputs{1,
                                          2,
                                          kActivationScaleInput,
                                          kWeightScaleInput,
                                          kActivationZeroPointInput,
                                          kWeightZeroPointInput,
                                          kOutputScaleInput,
                                          kOutputZeroPointInput,
                                          kWeightBlockScaleInput,
                                          kResidualScaleInput};
  return inputs;
}

}  // namespace kiln::cuda
