// ChainInt8Activations: after QuantizeLayers, an int8 layer whose result only int8 layers read, each
// either quantizing it on entry (its activation, input 0) with the same calibrated scale or adding
// it as its residual (input 3), quantizes its result itself (that scale as its output scale, zero
// point 0) and writes int8. The activation readers then take the int8 tensor as given, so the
// activation crosses memory as one byte a value instead of four (or two) and no reader runs its
// quantization pass; the values are the same, q = saturate(round_half_even(y / scale)) of the same
// fp32 y (in an fp16 engine y is no longer rounded to fp16 first). The residual readers get the
// scale as their z_scale (quantized.h's kResidualScaleInput) and add float(q) * scale: TensorRT's
// int8 residual in a ResNet block, where a block's output is the next block's first convolution's
// input and its last one's residual. A result that only residuals read takes its own calibrated
// scale where the calibration has one, else stays float. fp8 layers keep float outputs and float
// residuals: their fused cuBLASLt product writes fp16 (quantized_gemm_plan.h).
#include "chain_int8_activations.h"

#include "../ops/quantized.h"
#include "graph_utils.h"

#include <optional>

namespace kiln {
namespace {

using quantized::kActivationScaleInput;
using quantized::kActivationZeroPointInput;
using quantized::kOutputScaleInput;
using quantized::kOutputZeroPointInput;
using quantized::kResidualInput;
using quantized::kResidualScaleInput;

bool isInt8Layer(const Layer& layer) {
  return quantized::isQuantizedLayer(layer) && quantized::precisionOf(layer) == Precision::kINT8;
}

// The float32 scalar value of constant `name`, if it is one.
std::optional<float> scalarConstant(const Network& network, const std::string& name) {
  const Tensor* s = network.findTensor(name);
  if (!s || !s->isConstant() || s->constant->dtype() != DataType::kFloat32 || s->constant->elementCount() != 1)
    return std::nullopt;
  return s->constant->data<float>()[0];
}

// How a tensor's readers would take it as int8: the scale constant (empty: they cannot), and which
// of them read it as their residual.
struct Readers {
  std::string scale;
  std::vector<size_t> residualReaders;
  size_t activationReaders = 0;
};

class ChainInt8ActivationsPass final : public Pass {
 public:
  ChainInt8ActivationsPass(const std::map<std::string, float>* calibratedScales, bool residuals)
      : calibratedScales_(calibratedScales), residuals_(residuals) {}
  std::string name() const override { return "ChainInt8Activations"; }

 private:
  void apply(Network& network, PassContext& context) override {
    const passes::GraphIndex index(network);
    std::string zeroPoint;  // one int8 zero, shared
    for (size_t i = 0; i < network.layers().size(); ++i) {
      const Layer& producer = network.layers()[i];
      if (!isInt8Layer(producer) || producer.hasInput(kOutputScaleInput) || producer.outputs.empty()) continue;
      const std::string y = producer.outputs[0];
      const Tensor* t = network.findTensor(y);
      if (!t || t->dtype != DataType::kFloat32 || index.isGraphOutput(y) || index.isReadBySubgraph(y)) continue;
      Readers readers = readersOf(network, index, y);
      if (readers.scale.empty()) continue;
      if (zeroPoint.empty()) {
        zeroPoint = passes::uniqueTensorName(network, "int8_zero_point");
        network.addConstant(zeroPoint, HostTensor::scalar<int8_t>(0));
      }
      Layer& layer = network.layers()[i];
      layer.inputs.resize(std::max(layer.inputs.size(), kOutputZeroPointInput + 1));
      layer.inputs[kOutputScaleInput] = readers.scale;
      layer.inputs[kOutputZeroPointInput] = zeroPoint;
      for (size_t r : readers.residualReaders) {
        Layer& reader = network.layers()[r];
        reader.inputs.resize(std::max(reader.inputs.size(), kResidualScaleInput + 1));
        reader.inputs[kResidualScaleInput] = readers.scale;
      }
      std::string note = "'" + layer.name + "' writes its result '" + y + "' as int8 for " +
                         std::to_string(readers.activationReaders) + " int8 reader(s) of it as their activation";
      if (!readers.residualReaders.empty()) {
        note += " and " + std::to_string(readers.residualReaders.size()) + " as their int8 residual (";
        for (size_t k = 0; k < readers.residualReaders.size(); ++k)
          note += (k ? ", '" : "'") + network.layers()[readers.residualReaders[k]].name + "'";
        note += ")";
      }
      context.note(note);
    }
  }

  // The scale every reader of `tensor` would take it as int8 with, when all readers are int8 layers
  // reading it as their activation (input 0, no zero point) with one scale value, or as their
  // residual (input 3); a tensor only residuals read takes its calibrated scale. Else no scale.
  Readers readersOf(Network& network, const passes::GraphIndex& index, const std::string& tensor) const {
    Readers none, found;
    const std::vector<size_t>& readers = index.consumers(tensor);
    if (readers.empty()) return none;
    float value = 0;
    for (size_t r : readers) {
      const Layer& reader = index.layer(r);
      if (!isInt8Layer(reader)) return none;
      bool activation = false, residual = false;
      for (size_t k = 0; k < reader.inputs.size(); ++k) {
        if (reader.inputs[k] != tensor) continue;
        if (k == 0)
          activation = true;
        else if (k == kResidualInput && residuals_ && !reader.hasInput(kResidualScaleInput))
          residual = true;
        else
          return none;  // also its weights, or a scale
      }
      if (residual) found.residualReaders.push_back(r);
      if (!activation) continue;
      const std::optional<float> v = scalarConstant(network, reader.inputs[kActivationScaleInput]);
      if (!v || reader.hasInput(kActivationZeroPointInput)) return none;
      if (!found.scale.empty() && *v != value) return none;
      if (found.scale.empty()) found.scale = reader.inputs[kActivationScaleInput], value = *v;
      ++found.activationReaders;
    }
    if (found.scale.empty()) found.scale = calibratedScaleConstant(network, tensor);
    return found.scale.empty() ? none : found;
  }

  // A new constant holding `tensor`'s calibrated scale; "" when the calibration has none.
  std::string calibratedScaleConstant(Network& network, const std::string& tensor) const {
    if (!calibratedScales_) return "";
    const auto it = calibratedScales_->find(tensor);
    if (it == calibratedScales_->end() || !(it->second > 0)) return "";
    const std::string name = passes::uniqueTensorName(network, tensor + "_residual_scale");
    network.addConstant(name, HostTensor::scalar<float>(it->second));
    return name;
  }

  const std::map<std::string, float>* calibratedScales_;
  bool residuals_;
};

}  // namespace

std::unique_ptr<Pass> createChainInt8ActivationsPass(const std::map<std::string, float>* calibratedScales,
                                                     bool residuals) {
  return std::make_unique<ChainInt8ActivationsPass>(calibratedScales, residuals);
}

}  // namespace kiln
