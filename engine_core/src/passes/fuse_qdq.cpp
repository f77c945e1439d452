// Explicit quantization (see fuse_qdq.h): Q/DQ propagation, then DQ(x), DQ(W) -> Conv / MatMul /
// Gemm [-> epilogue] [-> Q] into one int8 layer, then a QuantizeLinear folded into the one int8
// layer reading it, then the reasons for what stays.
#include "fuse_qdq.h"

#include "../ops/quantized.h"
#include "graph_utils.h"
#include "int8_layer_form.h"
#include "qdq_params.h"
#include "qdq_propagation.h"

#include <optional>
#include <set>
#include <tuple>

namespace kiln {
namespace {

using namespace passes;
using quantized::kActivationScaleInput;
using quantized::kActivationZeroPointInput;
using quantized::kOutputScaleInput;
using quantized::kOutputZeroPointInput;
using quantized::kWeightScaleInput;
using quantized::kWeightZeroPointInput;

std::string inputOf(const Layer& layer, size_t i) { return layer.hasInput(i) ? layer.inputs[i] : ""; }
// "Conv 'c1'": a fused Conv / MatMul / Gemm by its base op, as the model names it.
std::string describe(const Layer& layer) {
  return (int8FormOf(layer) ? int8BaseOf(layer).opType : layer.opType) + " '" + layer.name + "'";
}

std::optional<size_t> dequantizeOf(const GraphIndex& index, const std::string& tensor) {
  const auto producer = tensor.empty() ? std::nullopt : index.producer(tensor);
  if (producer && isDequantizeLinear(index.layer(*producer))) return producer;
  return std::nullopt;
}

// An operand read through a DequantizeLinear.
struct Operand {
  size_t dequantize = 0;
  QdqParams params;
};

struct Int8Weights {
  HostTensor values;  // int8: the quantized weights minus their zero point
  HostTensor scales;  // float32, one per output channel or one
};

// What one int8 layer is made of.
struct Fusion {
  Int8Form form = Int8Form::kConv;
  Operand x;
  std::optional<Operand> weights;      // a DequantizeLinear of constants: `int8` holds them
  Int8Weights int8;
  std::optional<Operand> activationB;  // a MatMul's B that is an activation
  std::optional<size_t> biasDequantize;
  std::string bias;                    // an existing float32 bias, or "" (see newBias)
  std::optional<HostTensor> newBias;   // dequantized here, or a Gemm's beta * C
  std::optional<size_t> outputQuantize;
  QdqParams y;
};

std::string readOperand(const Network& network, const GraphIndex& index, const std::string& tensor,
                        const std::string& what, Operand& operand) {
  const auto dq = dequantizeOf(index, tensor);
  if (!dq) return what + " is not dequantized (no DequantizeLinear before it)";
  operand.dequantize = *dq;
  const std::string why = readQdqParams(network, index.layer(*dq), operand.params);
  return why.empty() ? "" : "the DequantizeLinear '" + index.layer(*dq).name + "' of " + what + ": " + why;
}

// The quantized weights minus their zero points as int8 (fp8 weights as they are: their zero point
// is 0), with their scales along `channelAxis` (or one scale); why not when a value leaves int8's
// range or the scales run along another axis.
std::string int8WeightsOf(const HostTensor& q, const QdqParams& p, int64_t channelAxis, Int8Weights& out) {
  if (!p.perTensor() && p.axis != channelAxis)
    return "its weights are quantized per channel along axis " + std::to_string(p.axis) +
           ", not along the output channels (axis " + std::to_string(channelAxis) + ")";
  const int64_t channels = int64_t(p.scales.size());
  out.scales = HostTensor::fromVector<float>({channels}, p.scales);
  if (p.type == DataType::kFloat8E4M3) {
    out.values = q;
    return "";
  }
  int64_t inner = 1;
  for (size_t d = size_t(channelAxis) + 1; d < q.rank(); ++d) inner *= q.dim(d);
  const std::vector<double> values = q.toDoubleVector();
  HostTensor w(DataType::kInt8, q.dims());
  for (int64_t i = 0; i < q.elementCount(); ++i) {
    const double v = values[size_t(i)] - p.zeros[size_t(channels == 1 ? 0 : (i / inner) % channels)];
    if (v < -128 || v > 127)
      return "asymmetric " + std::string(toString(p.type)) +
             " zero point on weights: w - zero_point leaves int8's range (int8 layers take symmetric weights)";
    w.data<int8_t>()[i] = int8_t(v);
  }
  out.values = w;
  return "";
}

class FuseQdqPass final : public Pass {
 public:
  FuseQdqPass(QdqFusionOptions options, QdqFusionOutcome& outcome)
      : options_(std::move(options)), outcome_(outcome) {}
  std::string name() const override { return "FuseQdq"; }

