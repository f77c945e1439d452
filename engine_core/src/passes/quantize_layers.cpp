// Implicit INT8, FP8 and FP4: Conv / MatMul / Gemm layers (plain or fused with their epilogue)
// become kiln.QuantizedConv / kiln.QuantizedMatMul. Their float activations keep flowing between
// layers and are quantized on entry with the calibrated per-tensor scale (threshold / 127 for int8,
// / 448 for fp8, / (6 * 448) for fp4's tensor scale); constant weights are quantized here once:
// int8 and fp8 per output channel (a Conv's M, a MatMul's or Gemm's column N) with scale = amax /
// 127 or amax / 448, fp4 as NVFP4 (one tensor scale amax / (6 * 448), an e4m3 scale per 16 along K).
// A Gemm becomes a MatMul-form layer: B laid out [K, N], alpha folded into the column scales and
// beta * C into a per-column bias.
#include "quantize_layers.h"

#include <kernels/cpu/quant/quantize.h>
#include <kernels/cpu/quant/small_float_layers.h>
#include <kernels/cuda/common/small_floats.h>

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

// Why `layer` cannot become a `precision` layer of `form` ("" when it can); fills its activations.
std::string problemWith(const Network& network, const Layer& layer, Form form, Precision precision,
                        std::vector<std::string>& activations) {
  if (form == Form::kConvTranspose) return std::string(toString(precision)) + " ConvTranspose has no kernel yet";
  if (layer.outputs.size() != 1 || declaredType(network, layer.outputs[0]) != DataType::kFloat32)
    return "its output is not float32";
  const std::string a = inputOf(layer, 0), b = inputOf(layer, 1);
  if (declaredType(network, a) != DataType::kFloat32)
    return "calibration takes float32 activations; its input is " +
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
      if (weights && precision == Precision::kFP4 && weights->rank() != 2) return "fp4 weights (B) must be a matrix";
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
  HostTensor values;       // int8, float8e4m3 or fp4's uint8 e2m1 codes, in w's shape
  HostTensor scales;       // float32: one per channel (int8, fp8: amax / 127 or 448) or one (fp4), times `factor`
  HostTensor blockScales;  // fp4: float8e4m3 [outer, blocks, inner]
};

// `w` seen as [outer, channels, inner], each channel quantized with its own scale: int8 with amax /
// 127 (round half to even, saturated, as the activations), fp8 with amax / 448. `oneScale`: every
// channel gets the whole tensor's scale (still one value per channel), as fp8 products' weights
// have it: e4m3 keeps 3 significant bits at any magnitude, so a tensor scale costs little accuracy,
// and cuBLASLt's fp8 GEMMs with a scalar dequantization are the fast ones (with per-column scales
// it offers one slow algorithm on sm_90).
QuantizedWeights quantizeChannels(const HostTensor& w, int64_t outer, int64_t channels, int64_t inner,
                                  Precision precision, float factor = 1.0f, bool oneScale = false) {
  const float* v = w.data<float>();
  std::vector<float> amax(size_t(channels), 0.0f);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t i = 0; i < inner; ++i)
        amax[size_t(c)] = std::max(amax[size_t(c)], std::fabs(v[(o * channels + c) * inner + i]));
  if (oneScale) std::fill(amax.begin(), amax.end(), *std::max_element(amax.begin(), amax.end()));
  const bool fp8 = precision == Precision::kFP8;
  const float largest = fp8 ? kernels::kE4M3Max : 127.0f;
  std::vector<float> scales(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c) scales[size_t(c)] = amax[size_t(c)] > 0 ? amax[size_t(c)] / largest : 1.0f;
  HostTensor values(fp8 ? DataType::kFloat8E4M3 : DataType::kInt8, w.dims());
  if (fp8) {
    auto* codes = static_cast<uint8_t*>(values.rawData());
    for (int64_t i = 0; i < w.elementCount(); ++i)
      codes[i] = kernels::encodeE4M3(v[i] / scales[size_t(i / inner % channels)]);
  } else {
    kernels::quantizeLinear<float, int8_t>(v, scales.data(), nullptr, values.data<int8_t>(), outer, channels, inner);
  }
  for (float& s : scales) s *= factor;
  return {values, HostTensor::fromVector<float>({channels}, scales), {}};
}

