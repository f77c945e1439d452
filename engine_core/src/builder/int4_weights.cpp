#include "int4_weights.h"

#include <kiln/error.h>

#include "../ops/weight_only.h"
#include "../passes/int4_weights.h"
#include "int8_quantization.h"

#include <algorithm>

namespace kiln {
namespace {

Int4Refusal refusalOf(const Backend& engine) {
  return [&engine](const Layer& weightOnlyLayer) {
    SupportVerdict verdict = engine.supports(weightOnlyLayer, Precision::kFP32);
    return verdict.supported ? std::string() : verdict.why;
  };
}

PassContext passContext(const BuilderConfig& config) {
  PassContext context;
  context.backend = config.backend;
  context.optimizationLevel = config.optimizationLevel;
  return context;
}

}  // namespace

void checkInt4Options(const BuilderConfig& config) {
  if (config.int4Weights && !isValidInt4GroupSize(config.int4GroupSize))
    throw Error(ErrorCode::kInvalidArgument, "the int4 group size (--int4-group-size) is " +
                                                 std::to_string(config.int4GroupSize) + "; use 32, 64 or 128");
}

std::map<std::string, std::string> lowerMatMulNBits(Network& network, const BuilderConfig& config,
                                                    const Backend& engine, BuildReport& report) {
  if (std::none_of(network.layers().begin(), network.layers().end(), weight_only::isMatMulNBits)) return {};
  Int4Outcome outcome;
  PassContext context = passContext(config);
  report.passes.push_back(createLowerMatMulNBitsPass(refusalOf(engine), outcome)->run(network, context));
  network.inferShapes();
  if (!outcome.keptFloat.empty())
    report.warnings.push_back(std::to_string(outcome.keptFloat.size()) +
                              " MatMulNBits layer(s) run as float32 MatMuls of their dequantized weights: " +
                              nameSome(outcome.keptFloat));
  return outcome.keptFloat;
}

std::map<std::string, std::string> quantizeWeightsToInt4(Network& network, const BuilderConfig& config,
                                                         const Backend& engine, BuildReport& report) {
  if (!config.int4Weights) return {};
  checkInt4Options(config);
  if (config.strongTyping) {
    report.warnings.push_back("a strongly typed build keeps the model's types: int4 weights are not used");
    return {};
  }
  Int4Outcome outcome;
  PassContext context = passContext(config);
  report.passes.push_back(
      createQuantizeWeightsInt4Pass({config.int4GroupSize, config.layerPrecisions, refusalOf(engine)}, outcome)
          ->run(network, context));
  network.inferShapes();
  if (outcome.layers == 0)
    report.warnings.push_back("--int4-weights quantized no layer" +
                              (outcome.keptFloat.empty() ? std::string(": the model has no MatMul or Gemm")
                                                         : ": " + nameSome(outcome.keptFloat)));
  else if (!outcome.keptFloat.empty())
    report.warnings.push_back(std::to_string(outcome.keptFloat.size()) +
                              " MatMul/Gemm layer(s) keep float weights: " + nameSome(outcome.keptFloat));
  return outcome.keptFloat;
}

}  // namespace kiln