 private:
  void apply(Network& network, PassContext& context) override {
    network.sortLayersTopologically();
    while (propagateQdqOnce(network, context, outcome_.removed)) {
    }
    removeDeadQdq(network);
    fuseLayers(network, context);
    removeDeadQdq(network);  // the DequantizeLinear layers the int8 layers took
    while (foldEntryQuantizeOnce(network, context)) {
    }
    removeDeadQdq(network);
    explainRemaining(network);
    network.removeUnusedTensors();
  }

  void fuseLayers(Network& network, PassContext& context) {
    std::vector<std::string> names;
    for (const Layer& l : network.layers())
      if (int8FormOf(l)) names.push_back(l.name);
    for (const std::string& name : names) {
      size_t i = 0;
      while (i < network.layers().size() && network.layers()[i].name != name) ++i;
      if (i == network.layers().size() || !int8FormOf(network.layers()[i])) continue;
      const GraphIndex index(network);
      const Layer& layer = network.layers()[i];
      if (!dequantizeOf(index, inputOf(layer, 0)) && !dequantizeOf(index, inputOf(layer, 1)))
        continue;  // not part of the model's quantization: it stays float, as the model says
      Fusion f;
      if (std::string why = match(network, index, layer, f); !why.empty()) {
        outcome_.keptFloat[name] = why;
        continue;
      }
      fuse(network, index, i, f, context);
    }
  }

  // Why `layer`, which reads dequantized values, cannot become an int8 layer ("" when `f` is ready).
  std::string match(const Network& network, const GraphIndex& index, const Layer& layer, Fusion& f) {
    f.form = *int8FormOf(layer);
    if (f.form == Int8Form::kConvTranspose) return "int8 ConvTranspose has no kernel yet";
    const Tensor* out = layer.outputs.size() == 1 ? network.findTensor(layer.outputs[0]) : nullptr;
    if (!out || out->dtype != DataType::kFloat32) return "its output is not float32";
    if (std::string why = readOperand(network, index, inputOf(layer, 0), "its input", f.x); !why.empty()) return why;
    if (auto held = options_.layerPrecisions.find(layer.name);
        held != options_.layerPrecisions.end() && held->second != f.x.params.precision())
      return std::string("--layer-precision asks for ") + toString(held->second);
    if (!f.x.params.perTensor()) return "its input is quantized per channel (quantized layers take one activation scale)";
    if (std::string why = matchWeights(network, index, layer, f); !why.empty()) return why;
    const Operand& b = f.weights ? *f.weights : *f.activationB;
    if (b.params.precision() != f.x.params.precision())
      return "its input is " + std::string(toString(f.x.params.type)) + " but its " + (f.weights ? "weights" : "B") +
             " " + std::string(toString(b.params.type)) + " (one layer multiplies one kind: int8 or fp8)";
    if (std::string why = matchBias(network, index, layer, f); !why.empty()) return why;
    if (options_.refusal)
      if (std::string why = options_.refusal(quantizedLayerFor(layer, f.form, f.x.params.precision())); !why.empty())
        return why;
    matchOutputQuantize(network, index, layer, f);
    return "";
  }

