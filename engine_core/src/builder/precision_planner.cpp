#include "precision_planner.h"

#include "../ops/quantized.h"

namespace kiln {
namespace {

bool hasFloatOutput(const Network& net, const Layer& layer) {
  for (const auto& out : layer.outputs) {
    const Tensor* t = out.empty() ? nullptr : net.findTensor(out);
    if (t && t->kind == ValueKind::kTensor && t->dtype == DataType::kFloat32) return true;
  }
  return false;
}

// Names the first few layers of a list, then how many more.
std::string nameSome(const std::vector<std::string>& names) {
  std::string s;
  for (size_t i = 0; i < names.size() && i < 5; ++i) s += (i ? ", '" : "'") + names[i] + "'";
  if (names.size() > 5) s += " and " + std::to_string(names.size() - 5) + " more";
  return s;
}

}  // namespace

Precision floatPrecisionOf(const BuilderConfig& config, bool onCpu) {
  const Precision p = config.storagePrecision();
  return !onCpu && config.allowTF32 && p == Precision::kFP32 ? Precision::kTF32 : p;
}

std::vector<Precision> planPrecisions(const Network& network, const BuilderConfig& config, const Backend& engine,
                                      const Backend& cpu, std::vector<std::string>& warnings) {
  Precision wanted = config.storagePrecision();
  const bool cpuEngine = engine.kind() == BackendKind::kCpu;
  std::vector<Precision> decisions(network.layers().size(), Precision::kFP32);
  std::map<Precision, std::vector<std::string>> refused;  // precision asked -> layers kept higher
  for (size_t i = 0; i < network.layers().size(); ++i) {
    const Layer& layer = network.layers()[i];
    if (quantized::isQuantizedLayer(layer)) {  // its element type whatever was asked: made so by the builder
      decisions[i] = quantized::precisionOf(layer).value_or(Precision::kINT8);  // the schema checked it
      continue;
    }
    if (!hasFloatOutput(network, layer)) continue;  // integer/bool layers keep their types
    const Backend& backend = engine.supports(layer, Precision::kFP32).supported ? engine : cpu;
    const bool cpuLayer = cpuEngine || &backend == &cpu;
    Precision p = floatPrecisionOf(config, cpuLayer);
    // INT8, FP8 and FP4 are not asked of every layer: the quantization step made the quantized ones
    // (and reports why the others stay).
    if (auto it = config.layerPrecisions.find(layer.name); it != config.layerPrecisions.end()) p = it->second;
    if (cpuLayer && p == Precision::kTF32) p = Precision::kFP32;  // the CPU computes fp32 either way
    if (!backend.supports(layer, p).supported) {
      refused[p].push_back(layer.name);
      p = quantized::isQuantizedPrecision(wanted) ? Precision::kFP32 : wanted;
      if (!backend.supports(layer, p).supported) p = Precision::kFP32;
    }
    decisions[i] = p;
  }
  for (const auto& [precision, layers] : refused)
    warnings.push_back("the " + engine.name() + " backend cannot run " +
                       std::to_string(layers.size()) + " layer(s) in " + toString(precision) + " (" + nameSome(layers) +
                       "); they stay in a higher precision");
  return decisions;
}

}  // namespace kiln
