// ChainInt8Activations: after QuantizeLayers, an int8 layer whose result only int8 layers read, each
// quantizing it on entry with the same calibrated scale, quantizes its result itself (that scale as
// its output scale, zero point 0) and writes int8. The readers then take the int8 tensor as given,
// so the activation crosses memory as one byte a value instead of four (or two) and no reader runs
// its quantization pass; the values are the same, q = saturate(round_half_even(y / scale)) of the
// same fp32 y (in an fp16 engine y is no longer rounded to fp16 first). fp8 layers keep float
// outputs: their fused cuBLASLt product writes fp16 (quantized_gemm_plan.h).
#include "chain_int8_activations.h"

#include "../ops/quantized.h"
#include "graph_utils.h"

namespace kiln {
namespace {

using quantized::kActivationScaleInput;
using quantized::kActivationZeroPointInput;
using quantized::kOutputScaleInput;
using quantized::kOutputZeroPointInput;

bool isInt8Layer(const Layer& layer) {
  return quantized::isQuantizedLayer(layer) && quantized::precisionOf(layer) == Precision::kINT8;
}

class ChainInt8ActivationsPass final : public Pass {
 public:
  std::string name() const override { return "ChainInt8Activations"; }

 private:
  void apply(Network& network, PassContext& context) override {
    const passes::GraphIndex index(network);
    std::string zeroPoint;  // one int8 zero, shared
    for (size_t i = 0; i < network.layers().size(); ++i) {
      const Layer& producer = network.layers()[i];
      if (!isInt8Layer(producer) || producer.hasInput(kOutputScaleInput) || producer.outputs.empty()) continue;
      const std::string& y = producer.outputs[0];
      const Tensor* t = network.findTensor(y);
      if (!t || t->dtype != DataType::kFloat32 || index.isGraphOutput(y) || index.isReadBySubgraph(y)) continue;
      const std::string scale = readersScale(network, index, y);
      if (scale.empty()) continue;
      if (zeroPoint.empty()) {
        zeroPoint = passes::uniqueTensorName(network, "int8_zero_point");
        network.addConstant(zeroPoint, HostTensor::scalar<int8_t>(0));
      }
      Layer& layer = network.layers()[i];
      layer.inputs.resize(std::max(layer.inputs.size(), kOutputZeroPointInput + 1));
      layer.inputs[kOutputScaleInput] = scale;
      layer.inputs[kOutputZeroPointInput] = zeroPoint;
      context.note("'" + layer.name + "' writes its result '" + y + "' as int8 for its " +
                   std::to_string(index.consumers(y).size()) + " int8 reader(s)");
    }
  }

  // The activation-scale constant every reader of `tensor` quantizes it with, when all readers are
  // int8 layers reading it as their activation (input 0, no zero point) with one scale value; else "".
  static std::string readersScale(const Network& network, const passes::GraphIndex& index, const std::string& tensor) {
    const std::vector<size_t>& readers = index.consumers(tensor);
    if (readers.empty()) return "";
    std::string scale;
    float value = 0;
    for (size_t r : readers) {
      const Layer& reader = index.layer(r);
      if (!isInt8Layer(reader) || reader.inputs.empty() || reader.inputs[0] != tensor ||
          reader.hasInput(kActivationZeroPointInput))
        return "";
      for (size_t k = 1; k < reader.inputs.size(); ++k)
        if (reader.inputs[k] == tensor) return "";  // also its weights or residual
      const Tensor* s = network.findTensor(reader.inputs[kActivationScaleInput]);
      if (!s || !s->isConstant() || s->constant->dtype() != DataType::kFloat32 || s->constant->elementCount() != 1)
        return "";
      const float v = s->constant->data<float>()[0];
      if (!scale.empty() && v != value) return "";
      if (scale.empty()) scale = reader.inputs[kActivationScaleInput], value = v;
    }
    return scale;
  }
};

}  // namespace

std::unique_ptr<Pass> createChainInt8ActivationsPass() { return std::make_unique<ChainInt8ActivationsPass>(); }

}  // namespace kiln
