#pragma once
// Per-layer timings of an engine, measured over many runs: what `kiln profile --export-profile`
// writes and Kiln Studio's timings view reads (possibly made on another machine).
#include <kiln/runtime.h>

#include <string>
#include <vector>

namespace kiln {

struct LayerTiming {
  std::string name, type, tactic, precision;
  double medianMs = 0, meanMs = 0, minMs = 0;
  double percent = 0;  // of the sum of medians
};

struct ProfileReport {
  PlanInfo plan;
  std::string inputShapes;  // "x:1x3x224x224,..."
  int iterations = 0;
  double totalMedianMs = 0;  // median end-to-end time of one run
  std::vector<LayerTiming> layers;

  std::string toJson(int indent = 2) const;                // format "kiln-profile-1"
  static ProfileReport fromJson(const std::string& json);  // throws kiln::Error naming what is wrong
};

// Runs `engine` `iterations` times (after `warmup` runs) on `inputs` and gathers per-layer medians.
ProfileReport profileEngine(const Engine& engine, const std::map<std::string, HostTensor>& inputs, int iterations = 20,
                            int warmup = 3);

}  // namespace kiln
