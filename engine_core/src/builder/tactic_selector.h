#pragma once
// Picks each layer's tactic: the only candidate, a cached time, or by timing every candidate on
// random inputs of the optimisation profile's opt shapes (warm-up, then the median of runs).
#include "../backends/backend.h"
#include "engine_description.h"
#include "timing_cache.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace kiln {

struct TacticChoice {
  std::string tactic;
  bool timed = false;       // measured now
  bool fromCache = false;   // taken from the timing cache
  double milliseconds = 0;  // of the chosen tactic, when known
};

class TacticSelector {
 public:
  TacticSelector(const Backend& backend, TimingCache& cache) : backend_(backend), cache_(cache) {}
  // `optShapes` holds the concrete shape of every tensor known at the opt point.
  TacticChoice select(const Network& network, const Layer& layer, Precision precision,
                      const std::map<std::string, std::vector<int64_t>>& optShapes);

 private:
  double timeTactic(const Network& network, const Layer& layer, const Tactic& tactic,
                    const std::map<std::string, std::vector<int64_t>>& optShapes);
  std::string signature(const Network& network, const Layer& layer, Precision precision,
                        const std::map<std::string, std::vector<int64_t>>& optShapes) const;

  const Backend& backend_;
  TimingCache& cache_;
};

}  // namespace kiln
