// onnxruntime's MatMulNBits (ops/weight_only_nbits.cpp) -> kiln.WeightOnlyMatMul with the same
// values (its unsigned nibbles and zero points re-signed, exactly), the bias as the layer's bias.
// Where the engine's backend has no int4 kernel the weights are dequantized once here (the same
// rule, int4_weight_format.h) into a float32 MatMul, so the layer still runs there, in float.
#include "int4_weights.h"

#include <kernels/cpu/quant/int4_weights.h>

#include <kiln/error.h>

#include "../ops/weight_only.h"
#include "graph_utils.h"
#include "int8_layer_form.h"

#include <vector>

namespace kiln {
namespace {

using namespace passes;
using namespace weight_only;

const HostTensor& constantInput(const Network& network, const Layer& layer, size_t i, const char* what) {
  const HostTensor* value = layer.hasInput(i) ? constantValue(network, layer.inputs[i]) : nullptr;
  if (!value)
    throw Error(ErrorCode::kUnsupported, layer.describe() + ": its " + what +
                                             " must be a constant (MatMulNBits' weights are constant initializers)");
  return *value;
}

class LowerMatMulNBitsPass final : public Pass {
 public:
  LowerMatMulNBitsPass(Int4Refusal refusal, Int4Outcome& outcome) : refusal_(std::move(refusal)), outcome_(outcome) {}
  std::string name() const override { return "LowerMatMulNBits"; }

 private:
  void apply(Network& network, PassContext& context) override {
    for (Layer& layer : network.layers()) {
      if (!isMatMulNBits(layer)) continue;
      std::string why;
      const auto shape = readNBitsShape(layer, why);
      if (!shape) throw Error(ErrorCode::kUnsupported, layer.describe() + ": " + why);
      const HostTensor* zeroPoints =
          layer.hasInput(kNBitsZeroPointsInput) ? &constantInput(network, layer, kNBitsZeroPointsInput, "zero_points")
                                                : nullptr;
      Int4Tensors t = int4FromMatMulNBits(*shape, constantInput(network, layer, 1, "B"),
                                          constantInput(network, layer, kNBitsScalesInput, "scales"), zeroPoints,
                                          layer.describe());
      Layer q = weightOnlyLayerFor(layer, t);
      const std::string refused = refusal_ ? refusal_(q) : "";
      if (refused.empty()) {
        layer = withInt4Weights(network, std::move(q), layer, std::move(t));
        ++outcome_.layers;
        context.note("MatMulNBits '" + layer.name + "' -> kiln.WeightOnlyMatMul (K " + std::to_string(shape->k) +
                     " x N " + std::to_string(shape->n) + ", block " + std::to_string(shape->blockSize) + ")");
      } else {
        outcome_.keptFloat[layer.name] = "not int4: " + refused + " (its weights run dequantized to float32)";
        layer = dequantized(network, layer, t);
        context.note("MatMulNBits '" + layer.name + "' -> float32 MatMul with dequantized weights");
      }
    }
    network.removeUnusedTensors();
  }

  static Layer weightOnlyLayerFor(const Layer& layer, const Int4Tensors& t) {
    Layer q;
    q.name = layer.name;
    q.domain = fused::kDomain;
    q.opType = kWeightOnlyMatMul;
    q.opsetVersion = layer.opsetVersion;
    q.outputs = layer.outputs;
    q.origins = layer.origins;
    q.attributes[kK] = t.k;
    q.attributes[kN] = t.n;
    q.attributes[kGroupSize] = t.groupSize;
    return q;
  }

  Layer withInt4Weights(Network& network, Layer q, const Layer& layer, Int4Tensors t) {
    auto add = [&](const std::string& suffix, HostTensor value) {
      const std::string name = uniqueTensorName(network, layer.inputs[1] + suffix);
      network.addConstant(name, std::move(value));
      return name;
    };
    outcome_.int4WeightBytes += int64_t(t.packed.byteSize() + t.scales.byteSize() + (t.zeros ? t.zeros->byteSize() : 0));
    const std::string bias = layer.hasInput(kNBitsBiasInput) ? layer.inputs[kNBitsBiasInput] : "";
    q.inputs = {layer.inputs[0], add(":int4", std::move(t.packed)), bias, "", add(":int4_scale", std::move(t.scales))};
    if (t.zeros) q.inputs.push_back(add(":int4_zero", std::move(*t.zeros)));
    return q;
  }

  // A float32 MatMul (a kiln.FusedMatMul with the bias, when there is one) of the dequantized weights.
  static Layer dequantized(Network& network, const Layer& layer, const Int4Tensors& t) {
    const kernels::Int4Weights w{t.packed.data<uint8_t>(), t.scales.data<float>(),
                                 t.zeros ? t.zeros->data<int8_t>() : nullptr, t.k, t.n, t.groupSize};
    HostTensor nk(DataType::kFloat32, {t.n, t.k});
    kernels::dequantizeInt4Tile(w, 0, t.k, nk.data<float>());
    const std::string weights = uniqueTensorName(network, layer.inputs[1] + ":dequantized");
    network.addConstant(weights, transposed(nk));
    Layer m;
    m.name = layer.name;
    const auto& opsets = network.info().opsetImports;  // the model's ai.onnx opset, for the MatMul
    m.opsetVersion = opsets.count("") ? opsets.at("") : 13;
    m.outputs = layer.outputs;
    m.origins = layer.origins;
    m.inputs = {layer.inputs[0], weights};
    if (!layer.hasInput(kNBitsBiasInput)) {
      m.opType = "MatMul";
      return m;
    }
    m.domain = fused::kDomain;
    m.opType = fused::kFusedMatMul;
    m.attributes[fused::kBase] = std::string("MatMul");
    m.inputs.push_back(layer.inputs[kNBitsBiasInput]);
    return m;
  }

  Int4Refusal refusal_;
  Int4Outcome& outcome_;
};

}  // namespace

std::unique_ptr<Pass> createLowerMatMulNBitsPass(Int4Refusal refusal, Int4Outcome& outcome) {
  return std::make_unique<LowerMatMulNBitsPass>(std::move(refusal), outcome);
}

}  // namespace kiln