  std::string matchWeights(const Network& network, const GraphIndex& index, const Layer& layer, Fusion& f) const {
    Operand b;
    const bool matmul = f.form == Int8Form::kMatMul;
    if (std::string why = readOperand(network, index, inputOf(layer, 1), matmul ? "its B" : "its weights", b);
        !why.empty())
      return why;
    const HostTensor* q = constantValue(network, index.layer(b.dequantize).inputs[0]);
    if (!q) {
      if (!matmul) return "its weights are not constant";
      if (!b.params.perTensor()) return "its B, an activation, is quantized per channel (it takes one scale)";
      f.activationB = b;
      return "";
    }
    const Layer base = int8BaseOf(layer);
    int64_t channelAxis = 0;
    if (f.form == Int8Form::kConv) {
      if (q->rank() < 3) return "its weights are not a convolution's";
    } else if (matmul) {
      if (q->rank() < 2) return "its B is not a matrix";
      channelAxis = int64_t(q->rank()) - 1;
    } else {
      if (base.attrInt("transA", 0) != 0) return "a Gemm with transA = 1 has no int8 form yet";
      if (q->rank() != 2) return "its B is not a matrix";
      channelAxis = base.attrInt("transB", 0) != 0 ? 0 : 1;
    }
    if (std::string why = int8WeightsOf(*q, b.params, channelAxis, f.int8); !why.empty()) return why;
    if (f.form == Int8Form::kGemm) {  // MatMul form: B as [K, N], alpha in the column scales
      if (channelAxis == 0) f.int8.values = transposed(f.int8.values);
      for (int64_t c = 0; c < f.int8.scales.elementCount(); ++c)
        f.int8.scales.data<float>()[c] *= base.attrFloat("alpha", 1.0f);
    }
    f.weights = b;
    return "";
  }

  // The bias: a float32 constant as it is, or a DequantizeLinear of constants (an int32 bias with
  // scale x_scale * w_scale) dequantized here as that layer would; a Gemm's C becomes beta * C.
  std::string matchBias(const Network& network, const GraphIndex& index, const Layer& layer, Fusion& f) const {
    const std::string c = inputOf(layer, 2);
    if (c.empty()) return "";
    const HostTensor* constant = constantValue(network, c);
    HostTensor value;
    if (constant && constant->dtype() == DataType::kFloat32) {
      value = *constant;
    } else if (const auto dq = dequantizeOf(index, c)) {
      const auto results = evaluateOnConstants(network, index.layer(*dq));
      if (!results || results->front().dtype() != DataType::kFloat32)
        return "its bias is a DequantizeLinear of values that are not float32 constants";
      value = results->front();
      f.biasDequantize = *dq;
    } else {
      return "its bias is not a constant";
    }
    if (f.form == Int8Form::kGemm) {
      const Layer base = int8BaseOf(layer);
      const int64_t columns = f.int8.values.dim(1);
      if (std::string why = gemmBiasProblem(&value, columns); !why.empty()) return why;
      f.newBias = gemmColumnBias(value, base.attrFloat("beta", 1.0f), columns);
    } else if (f.biasDequantize) {
      f.newBias = value.reshaped({value.elementCount()});
    } else {
      f.bias = c;
    }
    return "";
  }

  // A QuantizeLinear that alone reads the layer's result becomes its output quantization.
  void matchOutputQuantize(const Network& network, const GraphIndex& index, const Layer& layer, Fusion& f) {
    const auto reader = index.soleConsumer(layer.outputs[0]);
    if (!reader || !isQuantizeLinear(index.layer(*reader))) return;
    const Layer& q = index.layer(*reader);
    std::string why = readQdqParams(network, q, f.y);
    if (why.empty() && !f.y.perTensor()) why = "per-channel output quantization has no quantized layer kernel";
    if (why.empty() && f.y.precision() != f.x.params.precision())
      why = "it quantizes " + describe(layer) + "'s result to " + std::string(toString(f.y.type)) +
            ", another kind than the layer's " + toString(f.x.params.precision());
    if (!why.empty()) {
      outputWhy_[q.name] = why;
      return;
    }
    f.outputQuantize = *reader;
  }

