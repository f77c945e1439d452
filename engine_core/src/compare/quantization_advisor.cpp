// The quantization advisor (see kiln/quantization_advisor.h): one trial per candidate with only it
// reduced, per-layer profiles of the all-kept and all-reduced engines, a ranking and a suggestion.
#include "precision_trials.h"

#include <kiln/error.h>
#include <kiln/profile_report.h>
#include <kiln/quantization_advisor.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

namespace kiln {
namespace {

std::map<std::string, double> medianTimes(const ProfileReport& profile) {
  std::map<std::string, double> ms;
  for (const auto& l : profile.layers) ms[l.name] = l.medianMs;
  return ms;
}

// Profiles `engine` on the first input set; nothing when iterations is 0.
std::optional<ProfileReport> profiled(const Engine& engine, const PrecisionDebugOptions& options,
                                      const QuantizationAdvisorOptions& advisor, const PrecisionTrials& trials,
                                      PrecisionDebugObserver* observer, const std::string& what) {
  if (advisor.profileIterations <= 0) return std::nullopt;
  trials.checkCancelled();
  if (observer) observer->progress("profiling the " + what + " engine", 0);
  return profileEngine(engine, options.inputs.front(), advisor.profileIterations);
}

void markParetoFront(std::vector<LayerAdvice>& layers) {
  for (auto& a : layers) {
    a.pareto = true;
    for (const auto& b : layers) {
      const bool noWorse = b.alone.error <= a.alone.error && b.savedMs() >= a.savedMs();
      const bool better = b.alone.error < a.alone.error || b.savedMs() > a.savedMs();
      if (&a != &b && noWorse && better) a.pareto = false;
    }
  }
}

std::set<std::string> worst(const std::vector<LayerAdvice>& ranked, size_t count) {
  std::set<std::string> names;
  for (size_t i = 0; i < count; ++i) names.insert(ranked[i].name);
  return names;
}

}  // namespace

LayerPrecisions QuantizationAdvice::constraints(const BuilderConfig& config) const {
  return withLayersAt(config.layerPrecisions, keep, keepPrecision);
}

QuantizationAdvice adviseQuantization(const Network& network, const PrecisionDebugOptions& options,
                                      const QuantizationAdvisorOptions& advisor, PrecisionDebugObserver* observer,
                                      Logger& logger) {
  PrecisionTrials trials(network, options, observer, logger);
  QuantizationAdvice advice;
  advice.criterion = options.criterion;
  advice.keepPrecision = options.keepPrecision;
  const auto reduced = trials.runReduced();
  const auto& candidates = trials.candidates();
  const std::set<std::string> all(candidates.begin(), candidates.end());
  const auto allKept = trials.run("all kept", "every candidate held back", all);
  advice.reducedScore = reduced.trial.score;
  advice.allKeptScore = allKept.trial.score;

  std::map<std::string, const LayerSummary*> summaries;
  for (const auto& l : reduced.engine->report().layers) summaries[l.name] = &l;
  for (const auto& layer : candidates) {
    std::set<std::string> others = all;
    others.erase(layer);
    LayerAdvice a;
    a.name = layer;
    a.type = summaries.at(layer)->type;
    a.precision = summaries.at(layer)->precision;
    a.alone = trials.run("only", "only '" + layer + "' reduced", others).trial.score;
    advice.layers.push_back(std::move(a));
  }

  const auto keptProfile = profiled(*allKept.engine, options, advisor, trials, observer, "all-kept");
  const auto reducedProfile = profiled(*reduced.engine, options, advisor, trials, observer, "reduced");
  if (keptProfile && reducedProfile) {
    const auto keptMs = medianTimes(*keptProfile), reducedMs = medianTimes(*reducedProfile);
    for (auto& a : advice.layers) {
      if (auto it = keptMs.find(a.name); it != keptMs.end()) a.keptMs = it->second;
      if (auto it = reducedMs.find(a.name); it != reducedMs.end()) a.reducedMs = it->second;
    }
    advice.keptTotalMs = keptProfile->totalMedianMs;
    advice.reducedTotalMs = reducedProfile->totalMedianMs;
  }
  std::stable_sort(advice.layers.begin(), advice.layers.end(), [](const LayerAdvice& x, const LayerAdvice& y) {
    return x.alone.error != y.alone.error ? x.alone.error > y.alone.error : x.savedMs() < y.savedMs();
  });
  markParetoFront(advice.layers);

  // The suggestion: the shortest head of the ranking that, held back, passes.
  size_t keepCount = 0;
  std::shared_ptr<Engine> suggested = reduced.engine;
  advice.suggestedScore = advice.reducedScore;
  advice.suggestionPasses = advice.reducedScore.pass || advice.allKeptScore.pass;
  if (!advice.reducedScore.pass && advice.allKeptScore.pass) {
    size_t failing = 0;
    keepCount = advice.layers.size();
    suggested = allKept.engine;
    advice.suggestedScore = advice.allKeptScore;
    while (keepCount - failing > 1) {
      const size_t middle = (failing + keepCount) / 2;
      auto outcome = trials.run("keep worst", "the " + std::to_string(middle) + " worst-ranked held back",
                                worst(advice.layers, middle));
      if (!outcome.trial.score.pass) {
        failing = middle;
        continue;
      }
      keepCount = middle;
      suggested = outcome.engine;
      advice.suggestedScore = outcome.trial.score;
    }
  }
  for (size_t i = 0; i < keepCount && advice.suggestionPasses; ++i) {
    advice.layers[i].keep = true;
    advice.keep.push_back(advice.layers[i].name);
  }
  if (advice.suggestionPasses) {
    if (suggested == reduced.engine) advice.suggestedTotalMs = advice.reducedTotalMs;
    else if (suggested == allKept.engine) advice.suggestedTotalMs = advice.keptTotalMs;
    else if (auto profile = profiled(*suggested, options, advisor, trials, observer, "suggested"))
      advice.suggestedTotalMs = profile->totalMedianMs;
  }
  advice.trials = trials.trials();
  return advice;
}

}  // namespace kiln
