#pragma once
// Everything a plan holds, in memory: the optimised network (weights in its constants), the
// per-layer decisions, the profiles and the memory plan. PlanWriter serializes it; PlanReader
// rebuilds it; the runtime executes it.
#include <kiln/build_report.h>
#include <kiln/builder_config.h>
#include <kiln/network.h>
#include <kiln/runtime.h>

#include "../backends/backend.h"

#include <memory>
#include <string>
#include <vector>

namespace kiln {

struct LayerDecision {
  Precision precision = Precision::kFP32;  // activations of this layer's float outputs
  std::string tactic;
};

// Activations share one arena: each tensor gets [offset, offset + bytes) for its lifetime.
struct MemoryAssignment {
  std::string tensor;
  uint64_t offset = 0;
  uint64_t bytes = 0;
};

struct MemoryPlan {
  std::vector<MemoryAssignment> assignments;
  uint64_t arenaBytes = 0;  // peak with sharing
  uint64_t naiveBytes = 0;  // sum without sharing
};

struct EngineDescription {
  PlanInfo info;
  std::shared_ptr<Network> network;
  std::vector<LayerDecision> decisions;  // parallel to network->layers()
  std::vector<OptimizationProfile> profiles;
  MemoryPlan memory;  // for the first profile's max shapes (or the static shapes)
  BuildReport report;
  // Each layer on its plan tactic, parallel to network->layers(); made by Runtime::load, shared by
  // the engine's execution contexts.
  std::vector<std::shared_ptr<const Step>> steps;
};

}  // namespace kiln
