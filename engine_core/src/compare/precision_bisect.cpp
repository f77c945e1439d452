// Polygraphy's debug precision bisection over the candidates in topological order, then a greedy
// refinement of the prefix it finds (see kiln/precision_bisect.h).
#include "precision_json.h"
#include "precision_trials.h"

#include <kiln/precision_bisect.h>

namespace kiln {
namespace {

std::set<std::string> prefix(const std::vector<std::string>& layers, size_t count) {
  return {layers.begin(), layers.begin() + std::ptrdiff_t(count)};
}

// The shortest prefix of the candidates that passes held back, knowing that none fails and all
// pass (with `score`); `score` becomes the prefix's.
size_t bisectPrefix(PrecisionTrials& trials, AccuracyScore& score) {
  const auto& candidates = trials.candidates();
  size_t failing = 0, passing = candidates.size();
  while (passing - failing > 1) {
    const size_t middle = (failing + passing) / 2;
    const std::string note = "first " + std::to_string(middle) + " of " + std::to_string(candidates.size()) +
                             " (through '" + candidates[middle - 1] + "')";
    const AccuracyScore tried = trials.run("bisect", note, prefix(candidates, middle)).trial.score;
    if (tried.pass) {
      passing = middle;
      score = tried;
    } else {
      failing = middle;
    }
  }
  return passing;
}

// Releases each layer of `kept` in turn, for good where the rest still passes. The prefix's last
// layer is not tried: the prefix one shorter, which holds back every other layer, failed without it.
std::set<std::string> refine(PrecisionTrials& trials, std::set<std::string> kept, const std::string& last,
                             AccuracyScore& score) {
  for (const auto& layer : trials.inOrder(kept)) {
    if (layer == last) continue;
    std::set<std::string> fewer = kept;
    fewer.erase(layer);
    const auto outcome = trials.run("refine", "release '" + layer + "'", fewer);
    if (outcome.trial.score.pass) {
      kept = std::move(fewer);
      score = outcome.trial.score;
    }
  }
  return kept;
}

}  // namespace

LayerPrecisions PrecisionBisectResult::constraints(const BuilderConfig& config) const {
  return withLayersAt(config.layerPrecisions, keep, keepPrecision);
}

std::string PrecisionBisectResult::toJson(int indent) const {
  using nlohmann::json;
  json j;
  j["format"] = "kiln-precision-bisect-1";
  j["keep_precision"] = toString(keepPrecision);
  j["candidates"] = candidates;
  j["reduced_passes"] = reducedPasses;
  j["all_kept_passes"] = allKeptPasses;
  j["keep"] = keep;
  j["reduced_score"] = scoreJson(reducedScore);
  j["final_score"] = scoreJson(finalScore);
  j["trials"] = json::array();
  for (const auto& t : trials) j["trials"].push_back(trialJson(t));
  return j.dump(indent);
}

PrecisionBisectResult bisectPrecision(const Network& network, const PrecisionDebugOptions& options,
                                      const PrecisionBisectOptions& bisect, PrecisionDebugObserver* observer,
                                      Logger& logger) {
  PrecisionTrials trials(network, options, observer, logger);
  PrecisionBisectResult result;
  result.keepPrecision = options.keepPrecision;
  result.reducedScore = result.finalScore = trials.runReduced().trial.score;
  result.candidates = trials.candidates();
  result.reducedPasses = result.allKeptPasses = result.reducedScore.pass;
  if (!result.reducedPasses) {
    const auto& candidates = trials.candidates();
    const auto allKept = trials.run("all kept", "every candidate held back", prefix(candidates, candidates.size()));
    result.allKeptPasses = allKept.trial.score.pass;
    result.finalScore = allKept.trial.score;
    if (result.allKeptPasses) {
      const size_t length = bisectPrefix(trials, result.finalScore);
      std::set<std::string> kept = prefix(candidates, length);
      if (bisect.refine) kept = refine(trials, kept, candidates[length - 1], result.finalScore);
      result.keep = trials.inOrder(kept);
    }
  }
  result.trials = trials.trials();
  return result;
}

}  // namespace kiln