  void fuse(Network& network, const GraphIndex& index, size_t i, const Fusion& f, PassContext& context) {
    const Layer layer = network.layers()[i];
    Layer q = quantizedLayerFor(layer, f.form, f.x.params.precision());
    std::vector<size_t> parts = {f.x.dequantize};
    q.inputs.assign(quantized::kMaxInputCount, "");
    q.inputs[0] = index.layer(f.x.dequantize).inputs[0];
    q.inputs[kActivationScaleInput] = f.x.params.addScaleConstant(network, layer.name + ":x");
    q.inputs[kActivationZeroPointInput] = f.x.params.addZeroPointConstant(network, layer.name + ":x");
    if (f.weights) {
      parts.push_back(f.weights->dequantize);
      q.inputs[1] = uniqueTensorName(network, layer.name + ":weights:" + toString(f.x.params.precision()));
      network.addConstant(q.inputs[1], f.int8.values);
      q.inputs[kWeightScaleInput] = uniqueTensorName(network, layer.name + ":weights:scale");
      network.addConstant(q.inputs[kWeightScaleInput], f.int8.scales);
    } else {
      parts.push_back(f.activationB->dequantize);
      q.inputs[1] = index.layer(f.activationB->dequantize).inputs[0];
      q.inputs[kWeightScaleInput] = f.activationB->params.addScaleConstant(network, layer.name + ":b");
      q.inputs[kWeightZeroPointInput] = f.activationB->params.addZeroPointConstant(network, layer.name + ":b");
    }
    if (f.biasDequantize) parts.push_back(*f.biasDequantize);
    q.inputs[2] = f.bias;
    if (f.newBias) {
      q.inputs[2] = uniqueTensorName(network, layer.name + ":bias");
      network.addConstant(q.inputs[2], *f.newBias);
    }
    if (layer.domain == fused::kDomain) q.inputs[3] = inputOf(layer, 3);  // the residual
    parts.push_back(i);
    if (f.outputQuantize) {
      parts.push_back(*f.outputQuantize);
      q.inputs[kOutputScaleInput] = f.y.addScaleConstant(network, layer.name + ":y");
      q.inputs[kOutputZeroPointInput] = f.y.addZeroPointConstant(network, layer.name + ":y");
      q.outputs = {index.layer(*f.outputQuantize).outputs[0]};
    }
    while (q.inputs.back().empty()) q.inputs.pop_back();
    q.origins = mergedOrigins(network, parts);
    context.note("fused " + describeLayers(network, parts) + " into " + q.domain + "." + q.opType + " '" + q.name + "'");
    network.layers()[i] = std::move(q);
    if (f.outputQuantize) eraseLayers(network, {*f.outputQuantize});
  }

  // A QuantizeLinear of float32 values whose 8-bit result only one int8 layer reads, with the same
  // scale and zero point as that layer's operand: the layer quantizes on entry instead.
  bool foldEntryQuantizeOnce(Network& network, PassContext& context) {
    const GraphIndex index(network);
    for (size_t i = 0; i < network.layers().size(); ++i) {
      const Layer& quantize = network.layers()[i];
      QdqParams p;
      if (!isQuantizeLinear(quantize) || !readQdqParams(network, quantize, p).empty() || !p.perTensor()) continue;
      const Tensor* x = network.findTensor(quantize.inputs[0]);
      const auto r = index.soleConsumer(quantize.outputs[0]);
      if (!x || x->dtype != DataType::kFloat32 || !r || !quantized::isQuantizedLayer(index.layer(*r))) continue;
      Layer& reader = network.layers()[*r];
      for (auto [slot, scale, zero] : {std::tuple{size_t(0), kActivationScaleInput, kActivationZeroPointInput},
                                       std::tuple{size_t(1), kWeightScaleInput, kWeightZeroPointInput}}) {
        const bool readsHere = inputOf(reader, slot) == quantize.outputs[0];
        if (!readsHere || inputOf(reader, 1 - slot) == quantize.outputs[0] || !reader.hasInput(zero)) continue;
        const auto s = scalarConstant(network, reader.inputs[scale]);
        const HostTensor* z = constantValue(network, reader.inputs[zero]);
        if (!s || float(*s) != p.scales[0] || !z || z->dtype() != p.type || int32_t(z->toDoubleVector()[0]) != p.zeros[0])
          continue;
        reader.inputs[slot] = quantize.inputs[0];
        for (const auto& origin : quantize.origins) reader.origins.push_back(origin);
        context.note("QuantizeLinear '" + quantize.name + "' done on entry by " + reader.domain + "." + reader.opType +
                     " '" + reader.name + "'");
        eraseLayers(network, {i});
        return true;
      }
    }
    return false;
  }

