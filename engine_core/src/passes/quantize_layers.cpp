// Implicit INT8: Conv / MatMul / Gemm layers (plain or fused with their epilogue) become
// kiln.QuantizedConv / kiln.QuantizedMatMul. Their float activations keep flowing between layers
// and are quantized on entry with the calibrated per-tensor scale; constant weights are quantized
// here once, per output channel (a Conv's M, a MatMul's or Gemm's column N), with scale = amax / 127.
// A Gemm becomes a MatMul-form layer: B laid out [K, N], alpha folded into the column scales and
// beta * C into a per-column bias.
#include "quantize_layers.h"

#include <kernels/cpu/quant/quantize.h>

#include "../ops/quantized.h"
#include "graph_utils.h"
#include "int8_layer_form.h"

#include <cmath>
#include <tuple>

namespace kiln {
namespace {

using namespace passes;

using Form = Int8Form;

std::string inputOf(const Layer& layer, size_t i) { return layer.hasInput(i) ? layer.inputs[i] : ""; }
bool isFused(const Layer& layer) { return layer.domain == fused::kDomain; }

const HostTensor* float32Constant(const Network& network, const std::string& name) {
  const HostTensor* value = name.empty() ? nullptr : constantValue(network, name);
  return value && value->dtype() == DataType::kFloat32 ? value : nullptr;
}

DataType declaredType(const Network& network, const std::string& name) {
  const Tensor* t = name.empty() ? nullptr : network.findTensor(name);
  return t ? t->dtype : DataType::kUndefined;
}

// Why `layer` cannot become an int8 layer of `form` ("" when it can); fills its activations.
std::string problemWith(const Network& network, const Layer& layer, Form form, std::vector<std::string>& activations) {
  if (form == Form::kConvTranspose) return "int8 ConvTranspose has no kernel yet";
  if (layer.outputs.size() != 1 || declaredType(network, layer.outputs[0]) != DataType::kFloat32)
    return "its output is not float32";
  const std::string a = inputOf(layer, 0), b = inputOf(layer, 1);
  if (declaredType(network, a) != DataType::kFloat32)
    return "int8 calibration takes float32 activations; its input is " +
           std::string(toString(declaredType(network, a)));
  if (constantValue(network, a)) return "its input 0 is a constant (nothing to calibrate)";
  activations = {a};
  const HostTensor* weights = float32Constant(network, b);
  const Layer base = int8BaseOf(layer);
  switch (form) {
    case Form::kConv:
      if (!weights || weights->rank() < 3) return "its weights are not a float32 constant";
      return "";
    case Form::kMatMul:
      if (weights) return "";
      if (declaredType(network, b) != DataType::kFloat32) return "its B is not float32";
      activations.push_back(b);
      return "";
    case Form::kGemm:
      if (base.attrInt("transA", 0) != 0) return "a Gemm with transA = 1 has no int8 form yet";
      if (!weights || weights->rank() != 2) return "its B is not a 2-D float32 constant";
      if (!base.hasInput(2)) return "";
      return gemmBiasProblem(float32Constant(network, base.inputs[2]), weights->dim(base.attrInt("transB", 0) != 0 ? 0 : 1));
    default: return "";
  }
}

struct QuantizedWeights {
  HostTensor values;  // int8, w's shape
  HostTensor scales;  // float32 [channels]: amax / 127 of each channel, times `factor`
};

// `w` seen as [outer, channels, inner], each channel quantized with its own scale amax / 127 (the
// same rounding as the activations: round half to even, saturated).
QuantizedWeights quantizeChannels(const HostTensor& w, int64_t outer, int64_t channels, int64_t inner,
                                  float factor = 1.0f) {
  const float* v = w.data<float>();
  std::vector<float> amax(size_t(channels), 0.0f);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t i = 0; i < inner; ++i)
        amax[size_t(c)] = std::max(amax[size_t(c)], std::fabs(v[(o * channels + c) * inner + i]));
  std::vector<float> scales(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c) scales[size_t(c)] = amax[size_t(c)] > 0 ? amax[size_t(c)] / 127.0f : 1.0f;
  HostTensor values(DataType::kInt8, w.dims());
  kernels::quantizeLinear<float, int8_t>(v, scales.data(), nullptr, values.data<int8_t>(), outer, channels, inner);
  for (float& s : scales) s *= factor;
  return {values, HostTensor::fromVector<float>({channels}, scales)};
}

class QuantizeLayersPass final : public Pass {
 public:
  QuantizeLayersPass(Int8Survey& survey, const std::map<std::string, float>& scales)
      : survey_(survey), scales_(scales) {}
  std::string name() const override { return "QuantizeLayers"; }

