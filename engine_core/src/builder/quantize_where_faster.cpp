#include "quantize_where_faster.h"

#include "../ops/quantized.h"
#include "profile_validation.h"

#include <cstdio>
#include <map>

namespace kiln {
namespace {

std::string milliseconds(double ms) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.3f ms", ms);
  return text;
}

// The first profile's opt and max shapes of every tensor of `network`.
struct ProfileTensors {
  TensorShapes opt, max;
};
ProfileTensors shapesOf(const Network& network, const BuilderConfig& config) {
  return {concreteShapes(network, profileShapes(network, config, 0, ProfilePoint::kOpt)),
          concreteShapes(network, profileShapes(network, config, 0, ProfilePoint::kMax))};
}

}  // namespace

void quantizeWhereFaster(Int8Survey& survey, Network& network, const BuilderConfig& config,
                         const QuantizationTiming& timing, const QuantizeNetwork& quantize) {
  if (survey.candidates.empty() || timing.search.level < 2) {  // untimed builds cannot compare
    quantize(network, survey);
    return;
  }
  TacticSelector selector(timing.engine, timing.cache, config.workspaceBytes, config.disabledTacticSources,
                          timing.search);
  selector.setTimeOneCandidate(true);
  std::string current;  // the candidate being timed, for the listener
  if (timing.listener) selector.setListener([&](const std::string& tactic) { timing.listener(current, tactic); });
  const ProfileTensors floatShapes = shapesOf(network, config);
  // A layer kept float makes its quantized readers quantize on entry instead of reading int8, so the
  // survivors are timed again in the network without it, until no layer changes (a layer never
  // comes back, so this ends); the last trial is then the result.
  for (;;) {
    bool changed = false;
    Network quantizedNetwork = network;
    Int8Survey trial = survey;
    quantize(quantizedNetwork, trial);
    std::map<std::string, const Layer*> quantizedLayers;
    for (const Layer& layer : quantizedNetwork.layers())
      if (quantized::isQuantizedLayer(layer)) quantizedLayers[layer.name] = &layer;
    const ProfileTensors quantizedShapes = shapesOf(quantizedNetwork, config);
    std::vector<Int8Candidate> kept;
    for (const Int8Candidate& candidate : survey.candidates) {
      const Layer& original = network.layers()[candidate.layer];
      auto quantizedLayer = quantizedLayers.find(original.name);
      // Pinned by the user, or left float by the pass (which says why): nothing to compare.
      if (config.layerPrecisions.count(original.name) || quantizedLayer == quantizedLayers.end()) {
        kept.push_back(candidate);
        continue;
      }
      current = original.name;
      const TacticChoice asFloat =
          selector.select(network, original, timing.floatPrecision, floatShapes.opt, floatShapes.max);
      const TacticChoice asQuantized = selector.select(quantizedNetwork, *quantizedLayer->second, candidate.precision,
                                                       quantizedShapes.opt, quantizedShapes.max);
      if (asFloat.milliseconds <= 0 || asQuantized.milliseconds <= 0 ||
          asQuantized.milliseconds < asFloat.milliseconds) {
        kept.push_back(candidate);
        continue;
      }
      survey.keptFloat[original.name] = std::string("faster in ") + toString(timing.floatPrecision) + " (" +
                                        milliseconds(asFloat.milliseconds) + " against " +
                                        toString(candidate.precision) + " " + milliseconds(asQuantized.milliseconds) +
                                        ", --quantize-where-faster)";
      changed = true;
    }
    if (!changed) {
      network = std::move(quantizedNetwork);
      survey = std::move(trial);
      return;
    }
    survey.candidates = std::move(kept);
  }
}

}  // namespace kiln
