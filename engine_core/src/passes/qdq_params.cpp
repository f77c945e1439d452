#include "qdq_params.h"

#include "graph_utils.h"

#include <cmath>

namespace kiln::passes {

bool isQuantizeLinear(const Layer& layer) { return isOp(layer, "QuantizeLinear"); }
bool isDequantizeLinear(const Layer& layer) { return isOp(layer, "DequantizeLinear"); }

bool QdqParams::symmetric() const {
  for (int32_t z : zeros)
    if (z != 0) return false;
  return true;
}

bool QdqParams::sameAs(const QdqParams& other) const {
  return type == other.type && scales == other.scales && zeros == other.zeros &&
         (perTensor() || axis == other.axis);
}

std::string QdqParams::addScaleConstant(Network& network, const std::string& base) const {
  const std::string name = uniqueTensorName(network, base + ":scale");
  network.addConstant(name, HostTensor::scalar<float>(scales.front()));
  return name;
}

std::string QdqParams::addZeroPointConstant(Network& network, const std::string& base) const {
  const std::string name = uniqueTensorName(network, base + ":zero_point");
  if (type == DataType::kUInt8) network.addConstant(name, HostTensor::scalar<uint8_t>(uint8_t(zeros.front())));
  else if (type == DataType::kFloat8E4M3) {
    HostTensor zero(DataType::kFloat8E4M3, {});
    *static_cast<uint8_t*>(zero.rawData()) = 0;  // fp8 zero points are 0 (readQdqParams)
    network.addConstant(name, std::move(zero));
  } else {
    network.addConstant(name, HostTensor::scalar<int8_t>(int8_t(zeros.front())));
  }
  return name;
}

Precision QdqParams::precision() const { return type == DataType::kFloat8E4M3 ? Precision::kFP8 : Precision::kINT8; }

std::string readQdqParams(const Network& network, const Layer& qdq, QdqParams& params) {
  params = {};
  const bool quantize = isQuantizeLinear(qdq);
  const std::string& data = qdq.inputs.at(0);
  const Tensor* quantizedSide = network.findTensor(quantize ? qdq.outputs.at(0) : data);
  params.type = quantizedSide ? quantizedSide->dtype : DataType::kUndefined;
  const bool fp8 = params.type == DataType::kFloat8E4M3;
  if (params.type != DataType::kInt8 && params.type != DataType::kUInt8 && !fp8)
    return std::string(toString(params.type)) + " quantization has no quantized layer kernel";
  if (qdq.attrInt("block_size", 0) != 0) return "blocked quantization has no quantized layer kernel";
  if (quantize && qdq.attrInt("saturate", 1) == 0)
    return "saturate=0 (overflow to NaN) has no quantized layer kernel: they saturate";
  const HostTensor* scale = qdq.hasInput(1) ? constantValue(network, qdq.inputs[1]) : nullptr;
  if (!scale) return "its scale is not a constant";
  if (scale->rank() > 1) return "its scale is not a scalar or one value per channel";
  for (double s : scale->toDoubleVector()) {
    if (!(std::isfinite(s) && s > 0)) return "its scale " + std::to_string(s) + " is not positive and finite";
    params.scales.push_back(float(s));
  }
  params.zeros.assign(params.scales.size(), 0);
  if (qdq.hasInput(2)) {
    const HostTensor* zero = constantValue(network, qdq.inputs[2]);
    if (!zero) return "its zero point is not a constant";
    if (zero->elementCount() != scale->elementCount()) return "its zero point and scale differ in size";
    const std::vector<double> values = zero->toDoubleVector();
    for (size_t i = 0; i < values.size(); ++i) {
      if (fp8 && values[i] != 0) return "its float8 zero point is not 0 (fp8 layers are symmetric)";
      params.zeros[i] = int32_t(values[i]);
    }
  }
  const Tensor* x = network.findTensor(data);
  params.axis = qdq.attrInt("axis", 1);
  if (x && x->shape.hasRank() && params.axis < 0) params.axis += int64_t(x->shape.rank());
  return "";
}

}  // namespace kiln::passes
