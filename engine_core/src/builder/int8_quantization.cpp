#include "int8_quantization.h"

#include "../passes/quantize_layers.h"

namespace kiln {
namespace {

// "'a' (why), 'b' (why)" for the first few, then how many more.
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

}  // namespace

std::map<std::string, std::string> quantizeForInt8(const Network& model, Network& network, const BuilderConfig& config,
                                                   const Backend& engine,
                                                   const calibration::CalibrationProgress& progress,
                                                   BuildReport& report) {
  if (config.strongTyping) {
    report.warnings.push_back("a strongly typed build keeps the model's types: int8 is not used");
    return {};
  }
  Int8Survey survey = surveyInt8Layers(network, config.layerPrecisions, [&](const Layer& quantizedLayer) {
    SupportVerdict verdict = engine.supports(quantizedLayer, Precision::kINT8);
    return verdict.supported ? std::string() : verdict.why;
  });
  if (!survey.candidates.empty()) {
    report.calibration = calibration::activationScales(model, network, survey.activations(), config, progress);
    PassContext context;
    context.backend = config.backend;
    context.optimizationLevel = config.optimizationLevel;
    report.passes.push_back(createQuantizeLayersPass(survey, report.calibration.scales)->run(network, context));
    network.inferShapes();
  }
  if (!survey.keptFloat.empty())
    report.warnings.push_back(std::to_string(survey.keptFloat.size()) +
                              " Conv/MatMul/Gemm layer(s) stay in a float precision instead of int8: " +
                              nameSome(survey.keptFloat));
  return survey.keptFloat;
}

}  // namespace kiln