 private:
  void apply(Network& network, PassContext& context) override {
    for (const Int8Candidate& candidate : survey_.candidates) {
      Layer& layer = network.layers()[candidate.layer];
      std::string missing;
      for (const auto& a : candidate.activations)
        if (!scales_.count(a)) missing = a;
      if (!missing.empty()) {
        survey_.keptFloat[layer.name] = "no calibration scale for its input '" + missing +
                                        "' (not seen by the calibration run, or not in a cache made with "
                                        "other build options)";
        continue;
      }
      const std::string note = "quantized " + describeLayers(network, {candidate.layer}) + " to int8";
      layer = rewrite(network, layer, *int8FormOf(layer));
      context.note(note);
    }
    network.removeUnusedTensors();
  }

  // The constant holding `tensor`'s activation scale, made once per tensor.
  std::string activationScale(Network& network, const std::string& tensor) {
    auto it = scaleConstants_.find(tensor);
    if (it != scaleConstants_.end()) return it->second;
    const std::string name = uniqueTensorName(network, tensor + ":int8_scale");
    network.addConstant(name, HostTensor::scalar<float>(scales_.at(tensor)));
    return scaleConstants_[tensor] = name;
  }

  // Adds `weights` as int8 values and scales named after `source`; returns their names.
  std::pair<std::string, std::string> addWeights(Network& network, const std::string& source,
                                                 QuantizedWeights weights) {
    const std::string values = uniqueTensorName(network, source + ":int8");
    network.addConstant(values, std::move(weights.values));
    const std::string scales = uniqueTensorName(network, source + ":int8_scale");
    network.addConstant(scales, std::move(weights.scales));
    return {values, scales};
  }

  Layer rewrite(Network& network, const Layer& layer, Form form) {
    Layer q = quantizedLayerFor(layer, form);
    const std::string a = layer.inputs[0], b = layer.inputs[1];
    const std::string residual = isFused(layer) ? inputOf(layer, 3) : "";
    std::string bias = inputOf(layer, 2), bValues = b, bScale;
    const HostTensor* weights = float32Constant(network, b);
    if (form == Form::kConv) {
      const int64_t channels = weights->dim(0);
      std::tie(bValues, bScale) =
          addWeights(network, b, quantizeChannels(*weights, 1, channels, weights->elementCount() / channels));
    } else if (form == Form::kMatMul && weights) {
      const int64_t columns = weights->rank() >= 2 ? weights->dims().back() : 1;
      std::tie(bValues, bScale) =
          addWeights(network, b, quantizeChannels(*weights, weights->elementCount() / columns, columns, 1));
    } else if (form == Form::kMatMul) {
      bScale = activationScale(network, b);
    } else {  // Gemm: B as [K, N], alpha in the scales, beta * C as the bias
      const Layer base = int8BaseOf(layer);
      const HostTensor kn = base.attrInt("transB", 0) != 0 ? transposed(*weights) : *weights;
      const int64_t columns = kn.dim(1);
      std::tie(bValues, bScale) =
          addWeights(network, b, quantizeChannels(kn, kn.dim(0), columns, 1, base.attrFloat("alpha", 1.0f)));
      if (!bias.empty()) {
        const HostTensor perColumn = gemmColumnBias(*float32Constant(network, bias), base.attrFloat("beta", 1.0f), columns);
        bias = uniqueTensorName(network, layer.name + ":bias");
        network.addConstant(bias, perColumn);
      }
    }
    q.inputs = {a, bValues, bias, residual, activationScale(network, a), bScale};
    return q;
  }

  Int8Survey& survey_;
  const std::map<std::string, float>& scales_;
  std::map<std::string, std::string> scaleConstants_;
};

}  // namespace

std::set<std::string> Int8Survey::activations() const {
  std::set<std::string> all;
  for (const auto& c : candidates) all.insert(c.activations.begin(), c.activations.end());
  return all;
}

Int8Survey surveyInt8Layers(const Network& network, const std::map<std::string, Precision>& layerPrecisions,
                            const Int8Refusal& refusal) {
  Int8Survey survey;
  for (size_t i = 0; i < network.layers().size(); ++i) {
    const Layer& layer = network.layers()[i];
    const auto form = int8FormOf(layer);
    if (!form) continue;
    if (auto held = layerPrecisions.find(layer.name); held != layerPrecisions.end() && held->second != Precision::kINT8) {
      survey.keptFloat[layer.name] = std::string("--layer-precision asks for ") + toString(held->second);
      continue;
    }
    Int8Candidate candidate{i, {}};
    std::string why = problemWith(network, layer, *form, candidate.activations);
    if (why.empty() && refusal) why = refusal(quantizedLayerFor(layer, *form));
    if (why.empty()) survey.candidates.push_back(std::move(candidate));
    else survey.keptFloat[layer.name] = why;
  }
  return survey;
}

std::unique_ptr<Pass> createQuantizeLayersPass(Int8Survey& survey, const std::map<std::string, float>& scales) {
  return std::make_unique<QuantizeLayersPass>(survey, scales);
}

}  // namespace kiln
