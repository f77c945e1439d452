// `--int4-weights`: MatMul / Gemm layers (plain or kiln.FusedMatMul with their epilogue) whose B is
// a float32 constant matrix become kiln.WeightOnlyMatMul: B quantized here once, symmetric int4 per
// group of `groupSize` along K for each output column (kernels/cpu/quant/int4_weight_format.h),
// activations left float, the epilogue kept. A Gemm becomes the MatMul form: B read as [K, N]
// whatever transB, alpha folded into the weights before quantizing, beta * C as the bias.
#include "int4_weights.h"

#include <kernels/cpu/quant/int4_weight_format.h>
#include <kernels/cpu/quant/int4_weights.h>

#include "../ops/weight_only.h"
#include "graph_utils.h"
#include "int8_layer_form.h"

#include <sstream>
#include <vector>

namespace kiln {
namespace {

using namespace passes;

std::string inputOf(const Layer& layer, size_t i) { return layer.hasInput(i) ? layer.inputs[i] : ""; }

DataType declaredType(const Network& network, const std::string& name) {
  const Tensor* t = name.empty() ? nullptr : network.findTensor(name);
  return t ? t->dtype : DataType::kUndefined;
}

// A weight matrix as the pass reads it: W [K, N] at w[k * kStride + n * nStride], times alpha.
struct FloatWeights {
  const HostTensor* values = nullptr;
  int64_t k = 0, n = 0, kStride = 0, nStride = 0;
  float alpha = 1;
};

// The weights of a MatMul or Gemm layer, or why it has none to quantize.
std::string weightsOf(const Network& network, const Layer& layer, Int8Form form, FloatWeights& w) {
  const Layer base = int8BaseOf(layer);
  const std::string b = inputOf(layer, 1);
  const HostTensor* value = b.empty() ? nullptr : constantValue(network, b);
  if (!value) return "its B is not a constant (int4 is for constant weights)";
  if (value->dtype() != DataType::kFloat32) return "its B is " + std::string(toString(value->dtype())) + ", not float32";
  if (value->rank() != 2) return "its B is not a matrix (shape " + dimsToString(value->dims()) + ")";
  w.values = value;
  if (form == Int8Form::kGemm) {
    if (base.attrInt("transA", 0) != 0) return "a Gemm with transA = 1 has no weight-only form";
    const bool transB = base.attrInt("transB", 0) != 0;
    w.k = value->dim(transB ? 1 : 0);
    w.n = value->dim(transB ? 0 : 1);
    w.kStride = transB ? 1 : w.n;
    w.nStride = transB ? w.k : 1;
    w.alpha = base.attrFloat("alpha", 1.0f);
    if (base.hasInput(2)) return gemmBiasProblem(constantValue(network, base.inputs[2]), w.n);
    return "";
  }
  w.k = value->dim(0);
  w.n = value->dim(1);
  w.kStride = w.n;
  w.nStride = 1;
  return "";
}

class QuantizeWeightsInt4Pass final : public Pass {
 public:
  QuantizeWeightsInt4Pass(Int4WeightOptions options, Int4Outcome& outcome)
      : options_(std::move(options)), outcome_(outcome) {}
  std::string name() const override { return "QuantizeWeightsInt4"; }

 private:
  void apply(Network& network, PassContext& context) override {
    for (Layer& layer : network.layers()) {
      const auto form = int8FormOf(layer);
      if (!form || (*form != Int8Form::kMatMul && *form != Int8Form::kGemm)) continue;
      FloatWeights w;
      const std::string why = problemWith(network, layer, *form, w);
      if (!why.empty()) {
        outcome_.keptFloat[layer.name] = "not int4: " + why;
        continue;
      }
      std::ostringstream note;
      note << "quantized the weights of " << describe(layer) << " to int4: K " << w.k << " x N " << w.n << ", "
           << kernels::int4GroupCount(w.k, options_.groupSize) << " group(s) of " << options_.groupSize;
      layer = rewrite(network, layer, *form, w);
      ++outcome_.layers;
      context.note(note.str());
    }
    network.removeUnusedTensors();
  }

  static std::string describe(const Layer& layer) { return int8BaseOf(layer).opType + " '" + layer.name + "'"; }