  static void removeDeadQdq(Network& network) {
    for (bool changed = true; changed;) {
      const GraphIndex index(network);
      std::set<size_t> dead;
      for (size_t i = 0; i < network.layers().size(); ++i) {
        const Layer& l = network.layers()[i];
        if ((isQuantizeLinear(l) || isDequantizeLinear(l)) && index.consumers(l.outputs[0]).empty() &&
            !index.isGraphOutput(l.outputs[0]))
          dead.insert(i);
      }
      changed = !dead.empty();
      eraseLayers(network, dead);
    }
  }

  void explainRemaining(const Network& network) {
    const GraphIndex index(network);
    for (const Layer& l : network.layers()) {
      if (isDequantizeLinear(l)) outcome_.unfused[l.name] = whyDequantizeStays(network, index, l);
      else if (isQuantizeLinear(l)) outcome_.unfused[l.name] = whyQuantizeStays(network, index, l);
    }
  }

  // "int8" or "fp8": the kind of values a Q/DQ layer quantizes to.
  static std::string kindOf(const Network& network, const Layer& qdq) {
    QdqParams p;
    return readQdqParams(network, qdq, p).empty() ? toString(p.precision()) : "int8";
  }

  std::string whyDequantizeStays(const Network& network, const GraphIndex& index, const Layer& dq) const {
    std::vector<std::string> reasons;  // its readers' (a reader's own reason names the DequantizeLinear's problem)
    if (index.isGraphOutput(dq.outputs[0])) reasons.push_back("its output is the graph output '" + dq.outputs[0] + "'");
    for (size_t r : index.consumers(dq.outputs[0])) {
      const Layer& reader = index.layer(r);
      if (quantized::isQuantizedLayer(reader))  // its residual (X, W and a bias come in other forms)
        reasons.push_back(describe(reader) + " adds it as its float residual");
      else if (auto kept = outcome_.keptFloat.find(reader.name); kept != outcome_.keptFloat.end())
        reasons.push_back(describe(reader) + " stays float: " + kept->second);
      else if (isQuantizeLinear(reader))
        reasons.push_back("QuantizeLinear '" + reader.name + "' requantizes it to another scale or zero point");
      else if (!int8FormOf(reader))
        reasons.push_back(describe(reader) + " has no " + kindOf(network, dq) + " kernel");
      else
        reasons.push_back(describe(reader) + " reads it as a float bias or residual");
    }
    return join(reasons);
  }

  std::string whyQuantizeStays(const Network& network, const GraphIndex& index, const Layer& q) const {
    if (auto it = outputWhy_.find(q.name); it != outputWhy_.end()) return it->second;
    QdqParams p;
    if (std::string why = readQdqParams(network, q, p); !why.empty()) return why;
    if (!p.perTensor()) return "per-channel quantization of an activation has no quantized layer kernel";
    const auto producer = index.producer(q.inputs[0]);
    if (!producer) return "it quantizes the graph input '" + q.inputs[0] + "' (no one int8 layer takes it on entry)";
    const Layer& source = index.layer(*producer);
    if (auto kept = outcome_.keptFloat.find(source.name); kept != outcome_.keptFloat.end())
      return describe(source) + " stays float: " + kept->second;
    if (quantized::isQuantizedLayer(source)) return "the result of " + describe(source) + " is also read in float";
    return describe(source) + " has no int8 kernel: its float result is quantized here";
  }

  static std::string join(const std::vector<std::string>& reasons) {
    std::string text;
    for (const auto& r : reasons)
      if (text.find(r) == std::string::npos) text += (text.empty() ? "" : "; ") + r;
    return text;
  }

  QdqFusionOptions options_;
  QdqFusionOutcome& outcome_;
  std::map<std::string, std::string> outputWhy_;  // QuantizeLinear -> why its producer could not take it
};

}  // namespace

std::unique_ptr<Pass> createFuseQdqPass(QdqFusionOptions options, QdqFusionOutcome& outcome) {
  return std::make_unique<FuseQdqPass>(std::move(options), outcome);
}

}  // namespace kiln
