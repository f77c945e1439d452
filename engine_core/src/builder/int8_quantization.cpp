#include "int8_quantization.h"

#include "../ops/quantized.h"
#include "../passes/fuse_qdq.h"
#include "../passes/qdq_params.h"
#include "../passes/chain_int8_activations.h"
#include "../passes/quantize_layers.h"

#include <algorithm>
#include <set>

namespace kiln {

std::string nameSome(const std::map<std::string, std::string>& reasons) {
  std::string s;
  size_t shown = 0;
  for (const auto& [layer, why] : reasons) {
    if (shown == 5) break;
    s += (shown++ ? ", '" : "'") + layer + "' (" + why + ")";
  }
  if (reasons.size() > shown) s += " and " + std::to_string(reasons.size() - shown) + " more";
  return s;
}

namespace {

Int8Refusal refusalOf(const Backend& engine) {
  return [&engine](const Layer& quantizedLayer) {
    const Precision precision = quantized::precisionOf(quantizedLayer).value_or(Precision::kINT8);
    SupportVerdict verdict = engine.supports(quantizedLayer, precision);
    return verdict.supported ? std::string() : verdict.why;
  };
}

// The build's quantized precisions, narrowest first.
std::vector<Precision> quantizedPrecisions(const BuilderConfig& config) {
  std::vector<Precision> precisions;
  if (config.allowFP4) precisions.push_back(Precision::kFP4);
  if (config.allowFP8) precisions.push_back(Precision::kFP8);
  if (config.allowINT8) precisions.push_back(Precision::kINT8);
  return precisions;
}

// What became of each Q/DQ node of `model`, from the layers of the fused network that name it
// among their origins and the fusion's reasons.
std::vector<QdqNodeSummary> summarizeQdq(const Network& model, const Network& network, const QdqFusionOutcome& outcome) {
  std::map<std::string, std::vector<std::string>> fusedInto;
  std::map<std::string, std::string> unfused;
  for (const Layer& layer : network.layers())
    for (const auto& origin : layer.origins) {
      if (quantized::isQuantizedLayer(layer)) fusedInto[origin].push_back(layer.name);
      auto why = outcome.unfused.find(layer.name);
      if (why == outcome.unfused.end()) continue;
      std::string& text = unfused[origin];
      if (text.find(why->second) == std::string::npos) text += (text.empty() ? "" : "; ") + why->second;
    }
  std::vector<QdqNodeSummary> nodes;
  for (const Layer& layer : model.layers()) {
    if (!passes::isQuantizeLinear(layer) && !passes::isDequantizeLinear(layer)) continue;
    QdqNodeSummary n{layer.name, layer.opType, fusedInto[layer.name], unfused[layer.name], ""};
    if (n.fusedInto.empty() && n.unfused.empty()) {
      auto how = outcome.removed.find(layer.name);
      n.removed = how != outcome.removed.end() ? how->second : "folded into a constant by the graph passes";
    }
    nodes.push_back(std::move(n));
  }
  return nodes;
}

}  // namespace

bool isExplicitlyQuantized(const Network& model) {
  for (const Layer& layer : model.layers())
    if (passes::isQuantizeLinear(layer) || passes::isDequantizeLinear(layer)) return true;
  return false;
}

std::map<std::string, std::string> fuseExplicitQuantization(const Network& model, Network& network,
                                                            const BuilderConfig& config, const Backend& engine,
                                                            BuildReport& report) {
  QdqFusionOutcome outcome;
  if (config.optimizationLevel == 0) {
    for (const Layer& layer : network.layers())
      if (passes::isQuantizeLinear(layer) || passes::isDequantizeLinear(layer))
        outcome.unfused[layer.name] = "optimisation level 0 runs no graph passes: Q/DQ stay float layers";
  } else {
    PassContext context;
    context.backend = config.backend;
    context.optimizationLevel = config.optimizationLevel;
    context.backendSupports = [&](const Layer& l) { return engine.supports(l, Precision::kFP32).supported; };
    report.passes.push_back(
        createFuseQdqPass({config.layerPrecisions, refusalOf(engine)}, outcome)->run(network, context));
    network.inferShapes();
  }
  report.qdq = summarizeQdq(model, network, outcome);
  std::map<std::string, std::string> stays;
  for (const auto& n : report.qdq)
    if (!n.unfused.empty()) stays[n.node] = n.unfused;
  if (!stays.empty())
    report.warnings.push_back(std::to_string(stays.size()) + " of " + std::to_string(report.qdq.size()) +
                              " Q/DQ nodes stay float QuantizeLinear/DequantizeLinear layers: " + nameSome(stays));
  if (!outcome.keptFloat.empty())
    report.warnings.push_back(std::to_string(outcome.keptFloat.size()) +
                              " Conv/MatMul/Gemm layer(s) of the Q/DQ model stay float: " + nameSome(outcome.keptFloat));
  return outcome.keptFloat;
}

namespace {

// The tensors to calibrate: every candidate's activations, and the residuals its int8 candidates add
// (ChainInt8Activations gives a result that only residuals read its own calibrated scale: a ResNet
// stage's downsampling shortcut). The residuals are calibrated with --int8-residuals off too: two
// more histograms a stage, and one calibration cache then serves builds with and without it.
std::set<std::string> calibratedTensors(const Network& network, const Int8Survey& survey) {
  std::set<std::string> tensors = survey.activations();
  for (const Int8Candidate& c : survey.candidates) {
    const Layer& layer = network.layers()[c.layer];
    if (c.precision != Precision::kINT8 || !layer.hasInput(quantized::kResidualInput)) continue;
    const Tensor* residual = network.findTensor(layer.inputs[quantized::kResidualInput]);
    if (residual && !residual->isConstant() && residual->dtype == DataType::kFloat32) tensors.insert(residual->name);
  }
  return tensors;
}

}  // namespace

bool quantizesLayers(const BuilderConfig& config) {
  if (config.allowINT8 || config.allowFP8 || config.allowFP4) return true;
  for (const auto& [layer, precision] : config.layerPrecisions)
    if (quantized::isQuantizedPrecision(precision)) return true;
  return false;
}

std::map<std::string, std::string> quantizeForInt8(const Network& model, Network& network, const BuilderConfig& config,
                                                   const Backend& engine,
                                                   const calibration::CalibrationProgress& progress,
                                                   BuildReport& report, const QuantizationTiming& timing) {
  if (config.strongTyping) {
    report.warnings.push_back("a strongly typed build keeps the model's types: int8, fp8 and fp4 are not used");
    return {};
  }
  Int8Survey survey = surveyInt8Layers(network, quantizedPrecisions(config), config.layerPrecisions, refusalOf(engine));
  if (std::any_of(survey.candidates.begin(), survey.candidates.end(),
                  [](const Int8Candidate& c) { return c.precision == Precision::kFP4; }))
    report.warnings.push_back("fp4 (NVFP4) runs on Blackwell GPUs only: Kiln emulates it on the CPU, exactly, so "
                              "that its accuracy can be judged here (slower than fp32)");
  if (!survey.candidates.empty()) {
    report.calibration =
        calibration::activationScales(model, network, calibratedTensors(network, survey), config, progress);
    PassContext context;
    context.backend = config.backend;
    context.optimizationLevel = config.optimizationLevel;
    std::vector<PassRecord> records;
    const QuantizeNetwork quantize = [&](Network& target, Int8Survey& candidates) {
      records = {createQuantizeLayersPass(candidates, report.calibration.scales)->run(target, context)};
      target.inferShapes();
      records.push_back(
          createChainInt8ActivationsPass(&report.calibration.scales, config.int8Residuals)->run(target, context));
      target.inferShapes();
    };
    if (config.quantizeWhereFaster)
      quantizeWhereFaster(survey, network, config, timing, quantize);
    else
      quantize(network, survey);
    for (PassRecord& record : records) report.passes.push_back(std::move(record));
  }
  if (!survey.keptFloat.empty())
    report.warnings.push_back(std::to_string(survey.keptFloat.size()) +
                              " Conv/MatMul/Gemm layer(s) stay in a float precision instead of a quantized one: " +
                              nameSome(survey.keptFloat));
  return survey.keptFloat;
}

void giveQuantizedLayersFloatStorage(Network& network, const BuilderConfig& config,
                                     const std::function<const Backend&(size_t)>& backendOf) {
  const Precision storage = config.storagePrecision();
  if (storage != Precision::kFP16 && storage != Precision::kBF16) return;
  for (size_t i = 0; i < network.layers().size(); ++i) {
    Layer& layer = network.layers()[i];
    if (!quantized::isQuantizedLayer(layer) || backendOf(i).convertsFloatStorage()) continue;
    layer.attributes[quantized::kFloatStorage] = std::string(storage == Precision::kFP16 ? "fp16" : "bf16");
  }
}

}  // namespace kiln
