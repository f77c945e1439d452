#pragma once
// What the commands run: an ONNX model (on the reference executor) or a plan (on its engine).
#include <kiln/compare.h>
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
  std::shared_ptr<Engine> engine;    // set for plans
  Runner runner;
  // For a plan: each input's opt shape in the first optimisation profile, the shape random inputs
  // get when --shapes does not give one.
  std::map<std::string, std::vector<int64_t>> defaultShapes;
  bool isPlan() const { return engine != nullptr; }
};

bool isPlanFile(const std::string& path);  // starts with the plan magic
Artifact loadArtifact(const std::string& path);

// The tensors of prepared inputs (sequence inputs are refused: plans and comparisons take tensors).
std::map<std::string, HostTensor> tensorInputs(const std::map<std::string, Value>& values);

}  // namespace kiln::cli
