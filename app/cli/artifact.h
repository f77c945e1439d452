#pragma once
// What the commands run: an ONNX model (on the reference executor) or a plan (on its engine).
#include <kiln/compare.h>
#include <kiln/multi_rank.h>
#include <kiln/network.h>
#include <kiln/runtime.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace kiln::cli {

struct Artifact {
  std::string path;
  std::shared_ptr<Network> network;  // the model; for a plan, a network declaring the engine's inputs
  std::shared_ptr<const Engine> engine;  // set for plans (rank 0's for a tensor-parallel split)
  RankEngines ranks;                     // every rank's, for a split run with --ranks
  Runner runner;
  // For a plan: each input's opt shape in the first optimisation profile, the shape random inputs
  // get when --shapes does not give one.
  std::map<std::string, std::vector<int64_t>> defaultShapes;
  bool isPlan() const { return engine != nullptr; }
};

bool isPlanFile(const std::string& path);  // starts with the plan magic
// `ranks` > 1: the plans of a tensor-parallel build (rank_plans.h), run as that many ranks whose
// runner returns rank 0's outputs. A rank plan alone (without --ranks) is refused saying how to run it.
Artifact loadArtifact(const std::string& path, int ranks = 1);

// The tensors of prepared inputs (sequence inputs are refused: plans and comparisons take tensors).
std::map<std::string, HostTensor> tensorInputs(const std::map<std::string, Value>& values);

}  // namespace kiln::cli
