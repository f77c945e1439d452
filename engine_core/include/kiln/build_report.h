#pragma once
// What the builder did, as plain values: the passes and what each changed, every engine layer with
// its precision, tactic and the ONNX nodes it came from, and the memory plan's totals.
#include <kiln/builder_config.h>

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

struct PassRecord {
  std::string name;
  int64_t layersBefore = 0;
  int64_t layersAfter = 0;
  std::vector<std::string> changes;  // one line per match: "fused Conv 'c1' + Relu 'r1'"
  double milliseconds = 0;
};

struct TensorSummary {
  std::string name;
  std::string dtype;  // "float32", ...
  std::string shape;  // "[N,3,224,224]"
};

// A tactic the builder considered for a layer, and what became of it.
struct TacticCandidate {
  std::string tactic;
  double milliseconds = -1;  // median time, measured now or from the timing cache; -1: not timed
  std::string status;        // "timed", "cached", "only candidate", "skipped: ...", "failed: ...", "not timed: ..."
  int64_t workspaceBytes = 0;
};

struct LayerSummary {
  std::string name;
  std::string type;       // op type; Kiln's fused layers use the "kiln." prefix (kiln.FusedConv)
  std::string precision;  // "fp32", "fp16", ...
  std::string tactic;     // stable tactic id
  std::vector<TensorSummary> inputs, outputs;
  std::vector<std::string> origins;  // ONNX nodes fused into this layer
  std::vector<TacticCandidate> tacticCandidates;  // every candidate, in the backend's order
  int64_t workspaceBytes = 0;                     // the chosen tactic's, at the max shapes
};

struct BuildReport {
  std::string backend;
  int64_t onnxNodeCount = 0;
  std::vector<PassRecord> passes;
  std::vector<LayerSummary> layers;
  std::vector<std::string> warnings;
  int64_t weightBytes = 0;
  int64_t peakActivationBytes = 0;   // with buffers shared by liveness
  int64_t naiveActivationBytes = 0;  // every activation in its own buffer
  double buildMilliseconds = 0;

  std::string toJson(int indent = 2) const;
  static BuildReport fromJson(const std::string& json);  // throws kiln::Error on malformed input
};

}  // namespace kiln