  std::string problemWith(const Network& network, const Layer& layer, Int8Form form, FloatWeights& w) const {
    if (auto held = options_.layerPrecisions.find(layer.name); held != options_.layerPrecisions.end())
      return std::string("--layer-precision holds it to ") + toString(held->second);
    if (layer.outputs.size() != 1 || declaredType(network, layer.outputs[0]) != DataType::kFloat32)
      return "its output is not float32";
    if (declaredType(network, inputOf(layer, 0)) != DataType::kFloat32) return "its A is not float32";
    if (std::string why = weightsOf(network, layer, form, w); !why.empty()) return why;
    if (w.k * w.n < kMinInt4WeightValues)
      return "its weights hold " + std::to_string(w.k * w.n) + " values (K " + std::to_string(w.k) + " x N " +
             std::to_string(w.n) + "), under the " + std::to_string(kMinInt4WeightValues) + " worth packing";
    if (options_.refusal) return options_.refusal(weightOnlyLayerFor(layer, w));
    return "";
  }

  Layer weightOnlyLayerFor(const Layer& layer, const FloatWeights& w) const {
    Layer q = quantizedLayerFor(layer, Int8Form::kMatMul);  // name, outputs, origins, epilogue attributes
    q.opType = weight_only::kWeightOnlyMatMul;
    q.attributes[weight_only::kK] = w.k;
    q.attributes[weight_only::kN] = w.n;
    q.attributes[weight_only::kGroupSize] = options_.groupSize;
    return q;
  }

  // The packed weights and scales of `w`, made once per constant and Gemm reading.
  std::pair<std::string, std::string> packedWeights(Network& network, const std::string& source, const FloatWeights& w) {
    std::ostringstream key;
    key << source << '|' << w.kStride << '|' << w.alpha;
    if (auto it = packed_.find(key.str()); it != packed_.end()) return it->second;
    std::vector<float> scaled;
    const float* values = w.values->data<float>();
    if (w.alpha != 1.0f) {  // alpha * A · B = A · (alpha * B): quantize what is multiplied
      scaled.assign(values, values + w.values->elementCount());
      for (float& v : scaled) v *= w.alpha;
      values = scaled.data();
    }
    const int64_t groups = kernels::int4GroupCount(w.k, options_.groupSize);
    HostTensor packed(DataType::kUInt8, {w.n, groups, options_.groupSize / 2});
    HostTensor scales(DataType::kFloat32, {w.n, groups});
    kernels::quantizeInt4Weights(values, w.k, w.n, w.kStride, w.nStride, options_.groupSize, packed.data<uint8_t>(),
                                 scales.data<float>());
    outcome_.floatWeightBytes += int64_t(w.values->byteSize());
    outcome_.int4WeightBytes += int64_t(packed.byteSize() + scales.byteSize());
    const std::string packedName = uniqueTensorName(network, source + ":int4");
    network.addConstant(packedName, std::move(packed));
    const std::string scalesName = uniqueTensorName(network, source + ":int4_scale");
    network.addConstant(scalesName, std::move(scales));
    return packed_[key.str()] = {packedName, scalesName};
  }

  Layer rewrite(Network& network, const Layer& layer, Int8Form form, const FloatWeights& w) {
    Layer q = weightOnlyLayerFor(layer, w);
    const auto [packed, scales] = packedWeights(network, layer.inputs[1], w);
    std::string bias = inputOf(layer, 2);
    if (form == Int8Form::kGemm && !bias.empty()) {
      const HostTensor perColumn =
          gemmColumnBias(*constantValue(network, bias), int8BaseOf(layer).attrFloat("beta", 1.0f), w.n);
      bias = uniqueTensorName(network, layer.name + ":bias");
      network.addConstant(bias, perColumn);
    }
    const std::string residual = layer.domain.empty() ? "" : inputOf(layer, 3);
    q.inputs = {layer.inputs[0], packed, bias, residual, scales};
    return q;
  }

  Int4WeightOptions options_;
  Int4Outcome& outcome_;
  std::map<std::string, std::pair<std::string, std::string>> packed_;  // reading -> packed, scales
};

}  // namespace

bool isValidInt4GroupSize(int64_t groupSize) { return groupSize == 32 || groupSize == 64 || groupSize == 128; }

std::unique_ptr<Pass> createQuantizeWeightsInt4Pass(Int4WeightOptions options, Int4Outcome& outcome) {
  return std::make_unique<QuantizeWeightsInt4Pass>(std::move(options), outcome);
}

}  // namespace kiln