// `w` in NVFP4 along its dim `axis` (K): one tensor scale amax / (6 * 448) (times `factor`), an
// e4m3 scale per 16 along K (w's dims with K's replaced by the block count) and e2m1 codes.
QuantizedWeights quantizeFp4(const HostTensor& w, size_t axis, float factor = 1.0f) {
  kernels::BlockedAxis layout{1, w.dim(axis), 1, quantized::kFp4BlockSize};
  for (size_t d = 0; d < w.rank(); ++d)
    if (d != axis) (d < axis ? layout.outer : layout.inner) *= w.dim(d);
  const float* v = w.data<float>();
  float amax = 0;
  for (int64_t i = 0; i < w.elementCount(); ++i) amax = std::max(amax, std::fabs(v[i]));
  const float tensorScale = amax > 0 ? amax / (kernels::kE2M1Max * kernels::kE4M3Max) : 1.0f;
  HostTensor codes(DataType::kUInt8, w.dims());
  std::vector<int64_t> blockDims = w.dims();
  blockDims[axis] = layout.blocks();
  HostTensor blocks(DataType::kFloat8E4M3, blockDims);
  kernels::nvfp4Quantize(v, layout, tensorScale, codes.data<uint8_t>(), static_cast<uint8_t*>(blocks.rawData()));
  return {codes, HostTensor::scalar<float>(tensorScale * factor), blocks};
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
      const std::string note = "quantized " + describeLayers(network, {candidate.layer}) + " to " +
                               toString(candidate.precision);
      layer = rewrite(network, layer, *int8FormOf(layer), candidate.precision);
      context.note(note);
    }
    network.removeUnusedTensors();
  }

  // The constant holding `tensor`'s activation scale for `precision`, made once per tensor and
  // precision: the calibrated threshold (the calibration's scales are int8's, threshold / 127) over
  // fp8's 448 or fp4's 6 * 448.
  std::string activationScale(Network& network, const std::string& tensor, Precision precision) {
    const std::string suffix = std::string(":") + toString(precision) + "_scale";
    auto it = scaleConstants_.find(tensor + suffix);
    if (it != scaleConstants_.end()) return it->second;
    const float threshold = scales_.at(tensor) * 127.0f;
    const float largest = precision == Precision::kFP8   ? kernels::kE4M3Max
                          : precision == Precision::kFP4 ? kernels::kE2M1Max * kernels::kE4M3Max
                                                         : 0;
    const std::string name = uniqueTensorName(network, tensor + suffix);
    network.addConstant(name, HostTensor::scalar<float>(largest > 0 ? threshold / largest : scales_.at(tensor)));
    return scaleConstants_[tensor + suffix] = name;
  }

  // Adds the quantized weights as constants named after `source` and `precision`; sets the layer's
  // inputs 1, 5 and (fp4) 10 to them.
  void addWeights(Network& network, const std::string& source, Precision precision, QuantizedWeights weights,
                  Layer& q) {
    const std::string tag = std::string(":") + toString(precision);
    q.inputs[1] = uniqueTensorName(network, source + tag);
    network.addConstant(q.inputs[1], std::move(weights.values));
    q.inputs[quantized::kWeightScaleInput] = uniqueTensorName(network, source + tag + "_scale");
    network.addConstant(q.inputs[quantized::kWeightScaleInput], std::move(weights.scales));
    if (precision != Precision::kFP4) return;
    q.inputs.resize(quantized::kWeightBlockScaleInput + 1);
    q.inputs[quantized::kWeightBlockScaleInput] = uniqueTensorName(network, source + tag + "_block_scale");
    network.addConstant(q.inputs[quantized::kWeightBlockScaleInput], std::move(weights.blockScales));
  }

  Layer rewrite(Network& network, const Layer& layer, Form form, Precision precision) {
    Layer q = quantizedLayerFor(layer, form, precision);
    const std::string a = layer.inputs[0], b = layer.inputs[1];
    const bool fp4 = precision == Precision::kFP4;
    q.inputs = {a, b, inputOf(layer, 2), isFused(layer) ? inputOf(layer, 3) : "",
                activationScale(network, a, precision), ""};
    const HostTensor* weights = float32Constant(network, b);
    if (form == Form::kConv) {  // fp4: blocks along the input channels
      const int64_t channels = weights->dim(0);
      addWeights(network, b, precision,
                 fp4 ? quantizeFp4(*weights, 1)
                     : quantizeChannels(*weights, 1, channels, weights->elementCount() / channels, precision),
                 q);
    } else if (form == Form::kMatMul && weights) {  // fp4: blocks along K, a matrix's rows
      const int64_t columns = weights->rank() >= 2 ? weights->dims().back() : 1;
      addWeights(network, b, precision,
                 fp4 ? quantizeFp4(*weights, 0)
                     : quantizeChannels(*weights, weights->elementCount() / columns, columns, 1, precision, 1.0f,
                                        precision == Precision::kFP8),
                 q);
    } else if (form == Form::kMatMul) {
      q.inputs[quantized::kWeightScaleInput] = activationScale(network, b, precision);
    } else {  // Gemm: B as [K, N], alpha in the scales, beta * C as the bias
      const Layer base = int8BaseOf(layer);
      const HostTensor kn = base.attrInt("transB", 0) != 0 ? transposed(*weights) : *weights;
      const int64_t columns = kn.dim(1);
      const float alpha = base.attrFloat("alpha", 1.0f);
      addWeights(network, b, precision,
                 fp4 ? quantizeFp4(kn, 0, alpha)
                     : quantizeChannels(kn, kn.dim(0), columns, 1, precision, alpha, precision == Precision::kFP8),
                 q);
      if (const std::string c = inputOf(layer, 2); !c.empty()) {
        const HostTensor perColumn = gemmColumnBias(*float32Constant(network, c), base.attrFloat("beta", 1.0f), columns);
        q.inputs[2] = uniqueTensorName(network, layer.name + ":bias");
        network.addConstant(q.inputs[2], perColumn);
      }
    }
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

Int8Survey surveyInt8Layers(const Network& network, const std::vector<Precision>& precisions,
                            const std::map<std::string, Precision>& layerPrecisions, const Int8Refusal& refusal) {
  Int8Survey survey;
  for (size_t i = 0; i < network.layers().size(); ++i) {
    const Layer& layer = network.layers()[i];
    const auto form = int8FormOf(layer);
    if (!form) continue;
    std::vector<Precision> tried = precisions;
    if (auto held = layerPrecisions.find(layer.name); held != layerPrecisions.end()) {
      if (!quantized::isQuantizedPrecision(held->second)) {
        survey.keptFloat[layer.name] = std::string("--layer-precision asks for ") + toString(held->second);
        continue;
      }
      tried = {held->second};
    }
    std::string why;  // each precision's reason, when none fits
    for (Precision precision : tried) {
      Int8Candidate candidate{i, {}, precision};
      std::string problem = problemWith(network, layer, *form, precision, candidate.activations);
      if (problem.empty() && refusal) problem = refusal(quantizedLayerFor(layer, *form, precision));
      if (problem.empty()) {
        survey.candidates.push_back(std::move(candidate));
        why.clear();
        break;
      }
      why += (why.empty() ? "" : "; ") + (tried.size() > 1 ? std::string(toString(precision)) + ": " : "") + problem;
    }
    if (!why.empty()) survey.keptFloat[layer.name] = why;
  }
  return survey;
}

std::unique_ptr<Pass> createQuantizeLayersPass(Int8Survey& survey, const std::map<std::string, float>& scales) {
  return std::make_unique<QuantizeLayersPass>(survey, scales);
}

}  // namespace kiln
